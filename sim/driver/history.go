package driver

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
)

// serveHistory answers history requests for a running session from its log,
// so a follower in another process (which cannot open the locked store) can
// catch up before it tails the live feed.
//
// The live feed is best effort for watchers: the driver publishes each
// durable batch without waiting for anyone, so a watcher that cannot keep up
// never slows a session down. NATS tells it instead: its client drops what
// exceeds its pending limits and reports nats.ErrSlowConsumer to its
// asynchronous error handler, and a connection that stops reading is
// disconnected by the server (write deadline, max pending) with the reason
// in the server's log. Either way the watcher knows, and reads what it
// missed here (tests/slowconsumer_test.go).
//
// It serves only what has landed (see the driver's loop: durable, and
// replicated when there is a replica), up to the seq in landed: an event
// stored locally but not yet replicated is not shown to anyone. A batch
// lands before it is published, so every event the feed carries, and may
// drop, is within a history read made after the drop.
func (d *Driver) serveHistory(session string, landed *atomic.Uint64) (*nats.Subscription, error) {
	return d.cfg.Conn.Subscribe(wire.HistorySubject(session), func(msg *nats.Msg) {
		var req wire.HistoryRequest
		_ = json.Unmarshal(msg.Data, &req)
		RespondHistory(msg, HistoryPage(context.Background(), d.cfg.Log, session, req, landed.Load()))
	})
}

// HistoryPage reads a page of session's stored events for req from log, up
// to seq upTo (what may be shown: see serveHistory) and at most
// wire.MaxHistoryPage of them. A failure is the response's Error.
func HistoryPage(ctx context.Context, log events.Log, session string, req wire.HistoryRequest, upTo uint64) wire.HistoryResponse {
	limit := req.Limit
	if limit <= 0 || limit > wire.MaxHistoryPage {
		limit = wire.MaxHistoryPage
	}
	resp := wire.HistoryResponse{}
	last, err := log.LastSeq(ctx, session)
	if err != nil {
		resp.Error, resp.NoSession = err.Error(), errors.Is(err, events.ErrNoSession)
		return resp
	}
	resp.Last = min(last, upTo)
	for ev, err := range log.Read(ctx, session, max(req.From, 1)) {
		if err != nil {
			resp.Error = err.Error()
			break
		}
		if len(resp.Events) == limit || ev.Seq > resp.Last {
			break
		}
		resp.Events = append(resp.Events, ev)
	}
	return resp
}

// RespondHistory answers msg with resp.
func RespondHistory(msg *nats.Msg, resp wire.HistoryResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(wire.HistoryResponse{Error: err.Error()})
	}
	_ = msg.Respond(b)
}
