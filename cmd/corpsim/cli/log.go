package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/proto"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
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
					for ev, err := range log.Read(ctx, args[0], max(from, 1)) {
						if err != nil {
							return err
						}
						if err := p.print(ev); err != nil {
							return err
						}
					}
					return nil
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
			return a.follow(ctx, natsURL, args[0], max(from, 1), p)
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.Uint64Var(&from, "from", 1, "first sequence number to print")
	f.StringVar(&typ, "type", "", "print only events of this type")
	f.BoolVar(&follow, "follow", false, "tail a running session through NATS until it ends")
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
// session.ended.
func (a *app) follow(ctx context.Context, url, session string, from uint64, p *printer) error {
	nc, err := nats.Connect(url, nats.Name("corpsim log --follow"))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer nc.Close()
	live := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe(proto.EventsSubject(session), live)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	p.last = from - 1
	ended := false
	for {
		req, _ := json.Marshal(proto.HistoryRequest{From: p.last + 1})
		msg, err := nc.Request(proto.HistorySubject(session), req, 10*time.Second)
		if err != nil {
			return fmt.Errorf("session %s is not running at %s: %w", session, url, err)
		}
		var resp proto.HistoryResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return err
		}
		if resp.Error != "" {
			return fmt.Errorf("history of %s: %s", session, resp.Error)
		}
		for _, ev := range resp.Events {
			if err := p.print(ev); err != nil {
				return err
			}
			ended = ended || ev.Type == org.EvSessionEnded
		}
		if len(resp.Events) == 0 || p.last >= resp.Last {
			break
		}
	}
	p.w.Flush()
	for !ended {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg := <-live:
			var ev events.Event
			if err := json.Unmarshal(msg.Data, &ev); err != nil {
				return fmt.Errorf("event feed: %w", err)
			}
			if ev.Seq > p.last+1 {
				return fmt.Errorf("event feed skipped from seq %d to %d", p.last, ev.Seq)
			}
			if err := p.print(ev); err != nil {
				return err
			}
			ended = ev.Type == org.EvSessionEnded
			if len(live) == 0 {
				p.w.Flush()
			}
		}
	}
	return nil
}
