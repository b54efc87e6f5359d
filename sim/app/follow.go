package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
)

// LogOptions describe what PrintLog prints.
type LogOptions struct {
	Data    string // data folder of the log
	Session string
	From    uint64   // first sequence number; 0 means 1
	Types   []string // only events of these types (none: all)
	Follow  bool     // tail a running session through NATS until it ends
	NATS    string   // NATS URL of the running corpsim ("": DATA/bus.url)
	Token   string   // operator token of the running corpsim ("": DATA/operator.token)
	Logger  hclog.Logger
}

// PrintLog writes a session's events to w as JSON Lines, from the stored
// log; with Follow, from the corpsim running it (through its bus) until
// session.ended, and from the data folder once that process is gone.
func PrintLog(ctx context.Context, o LogOptions, out io.Writer) error {
	var types map[string]bool
	for _, t := range o.Types {
		if !payload.KnownType(t) {
			return Usagef("--type %q is not an event type; the types are %s", t, strings.Join(payload.Types, ", "))
		}
		if types == nil {
			types = map[string]bool{}
		}
		types[t] = true
	}
	w := bufio.NewWriter(out)
	defer w.Flush()
	p := &printer{w: w, types: types}
	from := max(o.From, 1)
	natsURL := o.NATS
	if natsURL == "" {
		log, _, err := OpenSession(ctx, o.Data, o.Session, o.Logger)
		if err == nil {
			defer log.Close()
			// Borrowed events (Scan): printed and dropped.
			return log.Scan(ctx, o.Session, from, func(ev *events.Event) error { return p.print(*ev) })
		}
		if !o.Follow {
			return err
		}
		if natsURL = ReadBusURL(o.Data); natsURL == "" {
			return err
		}
	}
	if !o.Follow {
		return Usagef("--nats is for --follow")
	}
	return o.follow(ctx, natsURL, from, p)
}

type printer struct {
	w     *bufio.Writer
	types map[string]bool // nil: every type
	last  uint64
}

func (p *printer) print(ev events.Event) error {
	if ev.Seq <= p.last {
		return nil
	}
	p.last = ev.Seq
	if p.types != nil && !p.types[ev.Type] {
		return nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	p.w.Write(b)
	return p.w.WriteByte('\n')
}

// follow prints a running session's events: the stored history over a
// request/reply, then the live feed, without gaps or repeats, until
// session.ended. Events the feed dropped while this process was busy are
// fetched from the history again. Once the running corpsim is gone (its
// session ended before this caught up, or it died), the rest comes from its
// data folder.
func (o LogOptions) follow(ctx context.Context, url string, from uint64, p *printer) error {
	data, session := o.Data, o.Session
	p.last = from - 1
	closed := make(chan struct{})
	logger := orNull(o.Logger)
	opts := []nats.Option{nats.Name("corpsim log --follow"), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		// Events the feed drops while the printer is busy (a slow
		// consumer) are asked for again: nothing to tell the user.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				logger.Debug("the event feed dropped events; they are asked for again", "error", err)
				return
			}
			logger.Warn("the event feed", "error", err)
		})}
	if tok := o.Token; tok != "" {
		opts = append(opts, nats.Token(tok))
	} else if tok := ReadOperatorToken(data); tok != "" {
		opts = append(opts, nats.Token(tok))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return o.followStored(ctx, p, fmt.Errorf("connect to %s: %w", url, err))
	}
	defer nc.Close()
	live := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe(wire.EventsSubject(session), live)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	ended, err := history(nc, session, p)
	for err == nil && !ended {
		if len(live) == 0 {
			p.w.Flush()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			err = nats.ErrConnectionClosed
		case msg := <-live:
			var ev events.Event
			if err := json.Unmarshal(msg.Data, &ev); err != nil {
				return fmt.Errorf("event feed: %w", err)
			}
			if ev.Seq > p.last+1 { // the feed dropped events: fill the gap
				if ended, err = history(nc, session, p); err != nil || ended {
					break
				}
				if ev.Seq > p.last+1 {
					return fmt.Errorf("session %s: event %d was published, but the history ends at %d", session, ev.Seq, p.last)
				}
			}
			if err := p.print(ev); err != nil {
				return err
			}
			ended = ev.Type == payload.EvSessionEnded
		}
	}
	if err == nil {
		return nil
	}
	return o.followStored(ctx, p, fmt.Errorf("session %s is not running at %s: %w", session, url, err))
}

// history prints the stored events after p.last that the running corpsim
// serves, page by page, until it has printed what was stored when asked.
func history(nc *nats.Conn, session string, p *printer) (ended bool, err error) {
	for {
		req, _ := json.Marshal(wire.HistoryRequest{From: p.last + 1})
		msg, err := nc.Request(wire.HistorySubject(session), req, 10*time.Second)
		if err != nil {
			return ended, err
		}
		var resp wire.HistoryResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return ended, err
		}
		if resp.Error != "" {
			return ended, fmt.Errorf("history of %s: %s", session, resp.Error)
		}
		for _, ev := range resp.Events {
			if err := p.print(ev); err != nil {
				return ended, err
			}
			ended = ended || ev.Type == payload.EvSessionEnded
		}
		if ended || len(resp.Events) == 0 || p.last >= resp.Last {
			return ended, nil
		}
	}
}

// followStored prints the rest of a followed session from the data folder,
// once the corpsim that ran it is gone (cause says how that showed); it
// waits a few seconds for that process to let go of the folder.
func (o LogOptions) followStored(ctx context.Context, p *printer, cause error) error {
	data, session := o.Data, o.Session
	p.w.Flush()
	var log events.Log
	for deadline := time.Now().Add(10 * time.Second); ; {
		l, _, err := OpenSession(ctx, data, session, o.Logger)
		if err == nil {
			log = l
			break
		}
		var inUse *InUseError
		if !errors.As(err, &inUse) || time.Now().After(deadline) {
			return fmt.Errorf("%w; reading the data folder instead: %w", cause, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer log.Close()
	for ev, err := range log.Read(ctx, session, p.last+1) {
		if err != nil {
			return err
		}
		if err := p.print(ev); err != nil {
			return err
		}
		if ev.Type == payload.EvSessionEnded {
			return nil
		}
	}
	return fmt.Errorf("%w, and its stored log stops at seq %d without session.ended (resume continues it)", cause, p.last)
}
