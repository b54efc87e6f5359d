package logtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// Checkpoint helpers.

// mkCheckpoint returns a valid checkpoint after seq. salt changes its hash
// and data, so checkpoints of different sessions at the same seq differ.
func mkCheckpoint(seq uint64, salt string) events.Checkpoint {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", salt, seq)))
	return events.Checkpoint{
		Seq:       seq,
		StateHash: hex.EncodeToString(h[:]),
		Data:      []byte(fmt.Sprintf(`state of %s after %d`, salt, seq)),
	}
}

// header returns cp without its data, as Checkpoints lists it.
func header(cp events.Checkpoint) events.Checkpoint {
	cp.Data = nil
	return cp
}

func mustPutCheckpoint(tb testing.TB, l events.Log, session string, cp events.Checkpoint) {
	tb.Helper()
	if err := l.PutCheckpoint(context.Background(), session, cp); err != nil {
		tb.Fatalf("PutCheckpoint(%s, seq %d): %v", session, cp.Seq, err)
	}
}

func mustCheckpoints(tb testing.TB, l events.Log, session string) []events.Checkpoint {
	tb.Helper()
	cps, err := l.Checkpoints(context.Background(), session)
	if err != nil {
		tb.Fatalf("Checkpoints(%s): %v", session, err)
	}
	return cps
}

// wantLatest checks LatestCheckpoint(session, atOrBefore) against want; a
// zero want means ErrNoCheckpoint.
func wantLatest(tb testing.TB, l events.Log, session string, atOrBefore uint64, want events.Checkpoint) {
	tb.Helper()
	got, err := l.LatestCheckpoint(context.Background(), session, atOrBefore)
	if want.Seq == 0 {
		if !errors.Is(err, events.ErrNoCheckpoint) {
			tb.Fatalf("LatestCheckpoint(%s, %d): got %+v, %v; want ErrNoCheckpoint", session, atOrBefore, got, err)
		}
		return
	}
	if err != nil {
		tb.Fatalf("LatestCheckpoint(%s, %d): %v", session, atOrBefore, err)
	}
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("LatestCheckpoint(%s, %d):\ngot  seq %d hash %s data %q\nwant seq %d hash %s data %q",
			session, atOrBefore, got.Seq, got.StateHash, got.Data, want.Seq, want.StateHash, want.Data)
	}
}

func wantCheckpointList(tb testing.TB, l events.Log, session string, want ...events.Checkpoint) {
	tb.Helper()
	got := mustCheckpoints(tb, l, session)
	hs := make([]events.Checkpoint, len(want))
	for i, cp := range want {
		hs[i] = header(cp)
	}
	if len(got) != len(hs) || len(got) > 0 && !reflect.DeepEqual(got, hs) {
		tb.Fatalf("Checkpoints(%s):\ngot  %+v\nwant %+v", session, got, hs)
	}
}

// Tests.

func testCheckpoints(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	wantCheckpointList(t, l, "s")
	wantLatest(t, l, "s", 0, events.Checkpoint{})
	mustAppend(t, l, "s", 0, mkEvents(1, 20, "a"))
	wantLatest(t, l, "s", 20, events.Checkpoint{})

	cps := map[uint64]events.Checkpoint{}
	// Out of order, to check that the log sorts them.
	for _, seq := range []uint64{10, 5, 20, 1, 15} {
		cps[seq] = mkCheckpoint(seq, "s")
		mustPutCheckpoint(t, l, "s", cps[seq])
	}
	wantCheckpointList(t, l, "s", cps[1], cps[5], cps[10], cps[15], cps[20])

	tests := []struct {
		atOrBefore uint64
		want       uint64 // 0: ErrNoCheckpoint
	}{
		{0, 0},
		{1, 1},
		{2, 1},
		{4, 1},
		{5, 5},
		{9, 5},
		{10, 10},
		{19, 15},
		{20, 20},
		{21, 20},
		{1 << 40, 20},
		{math.MaxUint64, 20},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("at or before ", tt.atOrBefore), func(t *testing.T) {
			wantLatest(t, l, "s", tt.atOrBefore, cps[tt.want])
		})
	}

	t.Run("other sessions", func(t *testing.T) {
		// A session whose ID extends "s" shares none of its checkpoints.
		mustCreate(t, l, meta("s2"))
		mustAppend(t, l, "s2", 0, mkEvents(1, 3, "b"))
		wantLatest(t, l, "s2", 3, events.Checkpoint{})
		wantCheckpointList(t, l, "s2")
		mustPutCheckpoint(t, l, "s2", mkCheckpoint(3, "s2"))
		wantLatest(t, l, "s", 3, cps[1])
		wantCheckpointList(t, l, "s", cps[1], cps[5], cps[10], cps[15], cps[20])
		// Checkpoints are not events.
		if got := len(mustRead(t, l, "s", 1)); got != 20 {
			t.Fatalf("Read(s): got %d events, want 20", got)
		}
		wantLastSeq(t, l, "s", 20)
	})
}

