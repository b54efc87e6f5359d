package export

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
)

// WriteEvents writes the events of each session in ids to w as JSON Lines,
// one event per line in the form corpsim log prints, the sessions one after
// the other. A line's "session" is the session it was exported as; an event
// a fork shares with its parent (or a reset with the session it reset) also
// says where it is stored, as "stored_in". It returns the number of lines
// written.
func WriteEvents(ctx context.Context, w io.Writer, log Log, ids []string) (int, error) {
	bw := bufio.NewWriter(w)
	n := 0
	for _, id := range ids {
		if _, err := log.Session(ctx, id); err != nil {
			return n, err
		}
		// Each event is borrowed (Scan): written out and dropped.
		err := log.Scan(ctx, id, 1, func(borrowed *events.Event) error {
			ev := *borrowed
			stored := ev.Session
			ev.Session = id
			if ev.Type == payload.EvSessionStarted {
				var err error
				if ev.Payload, err = withholdDrawKey(ev.Payload); err != nil {
					return &events.CorruptError{Session: id, Seq: ev.Seq, Err: err}
				}
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			if stored != id {
				s, _ := json.Marshal(stored)
				b = append(append(append(b[:len(b)-1], `,"stored_in":`...), s...), '}')
			}
			b = append(b, '\n')
			if _, err := bw.Write(b); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// WriteLines writes each of vs to w as one line of JSON.
func WriteLines[T any](w io.Writer, vs []T) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// withholdDrawKey is a session.started payload without its draw key (a
// session keyed by an operator's secret), which says so instead
// ("draw_key_withheld": true): training data is shared, and the key
// would give away the hidden truth of every session of that secret and
// seed. Without a key the payload is returned as it is.
func withholdDrawKey(b []byte) ([]byte, error) {
	var p payload.SessionStarted
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if len(p.DrawKey) == 0 {
		return b, nil
	}
	p.DrawKey = nil
	out, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append(out[:len(out)-1], `,"draw_key_withheld":true}`...), nil
}
