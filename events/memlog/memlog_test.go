package memlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/logtest"
	"github.com/corpsim/corpsim/events/memlog"
)

func TestConformance(t *testing.T) {
	logtest.Run(t, func(t *testing.T) events.Log { return memlog.New() })
}

// plainLog hides every optional interface of the Log it holds (Founder,
// TrustedAppender): the conformance suite then checks the fallbacks, such
// as events.Found's CreateSession and Append.
type plainLog struct{ events.Log }

func TestConformanceWithoutOptionalInterfaces(t *testing.T) {
	logtest.Run(t, func(t *testing.T) events.Log { return plainLog{memlog.New()} })
}

func TestCorrupt(t *testing.T) {
	ctx := context.Background()
	key := [32]byte{1}
	mk := func(seq uint64) events.Event {
		return events.Event{ID: events.NewID(key, 0, 0, seq), Seq: seq, Type: "t"}
	}
	newLog := func(t *testing.T) *memlog.Log {
		l := memlog.New()
		t.Cleanup(func() { l.Close() })
		if err := l.CreateSession(ctx, events.SessionMeta{ID: "p", Status: events.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, "p", 0, []events.Event{mk(1), mk(2), mk(3)}); err != nil {
			t.Fatal(err)
		}
		fork := events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 3, Status: events.StatusRunning}
		if err := l.CreateSession(ctx, fork); err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name    string
		session string // corrupted
		seq     uint64
		damage  func(b []byte) []byte
		reason  string
	}{
		{"bit flip", "p", 2, func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "checksum mismatch"},
		{"truncation", "p", 2, func(b []byte) []byte { return b[:len(b)-1] }, "checksum mismatch"},
		{"wrong seq", "p", 2, func([]byte) []byte { e := mk(3); return events.Encode(&e) }, "stored event has seq 3"},
		{"metadata", "p", 0, func(b []byte) []byte { b[0] ^= 0x20; return b }, "metadata checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLog(t)
			l.Corrupt(tt.session, tt.seq, tt.damage(l.Raw(tt.session, tt.seq)))
			var err error
			if tt.seq == 0 {
				_, err = l.Session(ctx, tt.session)
			} else {
				for _, err = range l.Read(ctx, "f", 1) { // through the fork
					if err != nil {
						break
					}
				}
				n := 0
				serr := l.Scan(ctx, "f", 1, func(*events.Event) error { n++; return nil })
				if serr == nil || serr.Error() != err.Error() || n != int(tt.seq)-1 {
					t.Fatalf("Scan: got %v after %d events, want Read's error %v after %d", serr, n, err, tt.seq-1)
				}
			}
			var ce *events.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("got error %v, want a *events.CorruptError", err)
			}
			if ce.Session != tt.session || ce.Seq != tt.seq || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("got %q (session %q, seq %d), want session %q, seq %d, reason %q",
					err, ce.Session, ce.Seq, tt.session, tt.seq, tt.reason)
			}
		})
	}
}

func TestCorruptCheckpoint(t *testing.T) {
	ctx := context.Background()
	key := [32]byte{1}
	var evs []events.Event
	for seq := uint64(1); seq <= 4; seq++ {
		evs = append(evs, events.Event{ID: events.NewID(key, 0, 0, seq), Seq: seq, Type: "t"})
	}
	other := events.EncodeCheckpoint(&events.Checkpoint{Seq: 3, StateHash: "cd"})
	tests := []struct {
		name   string
		damage func(b []byte) []byte
		reason string
	}{
		{"bit flip", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "checkpoint checksum mismatch"},
		{"truncation", func(b []byte) []byte { return b[:len(b)-1] }, "checkpoint checksum mismatch"},
		{"other seq", func([]byte) []byte { return other }, "stored checkpoint has seq 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := memlog.New()
			defer l.Close()
			if err := l.CreateSession(ctx, events.SessionMeta{ID: "p", Status: events.StatusRunning}); err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, "p", 0, evs); err != nil {
				t.Fatal(err)
			}
			if err := l.PutCheckpoint(ctx, "p", events.Checkpoint{Seq: 2, StateHash: "ab", Data: []byte("state")}); err != nil {
				t.Fatal(err)
			}
			if err := l.CreateSession(ctx, events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 4, Status: events.StatusRunning}); err != nil {
				t.Fatal(err)
			}
			l.CorruptCheckpoint("p", 2, tt.damage(l.RawCheckpoint("p", 2)))
			_, err := l.LatestCheckpoint(ctx, "f", 4) // through the fork
			wantCorruptCheckpoint(t, "LatestCheckpoint", err, "p", 2, tt.reason)
			if err := l.PutCheckpoint(ctx, "p", events.Checkpoint{Seq: 4, StateHash: "ef", Data: []byte("later")}); err != nil {
				t.Fatal(err)
			}
			// The others are listed beside the damage (events.Log's contract).
			cps, err := l.Checkpoints(ctx, "p")
			wantCorruptCheckpoint(t, "Checkpoints", err, "p", 2, tt.reason)
			if len(cps) != 1 || cps[0].Seq != 4 || !errors.As(err, new(*events.DamagedError)) {
				t.Fatalf("Checkpoints beside a damaged one: %+v, %v; want the one at 4 and a DamagedError", cps, err)
			}
			if _, err := l.LatestCheckpoint(ctx, "p", 1); !errors.Is(err, events.ErrNoCheckpoint) {
				t.Fatalf("LatestCheckpoint before the corrupt one: got %v, want ErrNoCheckpoint", err)
			}
		})
	}
}

