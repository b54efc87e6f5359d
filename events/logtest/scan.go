package logtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// mustScan returns clones of the events Scan passes to fn.
func mustScan(tb testing.TB, l events.Log, session string, from uint64) []events.Event {
	tb.Helper()
	got, err := scanAll(l, session, from)
	if err != nil {
		tb.Fatalf("Scan(%s, %d) after %d events: %v", session, from, len(got), err)
	}
	return got
}

// scanAll returns clones of the events Scan passes to fn and Scan's error.
func scanAll(l events.Log, session string, from uint64) ([]events.Event, error) {
	var out []events.Event
	err := l.Scan(context.Background(), session, from, func(e *events.Event) error {
		out = append(out, e.Clone())
		return nil
	})
	return out, err
}

// testScanMatchesRead builds random sessions and chains of forks (a fork of
// a fork, forks inside a parent's prefix, parents that go on after the
// fork) with random batches, types, actors and payloads (empty, small,
// larger than a block), and checks that Scan sees exactly the events Read
// yields, from every seq.
func testScanMatchesRead(t *testing.T, l events.Log) {
	rng := rand.New(rand.NewPCG(7, 11))
	types := []string{"task.created", "task.claimed", "message.sent", "t", strings.Repeat("long.type", 9)}
	actors := []string{"", "alice", "bob", "carol-the-third"}
	last := map[string]uint64{}
	var ids []string
	appendRandom := func(id string, n int) {
		for n > 0 {
			size := min(n, 1+rng.IntN(40))
			batch := mkEvents(last[id]+1, size, id)
			for i := range batch {
				batch[i].Type = types[rng.IntN(len(types))]
				batch[i].Actor = actors[rng.IntN(len(actors))]
				switch rng.IntN(10) {
				case 0:
					batch[i].Payload = nil
				case 1:
					batch[i].Payload = json.RawMessage(`{"big":"` + strings.Repeat("z", 10_000+rng.IntN(20_000)) + `"}`)
				default:
					batch[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d,"s":%q}`, rng.Int64(), strings.Repeat("p", rng.IntN(300))))
				}
				if batch[i].Seq > 1 && rng.IntN(3) == 0 {
					batch[i].Cause = 1 + rng.Uint64N(batch[i].Seq-1)
				}
			}
			mustAppend(t, l, id, last[id], batch)
			last[id] += uint64(size)
			n -= size
		}
	}
	for i := range 3 {
		id := fmt.Sprintf("root%d", i)
		mustCreate(t, l, meta(id))
		ids = append(ids, id)
		appendRandom(id, rng.IntN(150))
	}
	for i := range 6 {
		parent := ids[rng.IntN(len(ids))]
		m := meta(fmt.Sprintf("fork%d", i))
		m.Parent, m.ForkSeq = parent, rng.Uint64N(last[parent]+1)
		mustCreate(t, l, m)
		ids = append(ids, m.ID)
		last[m.ID] = m.ForkSeq
		appendRandom(m.ID, rng.IntN(100))
		appendRandom(parent, rng.IntN(20)) // the parent goes on
	}
	for _, id := range ids {
		all := mustRead(t, l, id, 1)
		if uint64(len(all)) != last[id] {
			m, _ := l.Session(context.Background(), id)
			t.Fatalf("Read(%s): got %d events, want %d (meta %+v, lastseq %d)", id, len(all), last[id], m, mustLastSeq(t, l, id))
		}
		for from := uint64(0); from <= last[id]+1; from++ {
			want := all[max(from, 1)-1:]
			if from%7 == 3 { // Read from the middle too, not only sliced
				want = mustRead(t, l, id, from)
			}
			wantEvents(t, fmt.Sprintf("Scan(%s, %d)", id, from), mustScan(t, l, id, from), want)
		}
	}
}

// testScanStop: an error from fn stops the scan at once and is returned
// unchanged.
func testScanStop(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, mkEvents(1, 5, "p"))
	f := meta("f")
	f.Parent, f.ForkSeq = "p", 3
	mustCreate(t, l, f)
	mustAppend(t, l, "f", 3, mkEvents(4, 5, "f"))
	errStop := errors.New("stop here")
	for _, at := range []uint64{1, 3, 4, 8} {
		var seen []uint64
		err := l.Scan(context.Background(), "f", 1, func(e *events.Event) error {
			seen = append(seen, e.Seq)
			if e.Seq == at {
				return errStop
			}
			return nil
		})
		if err != errStop {
			t.Fatalf("Scan stopped at seq %d: got error %v, want fn's error itself", at, err)
		}
		if len(seen) != int(at) || seen[len(seen)-1] != at {
			t.Fatalf("Scan stopped at seq %d: fn saw seqs %v", at, seen)
		}
	}
	// A scan that is not stopped returns nil, and the Log is still usable.
	wantEvents(t, "Scan after stopped scans", mustScan(t, l, "f", 1), mustRead(t, l, "f", 1))
	mustAppend(t, l, "f", 8, mkEvents(9, 1, "f"))
	wantLastSeq(t, l, "f", 9)
}

// testScanBorrowed checks the borrowing contract from the side a careful
// caller sees: inside fn the event is whole, other methods (a nested Read
// or Scan) may be called, the strings may be kept, and a clone taken in fn
// stays right. Keeping the Payload itself past fn is what the contract
// forbids; whatever a Scan hands out, Read's copies are not affected.
func testScanBorrowed(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("p"))
	batch := mkEvents(1, 40, "p")
	for i := range batch {
		batch[i].Payload = json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("abc", i*20)))
		batch[i].Type = fmt.Sprintf("type.%d", i%3)
	}
	mustAppend(t, l, "p", 0, batch)
	want := withSession("p", batch)
	before := mustRead(t, l, "p", 1) // Read's copies, held across the Scans

	var (
		clones  []events.Event
		strs    []string
		ptrs    = map[*events.Event]bool{}
		borrows [][]byte // kept against the contract: only looked at, never written
	)
	err := l.Scan(ctx, "p", 1, func(e *events.Event) error {
		ptrs[e] = true
		i := len(clones)
		if !bytes.Equal(e.Payload, want[i].Payload) {
			return fmt.Errorf("seq %d: payload %s, want %s", e.Seq, e.Payload, want[i].Payload)
		}
		// A nested Read and Scan of the same events, while e is borrowed.
		nested := mustRead(t, l, "p", e.Seq)
		if len(nested) == 0 || !equalEvent(nested[0], *e) {
			return fmt.Errorf("seq %d: nested Read gives %+v, the scan %+v", e.Seq, nested, *e)
		}
		if got := mustScan(t, l, "p", e.Seq); !equalEvent(got[0], *e) {
			return fmt.Errorf("seq %d: nested Scan gives %+v, the scan %+v", e.Seq, got[0], *e)
		}
		if !bytes.Equal(e.Payload, want[i].Payload) {
			return fmt.Errorf("seq %d: payload changed by nested reads: %s", e.Seq, e.Payload)
		}
		clones = append(clones, e.Clone())
		strs = append(strs, e.Type, e.Actor, e.Session)
		borrows = append(borrows, e.Payload)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	wantEvents(t, "clones taken in fn", clones, want)
	for i, w := range want {
		if strs[3*i] != w.Type || strs[3*i+1] != w.Actor || strs[3*i+2] != w.Session {
			t.Fatalf("strings kept from seq %d: got %q %q %q, want %q %q %q",
				w.Seq, strs[3*i], strs[3*i+1], strs[3*i+2], w.Type, w.Actor, w.Session)
		}
	}
	if len(borrows) != len(want) {
		t.Fatalf("fn was called %d times, want %d", len(borrows), len(want))
	}
	wantEvents(t, "Read's copies held across the Scan", before, want)
	wantEvents(t, "Read after the Scan", mustRead(t, l, "p", 1), want)
	// Clones own their payloads: writing to one changes nothing stored.
	copy(clones[5].Payload, `{"x":"overwritten"}`)
	wantEvents(t, "Read after writing to a clone", mustRead(t, l, "p", 1), want)
	wantEvents(t, "Scan after writing to a clone", mustScan(t, l, "p", 1), want)
	t.Logf("the Scan passed %d distinct *Event for %d events", len(ptrs), len(want))
}

func equalEvent(a, b events.Event) bool {
	return a.ID == b.ID && a.Session == b.Session && a.Seq == b.Seq && a.Time == b.Time &&
		a.Type == b.Type && a.Actor == b.Actor && a.Cause == b.Cause && bytes.Equal(a.Payload, b.Payload)
}

// testScanErrors: Scan reports an unknown or invalid session, a canceled
// context and a closed Log as Read does, and a Close while fn runs stops
// the scan after fn, whose borrowed event stays readable until it returns.
func testScanErrors(t *testing.T, l events.Log) {
	ctx := context.Background()
	none := func(*events.Event) error { t.Fatal("fn called"); return nil }
	wantErrIs(t, "Scan of an unknown session", l.Scan(ctx, "nope", 1, none), events.ErrNoSession)
	wantErrIs(t, "Scan of an invalid session ID", l.Scan(ctx, "a/b", 1, none), events.ErrBadSession)

	mustCreate(t, l, meta("s"))
	want := withSession("s", mkEvents(1, 5, "a"))
	mustAppend(t, l, "s", 0, mkEvents(1, 5, "a"))
	if got := mustScan(t, l, "s", 6); len(got) != 0 {
		t.Fatalf("Scan past the last event: got %d events, want 0", len(got))
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	wantErrIs(t, "Scan with a canceled context", l.Scan(canceled, "s", 1, none), context.Canceled)

	live, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	err := l.Scan(live, "s", 1, func(*events.Event) error { n++; cancel(); return nil })
	wantErrIs(t, "Scan canceled in fn", err, context.Canceled)
	if n != 1 {
		t.Fatalf("events scanned before cancellation took effect: got %d, want 1", n)
	}

	n = 0
	err = l.Scan(ctx, "s", 1, func(e *events.Event) error {
		if n++; n == 2 {
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			// The borrowed event is still whole until fn returns.
			if !equalEvent(*e, want[1]) {
				t.Fatalf("event borrowed across Close: got %+v, want %+v", *e, want[1])
			}
		}
		return nil
	})
	wantErrIs(t, "Scan during Close", err, events.ErrClosed)
	if n != 2 {
		t.Fatalf("events scanned before Close took effect: got %d, want 2", n)
	}
	wantErrIs(t, "Scan after Close", l.Scan(ctx, "s", 1, none), events.ErrClosed)
}
