// Package logtest is the conformance suite every events.Log implementation
// must pass, in the manner of testing/slogtest.
//
//	func TestConformance(t *testing.T) {
//		logtest.Run(t, func(t *testing.T) events.Log { return memlog.New() })
//	}
//
// Behaviour that depends on how an implementation stores bytes (injecting
// corruption, reopening) is tested by the implementation's own tests.
package logtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// Run runs the conformance suite against the Logs made by open. Each subtest
// calls open once and expects a new, empty Log; the suite closes it (open
// must not), and open may register cleanups such as removing a directory.
func Run(t *testing.T, open func(t *testing.T) events.Log) {
	tests := []struct {
		name string
		fn   func(t *testing.T, l events.Log)
	}{
		{"Sessions", testSessions},
		{"SessionValidation", testSessionValidation},
		{"SessionIsCopy", testSessionIsCopy},
		{"AppendRead", testAppendRead},
		{"EventsAreCopies", testEventsAreCopies},
		{"BadBatch", testBadBatch},
		{"TrustedAppend", testTrustedAppend},
		{"PipelinedAppend", testPipelinedAppend},
		{"StaleExpectation", testStaleExpectation},
		{"IdempotentRetry", testIdempotentRetry},
		{"OverlapConflict", testOverlapConflict},
		{"ReadFrom", testReadFrom},
		{"ReadBreak", testReadBreak},
		{"NoSession", testNoSession},
		{"ConcurrentAppenders", testConcurrentAppenders},
		{"ManySessions", testManySessions},
		{"LargePayload", testLargePayload},
		{"Fork", testFork},
		{"ForkValidation", testForkValidation},
		{"Found", testFound},
		{"Delete", testDelete},
		{"Checkpoints", testCheckpoints},
		{"CheckpointReplace", testCheckpointReplace},
		{"CheckpointValidation", testCheckpointValidation},
		{"CheckpointFork", testCheckpointFork},
		{"CheckpointsAreCopies", testCheckpointsAreCopies},
		{"ConcurrentCheckpoints", testConcurrentCheckpoints},
		{"ScanMatchesRead", testScanMatchesRead},
		{"ScanStop", testScanStop},
		{"ScanBorrowed", testScanBorrowed},
		{"ScanErrors", testScanErrors},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := open(t)
			t.Cleanup(func() { _ = l.Close() })
			tt.fn(t, l)
		})
	}
}

// Helpers.

var idKey = [32]byte{'l', 'o', 'g', 't', 'e', 's', 't'}

