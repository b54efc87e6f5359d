package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/proto"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
)

func (a *app) logCmd() *cobra.Command {
	var data, typ, natsURL string
	var from uint64
	var follow bool
	c := &cobra.Command{
		Use:   "log SESSION",
		Short: "Print a session's events as JSON Lines",
		Long: `Print a session's events as JSON Lines, from --from on, optionally only of one --type.
With --follow, tail a running session through NATS until it ends: the running corpsim
must have been started with --listen (its address is in DATA/bus.url), or give --nats URL.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			w := bufio.NewWriter(a.stdout)
			defer w.Flush()
			p := &printer{w: w, typ: typ}
			if natsURL == "" {
				log, _, err := a.openSession(ctx, data, args[0])
				if err == nil {
					defer log.Close()
					// Borrowed events (Scan): printed and dropped.
					return log.Scan(ctx, args[0], max(from, 1), func(ev *events.Event) error { return p.print(*ev) })
				}
				if !follow {
					return err
				}
				if natsURL = readBusURL(data); natsURL == "" {
					return err
				}
			}
			if !follow {
				return usagef("--nats is for --follow")
			}
			return a.follow(ctx, natsURL, data, args[0], max(from, 1), p)
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.Uint64Var(&from, "from", 1, "first sequence number to print")
	f.StringVar(&typ, "type", "", "print only events of this type")
	f.BoolVar(&follow, "follow", false, "tail a running session through NATS until it ends")
	f.StringVar(&a.token, "token", "", "operator token of the running corpsim (default: DATA/operator.token)")
	f.StringVar(&natsURL, "nats", "", "NATS URL of the running corpsim (default: DATA/bus.url)")
	return c
}

type printer struct {
	w    *bufio.Writer
	typ  string
	last uint64
}

func (p *printer) print(ev events.Event) error {
	if ev.Seq <= p.last {
		return nil
	}
	p.last = ev.Seq
	if p.typ != "" && ev.Type != p.typ {
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
func (a *app) follow(ctx context.Context, url, data, session string, from uint64, p *printer) error {
	p.last = from - 1
	closed := make(chan struct{})
	opts := []nats.Option{nats.Name("corpsim log --follow"), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) })}
	if tok := a.token; tok != "" {
		opts = append(opts, nats.Token(tok))
	} else if tok := readOperatorToken(data); tok != "" {
		opts = append(opts, nats.Token(tok))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return a.followStored(ctx, data, session, p, fmt.Errorf("connect to %s: %w", url, err))
	}
	defer nc.Close()
	live := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe(proto.EventsSubject(session), live)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	ended, err := a.history(nc, session, p)
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
				if ended, err = a.history(nc, session, p); err != nil || ended {
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
	return a.followStored(ctx, data, session, p, fmt.Errorf("session %s is not running at %s: %w", session, url, err))
}

// history prints the stored events after p.last that the running corpsim
// serves, page by page, until it has printed what was stored when asked.
func (a *app) history(nc *nats.Conn, session string, p *printer) (ended bool, err error) {
	for {
		req, _ := json.Marshal(proto.HistoryRequest{From: p.last + 1})
		msg, err := nc.Request(proto.HistorySubject(session), req, 10*time.Second)
		if err != nil {
			return ended, err
		}
		var resp proto.HistoryResponse
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
func (a *app) followStored(ctx context.Context, data, session string, p *printer, cause error) error {
	p.w.Flush()
	var log events.Log
	for deadline := time.Now().Add(10 * time.Second); ; {
		l, _, err := a.openSession(ctx, data, session)
		if err == nil {
			log = l
			break
		}
		var inUse *inUseError
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
