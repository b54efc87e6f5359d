package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A session created keyed (with wait) on worker a and started by worker b
// after a dies draws with a's key, whatever b's secret (none, another,
// the same): the owner record carries the key (red team: b used its own).
func TestAdoptedUnstartedSessionKeepsItsKey(t *testing.T) {
	for _, bSecret := range []string{"", "other", "s3cret"} {
		t.Run("b="+bSecret, func(t *testing.T) {
			node := mustNode(t)
			wc := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Second / 2}
			a, _ := mustWorkerWith(t, node, "a", wc, Config{Logger: testLogger(t), MaxSessions: 100, TurnTimeout: 20 * time.Second, Secret: []byte("s3cret")})
			var bs []byte
			if bSecret != "" {
				bs = []byte(bSecret)
			}
			mustWorkerWith(t, node, "b", wc, Config{Logger: testLogger(t), MaxSessions: 100, TurnTimeout: 20 * time.Second, Secret: bs})
			op, err := client.Dial(node.ClientURL(), "")
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			js, _ := jetstream.New(op.Conn())
			var id string
			for i := 0; id == ""; i++ {
				r, err := op.Create(ctx, wire.CreateRequest{World: "meetings", Seed: 1, Agents: "greedy", Wait: true})
				if err != nil {
					t.Fatal(err)
				}
				if leaseOwner(t, js, r.Session) == "a" {
					id = r.Session
				}
			}
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			_ = a.Shutdown(sctx)
			scancel()
			for leaseOwnerOrNone(js, id) != "b" {
				if ctx.Err() != nil {
					t.Fatal("b did not adopt")
				}
				time.Sleep(20 * time.Millisecond)
			}
			for {
				if _, err = op.Control(ctx, id, wire.OpStart); err == nil || !errors.Is(err, nats.ErrNoResponders) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			waitMeta(t, ctx, js, id, events.StatusFinished)
			l := memlog.New()
			if _, err := jsreplica.Restore(ctx, js, id, l); err != nil {
				t.Fatal(err)
			}
			var first events.Event
			_ = l.Scan(ctx, id, 1, func(ev *events.Event) error { first = *ev; return errStopScan })
			var p payload.SessionStarted
			_ = json.Unmarshal(first.Payload, &p)
			want := payload.NewDrawKey([]byte("s3cret"), 1)
			if p.Format != payload.LogFormat || !bytes.Equal(p.DrawKey, want) {
				t.Fatalf("b (secret %q) started it in format %d with key %x; want format %d with a's key %x", bSecret, p.Format, p.DrawKey, payload.LogFormat, want)
			}
		})
	}
}

// errStopScan stops a Scan.
var errStopScan = errors.New("stop")
