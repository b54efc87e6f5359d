package jsreplica_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustServer starts a single embedded JetStream server and connects to it.
func mustServer(tb testing.TB) (*natsserver.Node, *nats.Conn) {
	tb.Helper()
	n, err := natsserver.StartNode(natsserver.NodeOptions{Name: "solo", StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Shutdown)
	nc, err := n.Connect("test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return n, nc
}

func mustReplica(tb testing.TB, nc *nats.Conn, c jsreplica.Config) *jsreplica.Replica {
	tb.Helper()
	if c.Logger == nil {
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: tlog{tb}, Level: hclog.Warn})
	}
	r, err := jsreplica.New(context.Background(), nc, c)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

type tlog struct{ tb testing.TB }

func (w tlog) Write(p []byte) (int, error) { w.tb.Log(string(bytes.TrimSpace(p))); return len(p), nil }

// session runs the startup world with greedy agents in every seat, like
// the driver does but without I/O, and returns its events in the batches
// the driver would append (one per Ready).
func session(tb testing.TB, id string, seed uint64) (events.SessionMeta, [][]events.Event) {
	tb.Helper()
	src, err := worlds.Source("startup")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := worlds.Load("startup.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: id})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	batches := simtest.Batches(tb, e)
	meta := events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: seed, Status: events.StatusFinished,
		Created: "2026-01-01T00:00:00Z", Agents: map[string]string{"bob": "greedy"}, StateHash: e.EndStateHash()}
	meta.LastSeq = batches[len(batches)-1][len(batches[len(batches)-1])-1].Seq
	return meta, batches
}

func flatten(batches [][]events.Event) []events.Event {
	var out []events.Event
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

func mustRead(tb testing.TB, l events.Log, session string) []events.Event {
	tb.Helper()
	var out []events.Event
	for ev, err := range l.Read(context.Background(), session, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func equalEvents(tb testing.TB, got, want []events.Event) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(events.Encode(&got[i]), events.Encode(&want[i])) {
			tb.Fatalf("event %d: got %s %s, want %s %s", i+1, got[i].Type, got[i].Payload, want[i].Type, want[i].Payload)
		}
	}
}

func subjectMsgs(tb testing.TB, js jetstream.JetStream, session string) uint64 {
	tb.Helper()
	st, err := js.Stream(context.Background(), jsreplica.Stream)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(jsreplica.Subject(session)))
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.Subjects[jsreplica.Subject(session)]
}

func mustPebble(tb testing.TB, dir string) *pebblelog.Log {
	tb.Helper()
	l, err := pebblelog.Open(dir, pebblelog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func TestReplicateAndRestore(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	meta, batches := session(t, "s1", 5)
	want := flatten(batches)
	for _, strict := range []bool{false, true} {
		name := map[bool]string{false: "batch", true: "strict"}[strict]
		t.Run(name, func(t *testing.T) {
			r := mustReplica(t, nc, jsreplica.Config{Batch: !strict})
			id := meta.ID + "-" + name
			m := meta
			m.ID = id
			start := time.Now()
			for _, b := range batches {
				if err := r.Replicate(ctx, id, b); err != nil {
					t.Fatal(err)
				}
			}
			d := time.Since(start)
			t.Logf("%s: replicated %d events in %d batches in %v: %.0f events/s", name, len(want), len(batches), d, float64(len(want))/d.Seconds())
			if err := r.PutSession(ctx, m); err != nil {
				t.Fatal(err)
			}
			if got := subjectMsgs(t, r.JetStream(), id); got != uint64(len(want)) {
				t.Fatalf("got %d messages, want %d", got, len(want))
			}
			dst := mustPebble(t, filepath.Join(t.TempDir(), "restored"))
			start = time.Now()
			last, err := jsreplica.Restore(ctx, r.JetStream(), id, dst)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: restored %d events in %v", name, last, time.Since(start))
			if last != uint64(len(want)) {
				t.Fatalf("got last %d, want %d", last, len(want))
			}
			equalEvents(t, mustRead(t, dst, id), want)
			got, err := dst.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != events.StatusFinished || got.StateHash != m.StateHash || got.LastSeq != last || got.Agents["bob"] != "greedy" {
				t.Fatalf("got metadata %+v, want %+v", got, m)
			}
		})
	}
}

func TestReplicateTwiceStoresOnce(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	_, batches := session(t, "s2", 7)
	want := flatten(batches)
	r := mustReplica(t, nc, jsreplica.Config{})
	half := len(batches) / 2
	tests := []struct {
		name  string
		again func(t *testing.T)
	}{
		{"same replica, every batch again", func(t *testing.T) {
			for _, b := range batches[:half] {
				if err := r.Replicate(ctx, "s2", b); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"a new replica (a restart), the last batch again", func(t *testing.T) {
			r2 := mustReplica(t, nc, jsreplica.Config{})
			if err := r2.Replicate(ctx, "s2", batches[half-1]); err != nil {
				t.Fatal(err)
			}
		}},
		{"a batch overlapping the stream's end", func(t *testing.T) {
			r.Forget("s2")
			joined := append(append([]events.Event{}, batches[half-1]...), batches[half]...)
			if err := r.Replicate(ctx, "s2", joined); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, b := range batches[:half] {
		if err := r.Replicate(ctx, "s2", b); err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(len(flatten(batches[:half])))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.again(t)
			if tt.name == "a batch overlapping the stream's end" {
				n += uint64(len(batches[half]))
			}
			if got := subjectMsgs(t, r.JetStream(), "s2"); got != n {
				t.Fatalf("got %d messages, want %d", got, n)
			}
		})
	}
	for _, b := range batches[half+1:] {
		if err := r.Replicate(ctx, "s2", b); err != nil {
			t.Fatal(err)
		}
	}
	if got := subjectMsgs(t, r.JetStream(), "s2"); got != uint64(len(want)) {
		t.Fatalf("got %d messages, want %d", got, len(want))
	}
	dst := memlog.New()
	if _, err := jsreplica.Restore(ctx, r.JetStream(), "s2", dst); err != nil {
		t.Fatal(err)
	}
	equalEvents(t, mustRead(t, dst, "s2"), want)
}

// A lost acknowledgement: the stream stored a batch the Replica does not
// know about; the message IDs deduplicate it.
func TestDuplicateAckIsSuccess(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	_, batches := session(t, "s3", 9)
	r := mustReplica(t, nc, jsreplica.Config{})
	if err := r.Replicate(ctx, "s3", batches[0]); err != nil {
		t.Fatal(err)
	}
	// Publish the second batch behind the Replica's back, as its own lost
	// attempt would have.
	js := r.JetStream()
	for i := range batches[1] {
		ev := &batches[1][i]
		if _, err := js.Publish(ctx, jsreplica.Subject("s3"), events.Encode(ev), jetstream.WithMsgID(jsreplica.MsgID("s3", ev))); err != nil {
			t.Fatal(err)
		}
	}
	// A raw re-send of one of them is acknowledged as a duplicate.
	ev := &batches[1][0]
	ack, err := js.Publish(ctx, jsreplica.Subject("s3"), events.Encode(ev), jetstream.WithMsgID(jsreplica.MsgID("s3", ev)))
	if err != nil || !ack.Duplicate {
		t.Fatalf("got ack %+v, error %v; want a duplicate", ack, err)
	}
	// The Replica, whose tip is stale, gets the batch again and more.
	if err := r.Replicate(ctx, "s3", batches[1]); err != nil {
		t.Fatal(err)
	}
	if err := r.Replicate(ctx, "s3", batches[2]); err != nil {
		t.Fatal(err)
	}
	want := uint64(len(batches[0]) + len(batches[1]) + len(batches[2]))
	if got := subjectMsgs(t, js, "s3"); got != want {
		t.Fatalf("got %d messages, want %d", got, want)
	}
}

// One Replica serves many sessions at once.
func TestConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	_, batches := session(t, "many", 19)
	r := mustReplica(t, nc, jsreplica.Config{})
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			id := fmt.Sprintf("many-%d", i)
			for _, b := range batches {
				if err := r.Replicate(ctx, id, b); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := flatten(batches)
	for i := range 6 {
		id := fmt.Sprintf("many-%d", i)
		dst := memlog.New()
		if _, err := jsreplica.Restore(ctx, r.JetStream(), id, dst); err != nil {
			t.Fatal(err)
		}
		equalEvents(t, mustRead(t, dst, id), want)
	}
}

// Same-seed sessions have the same event IDs; the session in the message
// ID keeps them apart.
func TestSameSeedSessionsAreNotDuplicates(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	_, a := session(t, "same", 11)
	r := mustReplica(t, nc, jsreplica.Config{})
	for _, id := range []string{"a", "b"} {
		for _, b := range a {
			// The engine stamped "same" as the session; the IDs are the same.
			if err := r.Replicate(ctx, id, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := uint64(len(flatten(a)))
	for _, id := range []string{"a", "b"} {
		if got := subjectMsgs(t, r.JetStream(), id); got != n {
			t.Fatalf("session %s: got %d messages, want %d", id, got, n)
		}
	}
}

// Another writer on the session's subject: the next batch fails instead of
// interleaving with it.
func TestAnotherWriterIsAConflict(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	_, batches := session(t, "s4", 13)
	_, other := session(t, "s4", 14) // the same session run with another seed
	tests := []struct {
		name    string
		forge   func(js jetstream.JetStream, id string, next uint64) error
		wantErr error
	}{
		{"a different event at the next seq", func(js jetstream.JetStream, id string, next uint64) error {
			ev := flatten(other)[next-1]
			_, err := js.Publish(ctx, jsreplica.Subject(id), events.Encode(&ev))
			return err
		}, jsreplica.ErrConflict},
		{"garbage", func(js jetstream.JetStream, id string, next uint64) error {
			_, err := js.Publish(ctx, jsreplica.Subject(id), []byte("not an event"))
			return err
		}, events.ErrCorrupt},
		{"an event from further on", func(js jetstream.JetStream, id string, next uint64) error {
			ev := flatten(other)[next+5]
			_, err := js.Publish(ctx, jsreplica.Subject(id), events.Encode(&ev))
			return err
		}, events.ErrCorrupt}, // a hole: seqs missing between the two
	}
	for _, batch := range []bool{false, true} {
		for i, tt := range tests {
			t.Run(fmt.Sprintf("%s/batch=%v", tt.name, batch), func(t *testing.T) {
				id := fmt.Sprintf("s4-%c-%v", 'a'+i, batch)
				r := mustReplica(t, nc, jsreplica.Config{RetryFor: 2 * time.Second, Batch: batch})
				if err := r.Replicate(ctx, id, batches[0]); err != nil {
					t.Fatal(err)
				}
				next := batches[1][0].Seq
				if err := tt.forge(r.JetStream(), id, next); err != nil {
					t.Fatal(err)
				}
				err := r.Replicate(ctx, id, batches[1])
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got error %v, want %v", err, tt.wantErr)
				}
				if got, want := subjectMsgs(t, r.JetStream(), id), uint64(len(batches[0])+1); got != want {
					t.Fatalf("got %d messages, want %d (nothing after the other writer's)", got, want)
				}
				// Restore does not take the other writer's message silently.
				if _, err := jsreplica.Restore(ctx, r.JetStream(), id, memlog.New()); err == nil && tt.wantErr != jsreplica.ErrConflict {
					t.Fatal("restored a session with a foreign message")
				}
			})
		}
	}
}

func TestSyncCopiesWhatTheStreamLacks(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	meta, batches := session(t, "s5", 17)
	local := memlog.New()
	m := meta
	m.Status = events.StatusRunning
	if err := local.CreateSession(ctx, m); err != nil {
		t.Fatal(err)
	}
	r := mustReplica(t, nc, jsreplica.Config{})
	var last uint64
	for i, b := range batches {
		if err := local.Append(ctx, "s5", last, b); err != nil {
			t.Fatal(err)
		}
		last = b[len(b)-1].Seq
		if i < len(batches)/3 { // the worker died after this batch was local, before it was replicated
			if err := r.Replicate(ctx, "s5", b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The driver continues with a batch after a gap.
	r2 := mustReplica(t, nc, jsreplica.Config{RetryFor: time.Second})
	more := []events.Event{batches[len(batches)-1][len(batches[len(batches)-1])-1]}
	more[0].Seq = last + 1
	if err := r2.Replicate(ctx, "s5", more); !errors.Is(err, jsreplica.ErrGap) {
		t.Fatalf("got %v, want ErrGap", err)
	}
	got, err := r2.Sync(ctx, local, "s5")
	if err != nil {
		t.Fatal(err)
	}
	if got != last {
		t.Fatalf("synced to %d, want %d", got, last)
	}
	dst := memlog.New()
	if _, err := jsreplica.Restore(ctx, r2.JetStream(), "s5", dst); err != nil {
		t.Fatal(err)
	}
	equalEvents(t, mustRead(t, dst, "s5"), flatten(batches))
	// Restoring again into the same log adds nothing and finds it equal.
	if n, err := jsreplica.Restore(ctx, r2.JetStream(), "s5", dst); err != nil || n != last {
		t.Fatalf("restore again: %d, %v", n, err)
	}
	// A local log ahead of the stream is not taken for restored.
	if err := dst.Append(ctx, "s5", last, more); err != nil {
		t.Fatal(err)
	}
	if _, err := jsreplica.Restore(ctx, r2.JetStream(), "s5", dst); !errors.Is(err, jsreplica.ErrGap) {
		t.Fatalf("restore into a log ahead of the stream: got %v, want ErrGap", err)
	}
}

// A local log with events the stream never got any of (the first batches
// were stored, the writer died before replicating them) is not taken for
// restored: Restore says ErrGap, and after Sync the stream holds them all.
func TestRestoreEmptyStreamLocalAhead(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	meta, batches := session(t, "s7", 5)
	meta.Status = events.StatusRunning
	local := memlog.New()
	if err := local.CreateSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, b := range batches {
		if err := local.Append(ctx, "s7", last, b); err != nil {
			t.Fatal(err)
		}
		last = b[len(b)-1].Seq
	}
	r := mustReplica(t, nc, jsreplica.Config{})
	if err := r.PutSession(ctx, meta); err != nil { // recorded, no event replicated
		t.Fatal(err)
	}
	if n, err := jsreplica.Restore(ctx, r.JetStream(), "s7", local); !errors.Is(err, jsreplica.ErrGap) {
		t.Fatalf("restore into a log ahead of an empty stream: %d, %v; want ErrGap", n, err)
	}
	if got, err := r.Sync(ctx, local, "s7"); err != nil || got != last {
		t.Fatalf("sync: %d, %v; want %d", got, err, last)
	}
	dst := memlog.New()
	if n, err := jsreplica.Restore(ctx, r.JetStream(), "s7", dst); err != nil || n != last {
		t.Fatalf("restore after sync: %d, %v; want %d", n, err, last)
	}
	equalEvents(t, mustRead(t, dst, "s7"), flatten(batches))
}

func TestSessionsLists(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	meta, batches := session(t, "x1", 3)
	r := mustReplica(t, nc, jsreplica.Config{})
	for _, b := range batches[:2] {
		if err := r.Replicate(ctx, "x1", b); err != nil {
			t.Fatal(err)
		}
		if err := r.Replicate(ctx, "x2", b); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PutSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	got, err := jsreplica.Sessions(ctx, r.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(len(batches[0]) + len(batches[1]))
	if len(got) != 2 || got[0].ID != "x1" || !got[0].Recorded || got[0].Meta.Seed != 3 || got[0].Events != n ||
		got[1].ID != "x2" || got[1].Recorded || got[1].Events != n {
		t.Fatalf("got %+v", got)
	}
	// Metadata that does not decode hides no other session: the others
	// are listed, with a DamagedError that names it.
	kv, err := r.JetStream().KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "x3", []byte("scrambled")); err != nil {
		t.Fatal(err)
	}
	again, err := jsreplica.Sessions(ctx, r.JetStream())
	var ce *events.CorruptError
	if len(again) != 2 || again[0].ID != "x1" || again[1].ID != "x2" || !errors.As(err, new(*events.DamagedError)) || !errors.As(err, &ce) || ce.Session != "x3" {
		t.Fatalf("Sessions beside damaged metadata: %+v, %v; want x1 and x2, and x3 named damaged", again, err)
	}
	if err := kv.Delete(ctx, "x3"); err != nil {
		t.Fatal(err)
	}
	// x2 has no recorded metadata: Restore derives it from session.started.
	dst := memlog.New()
	if _, err := jsreplica.Restore(ctx, r.JetStream(), "x2", dst); err != nil {
		t.Fatal(err)
	}
	m, err := dst.Session(ctx, "x2")
	if err != nil {
		t.Fatal(err)
	}
	if m.Seed != 3 || m.World != meta.World || m.WorldHash != meta.WorldHash || m.Status != events.StatusInterrupted || m.LastSeq != n {
		t.Fatalf("got %+v", m)
	}
}

// A fork's subject holds only its own events; Restore brings its parent
// first and creates the fork at its fork point.
func TestRestoreFork(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	pmeta, pb := session(t, "p", 21)
	_, ob := session(t, "p", 22) // stands in for the fork's own events
	parent, other := flatten(pb), flatten(ob)
	const forkSeq = 40
	r := mustReplica(t, nc, jsreplica.Config{})
	for _, b := range pb {
		if err := r.Replicate(ctx, "p", b); err != nil {
			t.Fatal(err)
		}
	}
	own := other[forkSeq:]
	for i := 0; i < len(own); i += 100 {
		if err := r.Replicate(ctx, "f", own[i:min(i+100, len(own))]); err != nil {
			t.Fatal(err)
		}
	}
	fmeta := pmeta
	fmeta.ID, fmeta.Parent, fmeta.ForkSeq, fmeta.Status = "f", "p", forkSeq, events.StatusRunning
	for _, m := range []events.SessionMeta{pmeta, fmeta} {
		if err := r.PutSession(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	dst := mustPebble(t, t.TempDir())
	last, err := jsreplica.Restore(ctx, r.JetStream(), "f", dst)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(len(other)); last != want {
		t.Fatalf("got last %d, want %d", last, want)
	}
	equalEvents(t, mustRead(t, dst, "p"), parent)
	equalEvents(t, mustRead(t, dst, "f"), append(append([]events.Event{}, parent[:forkSeq]...), own...))
	m, err := dst.Session(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if m.Parent != "p" || m.ForkSeq != forkSeq || m.Status != events.StatusInterrupted {
		t.Fatalf("got %+v", m)
	}
	// Without recorded metadata a fork cannot be restored: its parent is
	// not in its events.
	if _, err := jsreplica.Restore(ctx, r.JetStream(), "f", memlog.New()); err != nil {
		t.Fatal(err) // recorded: fine
	}
	kv, err := r.JetStream().KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := jsreplica.Restore(ctx, r.JetStream(), "f", memlog.New()); err == nil {
		t.Fatal("restored a fork without its metadata")
	}
}

// failingAppends is a log whose appends fail from the nth on.
type failingAppends struct {
	events.Log
	n, calls int
}

func (l *failingAppends) Append(ctx context.Context, session string, after uint64, batch []events.Event) error {
	l.calls++
	if l.calls >= l.n {
		return errors.New("the disk is full")
	}
	return l.Log.Append(ctx, session, after, batch)
}

// A restore copies a session over several fetches (4,096 messages each),
// an event of 6 MB among them, appending each batch while the next is
// fetched; an append that fails stops it with the batches before it kept
// and the error naming their seqs.
func TestRestoreFetchesWhileItAppends(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	r := mustReplica(t, nc, jsreplica.Config{})
	evs := synthetic(10_000)
	evs[5_000].Payload = json.RawMessage(`{"note":"` + strings.Repeat("x", 6<<20) + `"}`)
	for i := 0; i < len(evs); i += 1000 {
		if err := r.Replicate(ctx, "big", evs[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	meta := events.SessionMeta{ID: "big", Status: events.StatusRunning}
	if err := r.PutSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	dst := memlog.New()
	if n, err := jsreplica.Restore(ctx, r.JetStream(), "big", dst); err != nil || n != 10_000 {
		t.Fatalf("restore: %d, %v; want 10000", n, err)
	}
	equalEvents(t, mustRead(t, dst, "big"), evs)

	bad := &failingAppends{Log: memlog.New(), n: 3}
	n, err := jsreplica.Restore(ctx, r.JetStream(), "big", bad)
	if err == nil || !strings.Contains(err.Error(), "append seqs 2049-3072: the disk is full") || n != 2048 {
		t.Fatalf("restore with the third append failing: %d, %v; want 2048 and the append's error", n, err)
	}
	if got := mustRead(t, bad.Log, "big"); len(got) != 2048 {
		t.Fatalf("the log kept %d events, want the 2048 appended before the failure", len(got))
	}
}