func testCheckpointReplace(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 6, "a"))
	first, second := mkCheckpoint(4, "first"), mkCheckpoint(4, "second")
	second.Data = bytes.Repeat([]byte("longer "), 100)
	mustPutCheckpoint(t, l, "s", mkCheckpoint(2, "s"))
	mustPutCheckpoint(t, l, "s", first)
	mustPutCheckpoint(t, l, "s", mkCheckpoint(6, "s"))
	wantLatest(t, l, "s", 5, first)
	mustPutCheckpoint(t, l, "s", second)
	wantLatest(t, l, "s", 5, second)
	wantCheckpointList(t, l, "s", mkCheckpoint(2, "s"), second, mkCheckpoint(6, "s"))
	// Replacing with the same checkpoint is harmless.
	mustPutCheckpoint(t, l, "s", second)
	wantLatest(t, l, "s", 4, second)
	wantCheckpointList(t, l, "s", mkCheckpoint(2, "s"), second, mkCheckpoint(6, "s"))
}

func testCheckpointValidation(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("empty"))
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 5, "a"))
	f := meta("f")
	f.Parent, f.ForkSeq = "s", 3
	mustCreate(t, l, f)

	tests := []struct {
		name    string
		session string
		edit    func(cp *events.Checkpoint)
	}{
		{"seq zero", "s", func(cp *events.Checkpoint) { cp.Seq = 0 }},
		{"seq beyond last", "s", func(cp *events.Checkpoint) { cp.Seq = 6 }},
		{"far beyond last", "s", func(cp *events.Checkpoint) { cp.Seq = math.MaxUint64 }},
		{"empty session", "empty", func(cp *events.Checkpoint) { cp.Seq = 1 }},
		{"fork beyond its last", "f", func(cp *events.Checkpoint) { cp.Seq = 4 }},
		{"empty hash", "s", func(cp *events.Checkpoint) { cp.StateHash = "" }},
		{"uppercase hash", "s", func(cp *events.Checkpoint) { cp.StateHash = strings.ToUpper(cp.StateHash) }},
		{"odd hash", "s", func(cp *events.Checkpoint) { cp.StateHash = cp.StateHash[1:] }},
		{"non-hex hash", "s", func(cp *events.Checkpoint) { cp.StateHash = "0g" }},
		{"long hash", "s", func(cp *events.Checkpoint) {
			cp.StateHash = strings.Repeat("ab", events.MaxStateHashLen/2+1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := mkCheckpoint(2, "bad")
			tt.edit(&cp)
			err := l.PutCheckpoint(ctx, tt.session, cp)
			wantErrIs(t, "PutCheckpoint", err, events.ErrBadCheckpoint)
			if !strings.Contains(err.Error(), tt.session) {
				t.Fatalf("PutCheckpoint error %q: want it to name session %s", err, tt.session)
			}
			wantCheckpointList(t, l, tt.session)
		})
	}
	t.Run("bounds", func(t *testing.T) {
		mustPutCheckpoint(t, l, "s", mkCheckpoint(1, "s"))
		mustPutCheckpoint(t, l, "s", mkCheckpoint(5, "s"))
		mustPutCheckpoint(t, l, "f", mkCheckpoint(3, "f"))
		mustPutCheckpoint(t, l, "f", mkCheckpoint(1, "f")) // in the parent's prefix
		wantCheckpointList(t, l, "s", mkCheckpoint(1, "s"), mkCheckpoint(5, "s"))
		wantCheckpointList(t, l, "f", mkCheckpoint(1, "f"), mkCheckpoint(3, "f"))
	})
	t.Run("bad session id", func(t *testing.T) {
		wantErrIs(t, "PutCheckpoint", l.PutCheckpoint(ctx, "a/b", mkCheckpoint(1, "a")), events.ErrBadSession)
		_, err := l.LatestCheckpoint(ctx, "", 1)
		wantErrIs(t, "LatestCheckpoint", err, events.ErrBadSession)
		_, err = l.Checkpoints(ctx, "a b")
		wantErrIs(t, "Checkpoints", err, events.ErrBadSession)
	})
}

