package jsreplica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents/natsserver"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// synthetic makes n events of session from seq 1, with payloads of about
// the size the engine writes.
func synthetic(n int) []events.Event {
	payload := json.RawMessage(`{"task":"t-0042","member":"alice","queue":"support","effort_ms":7200000,"note":"a payload of about the size the engine writes for a task event, give or take"}`)
	out := make([]events.Event, n)
	for i := range out {
		seq := uint64(i + 1)
		out[i] = events.Event{ID: events.NewID([32]byte{1}, 1_700_000_000_000, int64(seq)*1000, seq), Seq: seq,
			Time: int64(seq) * 1000, Type: "task.progressed", Actor: "alice", Cause: seq - 1, Payload: payload}
	}
	return out
}

// BenchmarkReplicate measures events/s replicated to a single-server
// file-backed stream, by batch size, against a baseline that publishes the
// same messages asynchronously with no message ID, no expectation and no
// tip bookkeeping.
func BenchmarkReplicate(b *testing.B) {
	_, nc := mustServer(b)
	benchReplicate(b, nc, 1)
}

// BenchmarkReplicateR3 is BenchmarkReplicate on an embedded three-node
// cluster on loopback, with a stream of three replicas.
func BenchmarkReplicateR3(b *testing.B) {
	nodes, err := natsserver.StartCluster(b.TempDir(), 3, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	}()
	nc, err := nodes[0].Connect("bench")
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	benchReplicate(b, nc, 3)
}

func benchReplicate(b *testing.B, nc *nats.Conn, replicas int) {
	ctx := context.Background()
	for _, size := range []int{1, 16, 256, 1024} {
		for _, mode := range []string{"baseline", "batch", "strict"} {
			if mode == "strict" && size > 256 {
				continue
			}
			b.Run(fmt.Sprintf("%s/batch=%d", mode, size), func(b *testing.B) {
				r := mustReplica(b, nc, jsreplica.Config{Batch: mode == "batch", Replicas: replicas})
				js := r.JetStream()
				evs := synthetic(b.N)
				session := fmt.Sprintf("bench-%s-%d-%d", mode, size, b.N)
				b.ResetTimer()
				for i := 0; i < len(evs); i += size {
					batch := evs[i:min(i+size, len(evs))]
					if mode != "baseline" {
						if err := r.Replicate(ctx, session, batch); err != nil {
							b.Fatal(err)
						}
						continue
					}
					futs := make([]jetstream.PubAckFuture, len(batch))
					for j := range batch {
						f, err := js.PublishAsync(jsreplica.Subject(session), events.Encode(&batch[j]))
						if err != nil {
							b.Fatal(err)
						}
						futs[j] = f
					}
					for _, f := range futs {
						select {
						case <-f.Ok():
						case err := <-f.Err():
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkRestore measures events/s copied from the stream into a memlog.
func BenchmarkRestore(b *testing.B) {
	ctx := context.Background()
	_, nc := mustServer(b)
	r := mustReplica(b, nc, jsreplica.Config{})
	const n = 20_000
	evs := synthetic(n)
	for i := 0; i < n; i += 1024 {
		if err := r.Replicate(ctx, "r", evs[i:min(i+1024, n)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.PutSession(ctx, events.SessionMeta{ID: "r", Status: events.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	b.Run("memlog", func(b *testing.B) {
		for range b.N {
			if _, err := jsreplica.Restore(ctx, r.JetStream(), "r", memlog.New()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	})
	// Into a synced Pebble log, as a worker adopting a session restores.
	b.Run("pebble", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			l, err := pebblelog.Open(b.TempDir(), pebblelog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := jsreplica.Restore(ctx, r.JetStream(), "r", l); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			l.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