// mkEvents returns n valid events with seqs from, from+1, .... salt changes
// their IDs and payloads, so batches made with different salts conflict.
func mkEvents(from uint64, n int, salt string) []events.Event {
	key := idKey
	copy(key[16:], salt)
	evs := make([]events.Event, n)
	for i := range evs {
		seq := from + uint64(i)
		t := int64(seq) * 1000
		evs[i] = events.Event{
			ID:      events.NewID(key, 1_700_000_000_000, t, seq),
			Seq:     seq,
			Time:    t,
			Type:    "test.event",
			Actor:   "m" + salt,
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d,"salt":%q}`, seq, salt)),
		}
		if seq > 1 {
			evs[i].Cause = seq - 1
		}
	}
	return evs
}

func meta(id string) events.SessionMeta {
	return events.SessionMeta{
		ID:        id,
		World:     "startup",
		WorldHash: strings.Repeat("ab", 32),
		Seed:      42,
		Agents:    map[string]string{"alice": "greedy", "bob": "idle"},
		Created:   "2025-01-02T03:04:05Z",
		Status:    events.StatusRunning,
	}
}

func mustCreate(tb testing.TB, l events.Log, m events.SessionMeta) {
	tb.Helper()
	if err := l.CreateSession(context.Background(), m); err != nil {
		tb.Fatalf("CreateSession(%s): %v", m.ID, err)
	}
}

func mustAppend(tb testing.TB, l events.Log, session string, expectedLast uint64, batch []events.Event) {
	tb.Helper()
	if err := l.Append(context.Background(), session, expectedLast, batch); err != nil {
		tb.Fatalf("Append(%s, %d, %d events): %v", session, expectedLast, len(batch), err)
	}
}

func mustLastSeq(tb testing.TB, l events.Log, session string) uint64 {
	tb.Helper()
	last, err := l.LastSeq(context.Background(), session)
	if err != nil {
		tb.Fatalf("LastSeq(%s): %v", session, err)
	}
	return last
}

func wantLastSeq(tb testing.TB, l events.Log, session string, want uint64) {
	tb.Helper()
	if got := mustLastSeq(tb, l, session); got != want {
		tb.Fatalf("LastSeq(%s): got %d, want %d", session, got, want)
	}
}

func mustRead(tb testing.TB, l events.Log, session string, from uint64) []events.Event {
	tb.Helper()
	var out []events.Event
	for e, err := range l.Read(context.Background(), session, from) {
		if err != nil {
			tb.Fatalf("Read(%s, %d) after %d events: %v", session, from, len(out), err)
		}
		out = append(out, e)
	}
	return out
}

// withSession returns evs with Session set, as Read returns them.
func withSession(session string, evs []events.Event) []events.Event {
	out := make([]events.Event, len(evs))
	for i, e := range evs {
		e.Session = session
		out[i] = e
	}
	return out
}

func wantEvents(tb testing.TB, what string, got, want []events.Event) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: got %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			tb.Fatalf("%s: event %d:\ngot  %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}

func wantErrIs(tb testing.TB, what string, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

// Tests.

func testSessions(t *testing.T, l events.Log) {
	ctx := context.Background()
	if got, err := l.Sessions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Sessions of a new log: got %v, %v; want none, nil", got, err)
	}
	for _, id := range []string{"s-b", "s_a", "S9", "s-c"} {
		mustCreate(t, l, meta(id))
	}
	wantErrIs(t, "CreateSession twice", l.CreateSession(ctx, meta("s_a")), events.ErrSessionExists)

	got, err := l.Session(ctx, "s-b")
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	if want := meta("s-b"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Session: got %+v, want %+v", got, want)
	}

	all, err := l.Sessions(ctx)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	var ids []string
	for _, m := range all {
		ids = append(ids, m.ID)
	}
	if want := []string{"S9", "s-b", "s-c", "s_a"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Sessions: got IDs %v, want %v", ids, want)
	}

	up := meta("s-c")
	up.Status = events.StatusFinished
	up.LastSeq = 17
	up.StateHash = "deadbeef"
	up.Agents = nil
	if err := l.UpdateSession(ctx, up); err != nil {
		t.Fatalf("UpdateSession: %v", err)
	}
	if got, err := l.Session(ctx, "s-c"); err != nil || !reflect.DeepEqual(got, up) {
		t.Fatalf("Session after update: got %+v, %v; want %+v", got, err, up)
	}
	wantErrIs(t, "UpdateSession of unknown session", l.UpdateSession(ctx, meta("nope")), events.ErrNoSession)
}

func testSessionValidation(t *testing.T, l events.Log) {
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(m *events.SessionMeta)
	}{
		{"empty id", func(m *events.SessionMeta) { m.ID = "" }},
		{"slash in id", func(m *events.SessionMeta) { m.ID = "a/b" }},
		{"long id", func(m *events.SessionMeta) { m.ID = strings.Repeat("x", 65) }},
		{"unicode id", func(m *events.SessionMeta) { m.ID = "sé" }},
		{"no status", func(m *events.SessionMeta) { m.Status = "" }},
		{"unknown status", func(m *events.SessionMeta) { m.Status = "paused" }},
		{"fork seq without parent", func(m *events.SessionMeta) { m.ForkSeq = 3 }},
		{"own parent", func(m *events.SessionMeta) { m.Parent = m.ID }},
		{"bad parent id", func(m *events.SessionMeta) { m.Parent = "../x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := meta("valid")
			tt.edit(&m)
			wantErrIs(t, "CreateSession", l.CreateSession(ctx, m), events.ErrBadSession)
		})
	}
	if got, err := l.Sessions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Sessions after rejected creates: got %v, %v; want none, nil", got, err)
	}
	t.Run("update", func(t *testing.T) {
		mustCreate(t, l, meta("u"))
		m := meta("u")
		m.Status = "bogus"
		wantErrIs(t, "UpdateSession", l.UpdateSession(ctx, m), events.ErrBadSession)
	})
	t.Run("lookups", func(t *testing.T) {
		_, err := l.Session(ctx, "a/b")
		wantErrIs(t, "Session", err, events.ErrBadSession)
		_, err = l.LastSeq(ctx, "")
		wantErrIs(t, "LastSeq", err, events.ErrBadSession)
		wantErrIs(t, "Append", l.Append(ctx, "a b", 0, mkEvents(1, 1, "x")), events.ErrBadSession)
		for _, err := range l.Read(ctx, "a\x00", 1) {
			wantErrIs(t, "Read", err, events.ErrBadSession)
		}
	})
}

func testSessionIsCopy(t *testing.T, l events.Log) {
	ctx := context.Background()
	m := meta("s")
	mustCreate(t, l, m)
	m.Agents["alice"] = "changed after create"
	got, err := l.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if got.Agents["alice"] != "greedy" {
		t.Fatalf("Agents[alice] after mutating the created meta: got %q, want %q", got.Agents["alice"], "greedy")
	}
	got.Agents["alice"] = "changed after get"
	again, err := l.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if again.Agents["alice"] != "greedy" {
		t.Fatalf("Agents[alice] after mutating a returned meta: got %q, want %q", again.Agents["alice"], "greedy")
	}
}

func testAppendRead(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	wantLastSeq(t, l, "s", 0)
	if got := mustRead(t, l, "s", 1); len(got) != 0 {
		t.Fatalf("Read of an empty session: got %d events, want 0", len(got))
	}
	var all []events.Event
	for _, n := range []int{1, 3, 64, 2} {
		last := uint64(len(all))
		batch := mkEvents(last+1, n, "a")
		batch[0].Payload = nil // empty payloads are allowed
		batch[len(batch)-1].Actor = ""
		mustAppend(t, l, "s", last, batch)
		all = append(all, batch...)
		wantLastSeq(t, l, "s", uint64(len(all)))
	}
	wantEvents(t, "Read(s, 1)", mustRead(t, l, "s", 1), withSession("s", all))

	// The Session field may be set to the session appended to.
	batch := withSession("s", mkEvents(uint64(len(all))+1, 2, "a"))
	mustAppend(t, l, "s", uint64(len(all)), batch)
	all = append(all, batch...)
	wantEvents(t, "Read after appending events naming the session", mustRead(t, l, "s", 1), withSession("s", all))
}

func testEventsAreCopies(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	batch := mkEvents(1, 2, "a")
	want := withSession("s", mkEvents(1, 2, "a"))
	mustAppend(t, l, "s", 0, batch)
	copy(batch[0].Payload, `{"x":99999}`)
	batch[1].Type = "changed"
	got := mustRead(t, l, "s", 1)
	wantEvents(t, "Read after mutating the appended batch", got, want)
	copy(got[0].Payload, `{"y":11111}`)
	wantEvents(t, "Read after mutating a read event", mustRead(t, l, "s", 1), want)
}

func testBadBatch(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 2, "a"))
	tests := []struct {
		name         string
		expectedLast uint64
		batch        func() []events.Event
	}{
		{"empty", 2, func() []events.Event { return nil }},
		{"gap", 2, func() []events.Event {
			b := mkEvents(3, 3, "a")
			b[2].Seq = 6
			return b
		}},
		{"repeated seq", 2, func() []events.Event {
			b := mkEvents(3, 2, "a")
			b[1].Seq = 3
			return b
		}},
		{"does not follow expected", 2, func() []events.Event { return mkEvents(4, 2, "a") }},
		{"starts at zero", 0, func() []events.Event { return mkEvents(0, 2, "a") }},
		{"zero id", 2, func() []events.Event {
			b := mkEvents(3, 2, "a")
			b[1].ID = [16]byte{}
			return b
		}},
		{"empty type", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Type = ""
			return b
		}},
		{"invalid utf-8 actor", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Actor = "\xff"
			return b
		}},
		{"other session", 2, func() []events.Event { return withSession("t", mkEvents(3, 1, "a")) }},
		{"payload not json", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Payload = json.RawMessage(`{"a":`)
			return b
		}},
		{"payload not an object", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Payload = json.RawMessage(`[1,2]`)
			return b
		}},
		{"cause not earlier", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Cause = 3
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Append(ctx, "s", tt.expectedLast, tt.batch())
			wantErrIs(t, "Append", err, events.ErrBadBatch)
			if errors.Is(err, events.ErrConflict) {
				t.Fatalf("Append: got %v, want an error not wrapping ErrConflict", err)
			}
			wantLastSeq(t, l, "s", 2)
		})
	}
}

func testStaleExpectation(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 5, "a"))
	tests := []struct {
		name         string
		expectedLast uint64
	}{
		{"behind", 3},
		{"far behind", 0},
		{"ahead", 6},
		{"far ahead", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Append(ctx, "s", tt.expectedLast, mkEvents(tt.expectedLast+1, 1, "b"))
			wantErrIs(t, "Append", err, events.ErrConflict)
			for _, want := range []string{fmt.Sprint(tt.expectedLast), "5"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Append error %q: want it to mention %q", err, want)
				}
			}
			wantLastSeq(t, l, "s", 5)
		})
	}
}

func testIdempotentRetry(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	b1, b2, b3 := mkEvents(1, 3, "a"), mkEvents(4, 2, "a"), mkEvents(6, 4, "a")
	mustAppend(t, l, "s", 0, b1)
	mustAppend(t, l, "s", 3, b2)
	mustAppend(t, l, "s", 5, b3)
	want := withSession("s", append(append(append([]events.Event(nil), b1...), b2...), b3...))

	tests := []struct {
		name         string
		expectedLast uint64
		batch        []events.Event
	}{
		{"last batch", 5, b3},
		{"middle batch", 3, b2},
		{"first batch", 0, b1},
		{"part of a batch", 1, b1[1:]},
		{"spanning batches", 2, mkEvents(3, 5, "a")},
		{"with session set", 5, withSession("s", b3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				mustAppend(t, l, "s", tt.expectedLast, tt.batch)
			}
			wantLastSeq(t, l, "s", 9)
			wantEvents(t, "Read", mustRead(t, l, "s", 1), want)
		})
	}
}

func testOverlapConflict(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	stored := mkEvents(1, 4, "a")
	mustAppend(t, l, "s", 0, stored)
	tests := []struct {
		name         string
		expectedLast uint64
		batch        func() []events.Event
	}{
		{"different ids", 1, func() []events.Event { return mkEvents(2, 2, "b") }},
		{"one different id", 0, func() []events.Event {
			b := mkEvents(1, 4, "a")
			b[2] = mkEvents(3, 1, "b")[0]
			return b
		}},
		{"same ids, other payload", 2, func() []events.Event {
			b := mkEvents(3, 2, "a")
			b[1].Payload = json.RawMessage(`{"other":true}`)
			return b
		}},
		{"same ids, other time", 2, func() []events.Event {
			b := mkEvents(3, 1, "a")
			b[0].Time++
			return b
		}},
		{"extends past last", 2, func() []events.Event { return mkEvents(3, 3, "a") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErrIs(t, "Append", l.Append(ctx, "s", tt.expectedLast, tt.batch()), events.ErrConflict)
			wantLastSeq(t, l, "s", 4)
			wantEvents(t, "Read", mustRead(t, l, "s", 1), withSession("s", stored))
		})
	}
}

func testReadFrom(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	all := withSession("s", mkEvents(1, 10, "a"))
	mustAppend(t, l, "s", 0, all[:4])
	mustAppend(t, l, "s", 4, all[4:])
	tests := []struct {
		name string
		from uint64
		want []events.Event
	}{
		{"zero", 0, all},
		{"first", 1, all},
		{"middle of a batch", 3, all[2:]},
		{"start of a batch", 5, all[4:]},
		{"last", 10, all[9:]},
		{"past the end", 11, nil},
		{"far past the end", 1 << 63, nil},
		{"max", ^uint64(0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantEvents(t, fmt.Sprintf("Read(s, %d)", tt.from), mustRead(t, l, "s", tt.from), tt.want)
		})
	}
}

func testReadBreak(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 10, "a"))
	n := 0
	for _, err := range l.Read(context.Background(), "s", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("events before break: got %d, want 3", n)
	}
	// The log is still usable after an abandoned Read.
	mustAppend(t, l, "s", 10, mkEvents(11, 1, "a"))
	if got := len(mustRead(t, l, "s", 1)); got != 11 {
		t.Fatalf("Read after break: got %d events, want 11", got)
	}
}

func testNoSession(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("other"))
	_, err := l.Session(ctx, "nope")
	wantErrIs(t, "Session", err, events.ErrNoSession)
	_, err = l.LastSeq(ctx, "nope")
	wantErrIs(t, "LastSeq", err, events.ErrNoSession)
	wantErrIs(t, "Append", l.Append(ctx, "nope", 0, mkEvents(1, 1, "a")), events.ErrNoSession)
	wantErrIs(t, "UpdateSession", l.UpdateSession(ctx, meta("nope")), events.ErrNoSession)
	n := 0
	for _, err := range l.Read(ctx, "nope", 1) {
		n++
		wantErrIs(t, "Read", err, events.ErrNoSession)
	}
	if n != 1 {
		t.Fatalf("Read of an unknown session: got %d results, want 1 error", n)
	}
	wantErrIs(t, "PutCheckpoint", l.PutCheckpoint(ctx, "nope", mkCheckpoint(1, "a")), events.ErrNoSession)
	_, err = l.LatestCheckpoint(ctx, "nope", 1)
	wantErrIs(t, "LatestCheckpoint", err, events.ErrNoSession)
	_, err = l.Checkpoints(ctx, "nope")
	wantErrIs(t, "Checkpoints", err, events.ErrNoSession)
	// A prefix of an existing session's ID is not that session.
	_, err = l.LastSeq(ctx, "oth")
	wantErrIs(t, "LastSeq(prefix)", err, events.ErrNoSession)
}

func testConcurrentAppenders(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	const (
		writers = 8
		target  = 200
	)
	var (
		mu   sync.Mutex
		wins = map[uint64]int{} // seq -> writer that won it
		wg   sync.WaitGroup
	)
	errc := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			salt := fmt.Sprint(w)
			for {
				last, err := l.LastSeq(ctx, "s")
				if err != nil {
					errc <- err
					return
				}
				if last >= target {
					return
				}
				n := min(1+w%3, int(target-last))
				err = l.Append(ctx, "s", last, mkEvents(last+1, n, salt))
				switch {
				case err == nil:
					mu.Lock()
					for i := range n {
						if prev, ok := wins[last+1+uint64(i)]; ok {
							errc <- fmt.Errorf("seq %d won by writers %d and %d", last+1+uint64(i), prev, w)
						}
						wins[last+1+uint64(i)] = w
					}
					mu.Unlock()
				case errors.Is(err, events.ErrConflict):
					// Lost the race; try again.
				default:
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	wantLastSeq(t, l, "s", target)
	got := mustRead(t, l, "s", 1)
	if len(got) != target {
		t.Fatalf("Read: got %d events, want %d", len(got), target)
	}
	for i, e := range got {
		seq := uint64(i) + 1
		if e.Seq != seq {
			t.Fatalf("event %d: got seq %d, want %d", i, e.Seq, seq)
		}
		w, ok := wins[seq]
		if !ok {
			t.Fatalf("seq %d: stored, but no Append of it succeeded", seq)
		}
		if want := mkEvents(seq, 1, fmt.Sprint(w))[0].ID; e.ID != want {
			t.Fatalf("seq %d: got ID %s, want %s from winning writer %d", seq, e.ID, want, w)
		}
	}
}

func testManySessions(t *testing.T, l events.Log) {
	const (
		sessions = 16
		rounds   = 10
		perBatch = 5
	)
	for s := range sessions {
		mustCreate(t, l, meta(fmt.Sprintf("s%02d", s)))
	}
	var wg sync.WaitGroup
	errc := make(chan error, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%02d", s)
			for r := range rounds {
				last := uint64(r * perBatch)
				if err := l.Append(context.Background(), id, last, mkEvents(last+1, perBatch, id)); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for s := range sessions {
		id := fmt.Sprintf("s%02d", s)
		wantLastSeq(t, l, id, rounds*perBatch)
		wantEvents(t, "Read("+id+")", mustRead(t, l, id, 1), withSession(id, mkEvents(1, rounds*perBatch, id)))
	}
}

func testLargePayload(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	batch := mkEvents(1, 3, "a")
	for i := range batch {
		blob := bytes.Repeat([]byte{'a' + byte(i)}, 1<<20)
		batch[i].Payload = json.RawMessage(`{"blob":"` + string(blob) + `"}`)
	}
	mustAppend(t, l, "s", 0, batch[:2])
	mustAppend(t, l, "s", 2, batch[2:])
	mustAppend(t, l, "s", 0, batch[:2]) // idempotent retry compares 1 MiB payloads
	wantEvents(t, "Read", mustRead(t, l, "s", 1), withSession("s", batch))
}

func testFork(t *testing.T, l events.Log) {
	ctx := context.Background()
	parent := mkEvents(1, 6, "p")
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, parent)

	f := meta("f")
	f.Parent, f.ForkSeq = "p", 4
	mustCreate(t, l, f)
	if got, err := l.Session(ctx, "f"); err != nil || !reflect.DeepEqual(got, f) {
		t.Fatalf("Session(f): got %+v, %v; want %+v", got, err, f)
	}
	wantLastSeq(t, l, "f", 4)
	wantEvents(t, "Read(f) before its own appends", mustRead(t, l, "f", 1), withSession("p", parent[:4]))

	wantErrIs(t, "Append(f) expecting 0", l.Append(ctx, "f", 0, mkEvents(1, 1, "f")), events.ErrConflict)
	own := mkEvents(5, 3, "f")
	mustAppend(t, l, "f", 4, own)
	wantLastSeq(t, l, "f", 7)
	// Retrying events the fork shares with its parent is idempotent.
	mustAppend(t, l, "f", 2, parent[2:4])
	mustAppend(t, l, "f", 3, append([]events.Event{parent[3]}, own...))
	wantErrIs(t, "Append(f) of the parent's seq 5", l.Append(ctx, "f", 4, parent[4:5]), events.ErrConflict)

	// The parent goes on independently.
	mustAppend(t, l, "p", 6, mkEvents(7, 2, "p"))
	wantLastSeq(t, l, "p", 8)
	wantLastSeq(t, l, "f", 7)

	wantF := append(withSession("p", parent[:4]), withSession("f", own)...)
	tests := []struct {
		name string
		from uint64
		want []events.Event
	}{
		{"all", 1, wantF},
		{"within parent", 3, wantF[2:]},
		{"fork point", 4, wantF[3:]},
		{"own", 5, wantF[4:]},
		{"last", 7, wantF[6:]},
		{"past", 8, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantEvents(t, fmt.Sprintf("Read(f, %d)", tt.from), mustRead(t, l, "f", tt.from), tt.want)
		})
	}

	t.Run("fork of a fork", func(t *testing.T) {
		g := meta("g")
		g.Parent, g.ForkSeq = "f", 6
		mustCreate(t, l, g)
		gOwn := mkEvents(7, 2, "g")
		mustAppend(t, l, "g", 6, gOwn)
		want := append(append([]events.Event(nil), wantF[:6]...), withSession("g", gOwn)...)
		wantEvents(t, "Read(g)", mustRead(t, l, "g", 1), want)
		wantEvents(t, "Read(g, 4)", mustRead(t, l, "g", 4), want[3:])
	})
	t.Run("fork at zero", func(t *testing.T) {
		z := meta("z")
		z.Parent = "p"
		mustCreate(t, l, z)
		wantLastSeq(t, l, "z", 0)
		if got := mustRead(t, l, "z", 1); len(got) != 0 {
			t.Fatalf("Read(z): got %d events, want 0", len(got))
		}
		mustAppend(t, l, "z", 0, mkEvents(1, 1, "z"))
		wantEvents(t, "Read(z)", mustRead(t, l, "z", 1), withSession("z", mkEvents(1, 1, "z")))
	})
	t.Run("fork at parent's last", func(t *testing.T) {
		e := meta("e")
		e.Parent, e.ForkSeq = "p", 8
		mustCreate(t, l, e)
		wantLastSeq(t, l, "e", 8)
		if got := len(mustRead(t, l, "e", 1)); got != 8 {
			t.Fatalf("Read(e): got %d events, want 8", got)
		}
	})
}

func testForkValidation(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, mkEvents(1, 3, "p"))

	beyond := meta("f")
	beyond.Parent, beyond.ForkSeq = "p", 4
	wantErrIs(t, "CreateSession(fork beyond parent's last)", l.CreateSession(ctx, beyond), events.ErrBadSession)

	orphan := meta("f")
	orphan.Parent, orphan.ForkSeq = "nope", 1
	wantErrIs(t, "CreateSession(fork of unknown parent)", l.CreateSession(ctx, orphan), events.ErrNoSession)

	f := meta("f")
	f.Parent, f.ForkSeq = "p", 2
	mustCreate(t, l, f)
	tests := []struct {
		name string
		edit func(m *events.SessionMeta)
	}{
		{"fork seq", func(m *events.SessionMeta) { m.ForkSeq = 1 }},
		{"parent", func(m *events.SessionMeta) { m.Parent = "q" }},
		{"unfork", func(m *events.SessionMeta) { m.Parent, m.ForkSeq = "", 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f
			tt.edit(&m)
			wantErrIs(t, "UpdateSession", l.UpdateSession(ctx, m), events.ErrBadSession)
		})
	}
	up := f
	up.Status = events.StatusFinished
	if err := l.UpdateSession(ctx, up); err != nil {
		t.Fatalf("UpdateSession keeping parent and fork seq: %v", err)
	}
	t.Run("parent may not fork from its child", func(t *testing.T) {
		m := meta("p")
		m.Parent, m.ForkSeq = "f", 1
		wantErrIs(t, "UpdateSession", l.UpdateSession(ctx, m), events.ErrBadSession)
	})
}

func testCanceledContext(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 3, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantErrIs(t, "CreateSession", l.CreateSession(ctx, meta("t")), context.Canceled)
	wantErrIs(t, "Append", l.Append(ctx, "s", 3, mkEvents(4, 1, "a")), context.Canceled)
	_, err := l.LastSeq(ctx, "s")
	wantErrIs(t, "LastSeq", err, context.Canceled)
	for _, err := range l.Read(ctx, "s", 1) {
		wantErrIs(t, "Read", err, context.Canceled)
	}
	wantErrIs(t, "PutCheckpoint", l.PutCheckpoint(ctx, "s", mkCheckpoint(2, "a")), context.Canceled)
	_, err = l.LatestCheckpoint(ctx, "s", 3)
	wantErrIs(t, "LatestCheckpoint", err, context.Canceled)
	_, err = l.Checkpoints(ctx, "s")
	wantErrIs(t, "Checkpoints", err, context.Canceled)
	wantLastSeq(t, l, "s", 3)
	if got := mustCheckpoints(t, l, "s"); len(got) != 0 {
		t.Fatalf("Checkpoints after a canceled PutCheckpoint: got %d, want 0", len(got))
	}

	// Canceling during a Read stops it.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range l.Read(ctx, "s", 1) {
		if err != nil {
			last = err
			break
		}
		n++
		cancel()
	}
	if n != 1 {
		t.Fatalf("events read before cancellation took effect: got %d, want 1", n)
	}
	wantErrIs(t, "Read after cancel", last, context.Canceled)
}

func testClosed(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 5, "a"))

	// A Read in progress stops with ErrClosed.
	var (
		n       int
		lastErr error
	)
	for _, err := range l.Read(ctx, "s", 1) {
		if err != nil {
			lastErr = err
			break
		}
		if n++; n == 2 {
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	}
	if n != 2 {
		t.Fatalf("events read before Close took effect: got %d, want 2", n)
	}
	wantErrIs(t, "Read during Close", lastErr, events.ErrClosed)

	wantErrIs(t, "CreateSession", l.CreateSession(ctx, meta("t")), events.ErrClosed)
	wantErrIs(t, "UpdateSession", l.UpdateSession(ctx, meta("s")), events.ErrClosed)
	_, err := l.Session(ctx, "s")
	wantErrIs(t, "Session", err, events.ErrClosed)
	_, err = l.Sessions(ctx)
	wantErrIs(t, "Sessions", err, events.ErrClosed)
	wantErrIs(t, "Append", l.Append(ctx, "s", 5, mkEvents(6, 1, "a")), events.ErrClosed)
	_, err = l.LastSeq(ctx, "s")
	wantErrIs(t, "LastSeq", err, events.ErrClosed)
	for _, err := range l.Read(ctx, "s", 1) {
		wantErrIs(t, "Read", err, events.ErrClosed)
	}
	wantErrIs(t, "PutCheckpoint", l.PutCheckpoint(ctx, "s", mkCheckpoint(5, "a")), events.ErrClosed)
	_, err = l.LatestCheckpoint(ctx, "s", 5)
	wantErrIs(t, "LatestCheckpoint", err, events.ErrClosed)
	_, err = l.Checkpoints(ctx, "s")
	wantErrIs(t, "Checkpoints", err, events.ErrClosed)
	wantErrIs(t, "second Close", l.Close(), events.ErrClosed)
}

// testTrustedAppend: a log that offers AppendTrusted stores and reads back
// what it is given like Append, still refuses a gap or a stale
// expectation, and skips only the payload check.
func testTrustedAppend(t *testing.T, l events.Log) {
	ta, ok := l.(events.TrustedAppender)
	if !ok {
		t.Skip("the log has no AppendTrusted")
	}
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	batch := mkEvents(1, 3, "a")
	if err := ta.AppendTrusted(ctx, "s", 0, batch); err != nil {
		t.Fatalf("AppendTrusted: %v", err)
	}
	wantEvents(t, "AppendTrusted then Read", mustRead(t, l, "s", 1), withSession("s", batch))
	gap := mkEvents(5, 1, "a")
	wantErrIs(t, "AppendTrusted with a gap", ta.AppendTrusted(ctx, "s", 3, gap), events.ErrBadBatch)
	stale := mkEvents(3, 1, "b")
	if err := ta.AppendTrusted(ctx, "s", 2, stale); err == nil {
		t.Fatal("AppendTrusted over stored events with other content: no error")
	}
	wantLastSeq(t, l, "s", 3)
}

// testPipelinedAppend: a log that offers AppendPipelined takes a session's
// next batch before the one before it is durable, shows both once they are
// ordered, and refuses what Append refuses (a gap, other content over
// stored events, a batch after a missing session) with no wait to call.
func testPipelinedAppend(t *testing.T, l events.Log) {
	pl, ok := l.(events.Pipeliner)
	if !ok {
		t.Skip("the log has no AppendPipelined")
	}
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	first, second := mkEvents(1, 3, "a"), mkEvents(4, 2, "a")
	d1, err := pl.AppendPipelined(ctx, "s", 0, first)
	if err != nil {
		t.Fatalf("AppendPipelined of 1..3: %v", err)
	}
	d2, err := pl.AppendPipelined(ctx, "s", 3, second)
	if err != nil {
		t.Fatalf("AppendPipelined of 4..5 before 1..3 is durable: %v", err)
	}
	wantEvents(t, "two batches ordered, then Read", mustRead(t, l, "s", 1), withSession("s", append(slices.Clone(first), second...)))
	if err := d1(); err != nil {
		t.Fatalf("durable of 1..3: %v", err)
	}
	if err := d2(); err != nil {
		t.Fatalf("durable of 4..5: %v", err)
	}
	wantLastSeq(t, l, "s", 5)
	for _, c := range []struct {
		name    string
		session string
		after   uint64
		batch   []events.Event
	}{
		{"a gap", "s", 6, mkEvents(7, 1, "a")},
		{"other content over stored events", "s", 4, mkEvents(5, 1, "b")},
		{"a missing session", "nobody", 0, mkEvents(1, 1, "a")},
	} {
		d, err := pl.AppendPipelined(ctx, c.session, c.after, c.batch)
		if err == nil {
			t.Errorf("AppendPipelined with %s: no error", c.name)
			if d != nil {
				_ = d()
			}
		} else if d != nil {
			t.Errorf("AppendPipelined with %s failed (%v) but gave a wait to call", c.name, err)
		}
	}
	wantLastSeq(t, l, "s", 5)
	// The same batch again is stored already: ordered at once, and durable.
	d, err := pl.AppendPipelined(ctx, "s", 3, second)
	if err != nil || d == nil {
		t.Fatalf("AppendPipelined of stored events: %v", err)
	}
	if err := d(); err != nil {
		t.Fatalf("durable of stored events: %v", err)
	}
}