func testCheckpointFork(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, mkEvents(1, 10, "p"))
	p := func(seq uint64) events.Checkpoint { return mkCheckpoint(seq, "p") }
	fc := func(seq uint64) events.Checkpoint { return mkCheckpoint(seq, "f") }
	for _, seq := range []uint64{2, 4, 6, 8} {
		mustPutCheckpoint(t, l, "p", p(seq))
	}
	f := meta("f")
	f.Parent, f.ForkSeq = "p", 5
	mustCreate(t, l, f)

	// The fork inherits its parent's checkpoints up to ForkSeq only.
	wantLatest(t, l, "f", 1, events.Checkpoint{})
	wantLatest(t, l, "f", 3, p(2))
	wantLatest(t, l, "f", 5, p(4))
	wantLatest(t, l, "f", 100, p(4))
	wantCheckpointList(t, l, "f")

	// A parent's checkpoint in the prefix, stored after the fork, is
	// inherited; one after ForkSeq is not.
	mustPutCheckpoint(t, l, "p", p(5))
	mustPutCheckpoint(t, l, "p", p(9))
	wantLatest(t, l, "f", 100, p(5))

	// The fork's own checkpoints in the prefix: the newest wins, and at
	// equal seq the fork's own.
	mustPutCheckpoint(t, l, "f", fc(2))
	wantLatest(t, l, "f", 3, fc(2)) // the parent's 2 is looked at, and loses
	wantLatest(t, l, "p", 3, p(2))
	mustPutCheckpoint(t, l, "f", fc(3))
	wantLatest(t, l, "f", 5, p(5))
	wantLatest(t, l, "f", 3, fc(3))
	mustPutCheckpoint(t, l, "f", fc(5))
	wantLatest(t, l, "f", 5, fc(5))
	wantLatest(t, l, "f", 4, p(4))
	wantCheckpointList(t, l, "f", fc(2), fc(3), fc(5))

	// After the fork's own events.
	mustAppend(t, l, "f", 5, mkEvents(6, 4, "f"))
	mustPutCheckpoint(t, l, "f", fc(7))
	wantLatest(t, l, "f", 6, fc(5))
	wantLatest(t, l, "f", 8, fc(7)) // not the parent's 8
	wantLatest(t, l, "f", 100, fc(7))

	// The parent sees none of the fork's checkpoints.
	wantLatest(t, l, "p", 5, p(5))
	wantLatest(t, l, "p", 7, p(6))
	wantLatest(t, l, "p", 100, p(9))
	wantCheckpointList(t, l, "p", p(2), p(4), p(5), p(6), p(8), p(9))

	t.Run("fork of a fork", func(t *testing.T) {
		g := meta("g")
		g.Parent, g.ForkSeq = "f", 8
		mustCreate(t, l, g)
		wantLatest(t, l, "g", 100, fc(7))
		wantLatest(t, l, "g", 6, fc(5))
		wantLatest(t, l, "g", 4, p(4)) // two levels up
		wantLatest(t, l, "g", 1, events.Checkpoint{})
		mustAppend(t, l, "g", 8, mkEvents(9, 1, "g"))
		mustPutCheckpoint(t, l, "g", mkCheckpoint(9, "g"))
		wantLatest(t, l, "g", 9, mkCheckpoint(9, "g"))
		wantLatest(t, l, "f", 9, fc(7))
	})
	t.Run("fork at zero", func(t *testing.T) {
		z := meta("z")
		z.Parent = "p"
		mustCreate(t, l, z)
		wantLatest(t, l, "z", 100, events.Checkpoint{})
	})
	t.Run("fork at a checkpoint", func(t *testing.T) {
		e := meta("e")
		e.Parent, e.ForkSeq = "p", 8
		mustCreate(t, l, e)
		wantLatest(t, l, "e", 8, p(8))
		wantLatest(t, l, "e", math.MaxUint64, p(8))
	})
}