func wantCorruptCheckpoint(tb testing.TB, what string, err error, session string, seq uint64, reason string) {
	tb.Helper()
	var ce *events.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, events.ErrCorrupt) {
		tb.Fatalf("%s: got error %v, want a *events.CorruptError", what, err)
	}
	if ce.Kind != events.CorruptCheckpoint || ce.Session != session || ce.Seq != seq || !strings.Contains(err.Error(), reason) {
		tb.Fatalf("%s: got %q (kind %q, session %q, seq %d), want a checkpoint of session %q at seq %d, reason %q",
			what, err, ce.Kind, ce.Session, ce.Seq, session, seq, reason)
	}
}

// TestScanEveryBitFlip flips each bit of a stored event in turn: Scan and
// Read, through a fork, stop at it with a *CorruptError naming the parent
// and the seq, after the events before it, and never pass it to fn.
func TestScanEveryBitFlip(t *testing.T) {
	ctx := context.Background()
	l := memlog.New()
	defer l.Close()
	key := [32]byte{2}
	var evs []events.Event
	for seq := uint64(1); seq <= 4; seq++ {
		evs = append(evs, events.Event{ID: events.NewID(key, 0, int64(seq), seq), Seq: seq, Time: int64(seq),
			Type: "task.claimed", Actor: "alice", Payload: []byte(`{"task":"t-1","busy_until":99}`)})
	}
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "p", Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, "p", 0, evs); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 4, Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	good := l.Raw("p", 3)
	for bit := range 8 * len(good) {
		bad := slices.Clone(good)
		bad[bit/8] ^= 1 << (bit % 8)
		l.Corrupt("p", 3, bad)
		var seen []uint64
		err := l.Scan(ctx, "f", 1, func(e *events.Event) error { seen = append(seen, e.Seq); return nil })
		var ce *events.CorruptError
		if !errors.As(err, &ce) || ce.Session != "p" || ce.Seq != 3 || !slices.Equal(seen, []uint64{1, 2}) {
			t.Fatalf("bit %d flipped: Scan saw %v and returned %v, want seqs [1 2] and a *CorruptError for p seq 3", bit, seen, err)
		}
		var rerr error
		for _, rerr = range l.Read(ctx, "f", 3) {
			if rerr != nil {
				break
			}
		}
		if !errors.As(rerr, &ce) || ce.Session != "p" || ce.Seq != 3 {
			t.Fatalf("bit %d flipped: Read returned %v, want a *CorruptError for p seq 3", bit, rerr)
		}
	}
}

// TestBlocks stores enough events to seal many blocks and checks reads
// from every seq, a fork inside a sealed block, corruption inside one, and
// scans racing appends: with sealed blocks compressed at once (New), on
// goroutines of their own (Options.Beside, as a run's log does: read raw
// or compressed, whichever is in), never (read raw), and every other one
// (a scan that decompresses into its buffer must never take a raw block's
// bytes for that buffer).
func TestBlocks(t *testing.T) {
	n := 0
	for when, beside := range map[string]func(func()){
		"now":   nil,
		"later": func(work func()) { go work() },
		"never": func(func()) {},
		"some": func(work func()) {
			if n++; n%2 == 0 {
				work()
			}
		},
	} {
		t.Run(when, func(t *testing.T) { testBlocks(t, when, memlog.NewWith(memlog.Options{Beside: beside})) })
	}
}