func testCheckpointsAreCopies(t *testing.T, l events.Log) {
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 3, "a"))
	cp := mkCheckpoint(2, "s")
	want := mkCheckpoint(2, "s")
	mustPutCheckpoint(t, l, "s", cp)
	copy(cp.Data, "CHANGED")
	wantLatest(t, l, "s", 2, want)
	got, err := l.LatestCheckpoint(context.Background(), "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	copy(got.Data, "CHANGED")
	wantLatest(t, l, "s", 2, want)

	t.Run("empty data", func(t *testing.T) {
		cp := mkCheckpoint(1, "s")
		cp.Data = []byte{}
		mustPutCheckpoint(t, l, "s", cp)
		cp.Data = nil // empty data comes back nil
		wantLatest(t, l, "s", 1, cp)
	})
	t.Run("large data", func(t *testing.T) {
		cp := mkCheckpoint(3, "s")
		cp.Data = bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18) // 1 MiB, not text
		mustPutCheckpoint(t, l, "s", cp)
		wantLatest(t, l, "s", 3, cp)
	})
}

// testConcurrentCheckpoints appends, checkpoints and looks checkpoints up
// at the same time: every checkpoint found is one that was stored.
func testConcurrentCheckpoints(t *testing.T, l events.Log) {
	ctx := context.Background()
	mustCreate(t, l, meta("s"))
	const (
		rounds   = 50
		perBatch = 4
	)
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	wg.Add(3)
	go func() { // appends, and checkpoints each batch it appended
		defer wg.Done()
		for r := range rounds {
			last := uint64(r * perBatch)
			if err := l.Append(ctx, "s", last, mkEvents(last+1, perBatch, "a")); err != nil {
				errc <- err
				return
			}
			if err := l.PutCheckpoint(ctx, "s", mkCheckpoint(last+perBatch, "s")); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() { // checkpoints whatever is the last seq
		defer wg.Done()
		for range rounds {
			last, err := l.LastSeq(ctx, "s")
			if err != nil {
				errc <- err
				return
			}
			if last == 0 {
				continue
			}
			if err := l.PutCheckpoint(ctx, "s", mkCheckpoint(last, "s")); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() { // reads
		defer wg.Done()
		for range rounds {
			cp, err := l.LatestCheckpoint(ctx, "s", math.MaxUint64)
			if errors.Is(err, events.ErrNoCheckpoint) {
				continue
			}
			if err != nil {
				errc <- err
				return
			}
			if want := mkCheckpoint(cp.Seq, "s"); !reflect.DeepEqual(cp, want) {
				errc <- fmt.Errorf("LatestCheckpoint: got %+v, want %+v", cp, want)
				return
			}
			if _, err := l.Checkpoints(ctx, "s"); err != nil {
				errc <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	wantLatest(t, l, "s", math.MaxUint64, mkCheckpoint(rounds*perBatch, "s"))
	for i, cp := range mustCheckpoints(t, l, "s") {
		if want := header(mkCheckpoint(cp.Seq, "s")); !reflect.DeepEqual(cp, want) {
			t.Fatalf("checkpoint %d: got %+v, want %+v", i, cp, want)
		}
	}
}