func testBlocks(t *testing.T, when string, l *memlog.Log) {
	ctx := context.Background()
	defer l.Close()
	key := [32]byte{3}
	mk := func(from uint64, n int) []events.Event {
		evs := make([]events.Event, n)
		for i := range evs {
			seq := from + uint64(i)
			evs[i] = events.Event{ID: events.NewID(key, 0, int64(seq), seq), Seq: seq, Time: int64(seq), Type: "task.claimed",
				Actor: "m" + strings.Repeat("x", int(seq%5)), Payload: []byte(`{"task":"t-` + strings.Repeat("7", int(seq%300)) + `"}`)}
		}
		return evs
	}
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "p", Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	var want []events.Event
	for len(want) < 3000 {
		batch := mk(uint64(len(want))+1, 1+len(want)%97)
		if err := l.Append(ctx, "p", uint64(len(want)), batch); err != nil {
			t.Fatal(err)
		}
		want = append(want, batch...)
	}
	for i := range want {
		want[i].Session = "p"
	}
	if n := l.Blocks("p"); n < 5 {
		t.Fatalf("sealed blocks: got %d, want several", n)
	}
	switch n, c := l.Blocks("p"), l.Compressed("p"); {
	case when == "now" && c != n:
		t.Fatalf("compressed at once: %d of %d sealed blocks compressed", c, n)
	case when == "never" && c != 0:
		t.Fatalf("never compressed: %d of %d sealed blocks compressed", c, n)
	case when == "some" && (c == 0 || c == n):
		t.Fatalf("every other one compressed: %d of %d sealed blocks compressed", c, n)
	}
	read := func(id string, from uint64) ([]events.Event, []events.Event) {
		var got []events.Event
		for e, err := range l.Read(ctx, id, from) {
			if err != nil {
				t.Fatalf("Read(%s, %d): %v", id, from, err)
			}
			got = append(got, e)
		}
		var scanned []events.Event
		if err := l.Scan(ctx, id, from, func(e *events.Event) error { scanned = append(scanned, e.Clone()); return nil }); err != nil {
			t.Fatalf("Scan(%s, %d): %v", id, from, err)
		}
		return got, scanned
	}
	for from := uint64(1); from <= uint64(len(want))+1; from += 37 {
		got, scanned := read("p", from)
		if !reflect.DeepEqual(got, want[from-1:]) && !(len(got) == 0 && int(from) > len(want)) {
			t.Fatalf("Read(p, %d): %d events, not the %d stored", from, len(got), len(want[from-1:]))
		}
		if !reflect.DeepEqual(scanned, got) {
			t.Fatalf("Scan(p, %d): %d events, not Read's %d", from, len(scanned), len(got))
		}
	}
	// A fork inside a sealed block.
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 1234, Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	own := mk(1235, 10)
	if err := l.Append(ctx, "f", 1234, own); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, "f", 1230, mk(1231, 4)); err != nil { // an idempotent retry reads sealed blocks
		t.Fatalf("retry of the parent's events under the fork: %v", err)
	}
	// A long retry spans several sealed blocks (each decompressed once for
	// the whole comparison); a changed event in the middle is a conflict.
	if err := l.Append(ctx, "p", 100, mk(101, 2500)); err != nil {
		t.Fatalf("retry of 2,500 stored events: %v", err)
	}
	changed := mk(101, 2500)
	changed[1700].Time++
	if err := l.Append(ctx, "p", 100, changed); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("retry with event 1801 changed: got %v, want ErrConflict", err)
	}
	got, scanned := read("f", 1200)
	if len(got) != 35+10 || !reflect.DeepEqual(got[:35], want[1199:1234]) || got[35].Session != "f" || !reflect.DeepEqual(scanned, got) {
		t.Fatalf("Read(f, 1200): got %d events", len(got))
	}
	// Scans racing appends see a consistent prefix.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 20 {
				var prev uint64
				err := l.Scan(ctx, "p", 1, func(e *events.Event) error {
					if e.Seq != prev+1 || !bytes.Equal(e.Payload, mk(e.Seq, 1)[0].Payload) {
						return fmt.Errorf("seq %d after %d, payload %s", e.Seq, prev, e.Payload)
					}
					prev = e.Seq
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	last := uint64(len(want))
	for range 200 {
		if err := l.Append(ctx, "p", last, mk(last+1, 13)); err != nil {
			t.Fatal(err)
		}
		last += 13
	}
	wg.Wait()
	// Corruption inside a sealed block names its seq.
	bad := l.Raw("p", 700)
	bad[len(bad)/2] ^= 0x10
	l.Corrupt("p", 700, bad)
	n := 0
	err := l.Scan(ctx, "f", 1, func(*events.Event) error { n++; return nil })
	var ce *events.CorruptError
	if !errors.As(err, &ce) || ce.Session != "p" || ce.Seq != 700 || n != 699 {
		t.Fatalf("Scan over a corrupt event in a sealed block: %v after %d events", err, n)
	}
}

// A window that never fills is a Log like any other.
func TestConformanceOfAWindow(t *testing.T) {
	logtest.Run(t, func(t *testing.T) events.Log { return memlog.NewWindow(1 << 30) })
}

// A window keeps at least its latest events, drops older ones a block at a
// time, refuses to read them with ErrTrimmed naming the session and seq,
// and keeps what it holds bounded however long the session runs. Readers
// started before a trim finish what they began.
func TestWindowKeepsTheLatest(t *testing.T) {
	t.Run("compressed at once", func(t *testing.T) { testWindowKeepsTheLatest(t, memlog.NewWindow(windowKeep)) })
	// As run --ephemeral makes it: compressed on goroutines of their own.
	t.Run("compressed beside", func(t *testing.T) {
		testWindowKeepsTheLatest(t, memlog.NewWith(memlog.Options{Keep: windowKeep, Beside: func(work func()) { go work() }}))
	})
}

// windowKeep is the window of TestWindowKeepsTheLatest.
const windowKeep = 2000

func testWindowKeepsTheLatest(t *testing.T, l *memlog.Log) {
	ctx := context.Background()
	const keep, total = windowKeep, 60000
	defer l.Close()
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "s", Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	key := [32]byte{7}
	payload := []byte(`{"task":"T-000000","work":3600000,"until":1234567,"seen":42}`)
	var wg sync.WaitGroup
	maxHeld := 0
	for seq := uint64(1); seq <= total; seq += 100 {
		batch := make([]events.Event, 100)
		for i := range batch {
			batch[i] = events.Event{ID: events.NewID(key, 0, 0, seq+uint64(i)), Seq: seq + uint64(i), Type: "ticket.served", Payload: payload}
		}
		if err := l.Append(ctx, "s", seq-1, batch); err != nil {
			t.Fatal(err)
		}
		if seq%10000 == 1 {
			// A reader of the whole window: it begins here (its first
			// event read, so its view of the log taken) and finishes
			// while the appends go on and trim what it reads.
			last := seq + 99
			from := uint64(1)
			if last > keep {
				from = last - keep + 1
			}
			next, stop := iter.Pull2(l.Read(ctx, "s", from))
			ev, err, _ := next()
			if err != nil || ev.Seq != from {
				t.Fatalf("reading the window from %d: seq %d, %v", from, ev.Seq, err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer stop()
				for want := from + 1; want <= last; want++ {
					ev, err, ok := next()
					if !ok || err != nil || ev.Seq != want {
						t.Errorf("reading the window from %d: seq %d (want %d), %v, %v", from, ev.Seq, want, ok, err)
						return
					}
				}
			}()
		}
		maxHeld = max(maxHeld, l.Held("s"))
	}
	wg.Wait()
	last, err := l.LastSeq(ctx, "s")
	if err != nil || last != total {
		t.Fatalf("LastSeq %d, %v; want %d", last, err, total)
	}
	n := 0
	for ev, err := range l.Read(ctx, "s", total-keep+1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != total-keep+1+uint64(n) || string(ev.Payload) != string(payload) {
			t.Fatalf("event %d of the window is seq %d %s", n, ev.Seq, ev.Payload)
		}
		n++
	}
	if n != keep {
		t.Fatalf("the window reads %d events, want %d", n, keep)
	}
	for _, from := range []uint64{1, total / 2} {
		var err error
		for _, err = range l.Read(ctx, "s", from) {
			if err != nil {
				break
			}
		}
		if !errors.Is(err, events.ErrTrimmed) || !strings.Contains(err.Error(), fmt.Sprintf("session s seq %d", from)) {
			t.Errorf("reading from %d: got %v, want ErrTrimmed naming session s and seq %d", from, err, from)
		}
	}
	// Held counts the events stored: the window, its block's worth more.
	if maxHeld > 2*keep {
		t.Errorf("the log held up to %d events, want at most twice the window of %d", maxHeld, keep)
	}
}

// A session's metadata that does not decode hides no other session:
// Sessions lists them with a *events.DamagedError naming it.
func TestSessionsBesideDamagedMetadata(t *testing.T) {
	ctx := context.Background()
	l := memlog.New()
	defer l.Close()
	for _, id := range []string{"a", "b", "c"} {
		if err := l.CreateSession(ctx, events.SessionMeta{ID: id, Status: events.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	l.Corrupt("b", 0, []byte("scrambled"))
	ms, err := l.Sessions(ctx)
	var ce *events.CorruptError
	if len(ms) != 2 || ms[0].ID != "a" || ms[1].ID != "c" || !errors.As(err, new(*events.DamagedError)) || !errors.As(err, &ce) || ce.Session != "b" {
		t.Fatalf("Sessions: %+v, %v; want a and c, and b named damaged", ms, err)
	}
}
