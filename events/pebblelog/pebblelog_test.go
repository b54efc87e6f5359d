package pebblelog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/logtest"
	"github.com/corpsim/corpsim/events/pebblelog"
)

func TestConformance(t *testing.T) {
	logtest.Run(t, func(t *testing.T) events.Log {
		return mustOpen(t, t.TempDir(), pebblelog.Options{})
	})
}

func TestConformanceMemFS(t *testing.T) {
	logtest.Run(t, func(t *testing.T) events.Log {
		return mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
	})
}

func mustOpen(tb testing.TB, dir string, opts pebblelog.Options) *pebblelog.Log {
	tb.Helper()
	l, err := pebblelog.Open(dir, opts)
	if err != nil {
		tb.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

var idKey = [32]byte{1, 2, 3}

func mkEvents(from uint64, n int) []events.Event {
	evs := make([]events.Event, n)
	for i := range evs {
		seq := from + uint64(i)
		evs[i] = events.Event{
			ID:      events.NewID(idKey, 1_700_000_000_000, int64(seq)*10, seq),
			Seq:     seq,
			Time:    int64(seq) * 10,
			Type:    "test.event",
			Actor:   "alice",
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq)),
		}
	}
	return evs
}

func meta(id string) events.SessionMeta {
	return events.SessionMeta{ID: id, World: "w", Seed: 7, Created: "2025-01-01T00:00:00Z", Status: events.StatusRunning}
}

func mustCreate(tb testing.TB, l events.Log, m events.SessionMeta) {
	tb.Helper()
	if err := l.CreateSession(context.Background(), m); err != nil {
		tb.Fatalf("CreateSession(%s): %v", m.ID, err)
	}
}

func mustAppend(tb testing.TB, l events.Log, id string, last uint64, batch []events.Event) {
	tb.Helper()
	if err := l.Append(context.Background(), id, last, batch); err != nil {
		tb.Fatalf("Append(%s, %d): %v", id, last, err)
	}
}

// readAll returns the events Read yields and the error that stopped it.
func readAll(l events.Log, id string, from uint64) ([]events.Event, error) {
	var out []events.Event
	for e, err := range l.Read(context.Background(), id, from) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func wantCorrupt(tb testing.TB, what string, err error, session string, seq uint64, reason string) {
	tb.Helper()
	if !errors.Is(err, events.ErrCorrupt) {
		tb.Fatalf("%s: got error %v, want one wrapping ErrCorrupt", what, err)
	}
	var ce *events.CorruptError
	if !errors.As(err, &ce) {
		tb.Fatalf("%s: got %T %v, want a *events.CorruptError", what, err, err)
	}
	if ce.Session != session || ce.Seq != seq {
		tb.Fatalf("%s: got corruption at session %q seq %d, want session %q seq %d", what, ce.Session, ce.Seq, session, seq)
	}
	if !strings.Contains(err.Error(), reason) {
		tb.Fatalf("%s: got error %q, want it to contain %q", what, err, reason)
	}
}

// scanAll returns clones of the events Scan passes to fn and its error.
func scanAll(l events.Log, id string, from uint64) ([]events.Event, error) {
	var out []events.Event
	err := l.Scan(context.Background(), id, from, func(e *events.Event) error {
		out = append(out, e.Clone())
		return nil
	})
	return out, err
}

// TestScanEveryBitFlip stores each one-bit corruption of an event of a
// fork's parent in turn: Scan through the fork stops at it with a
// *CorruptError naming the parent and the seq, after the events before it.
func TestScanEveryBitFlip(t *testing.T) {
	l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem(), NoSync: true})
	defer l.Close()
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, mkEvents(1, 4))
	f := meta("f")
	f.Parent, f.ForkSeq = "p", 4
	mustCreate(t, l, f)
	good := events.Encode(&mkEvents(3, 1)[0])
	for bit := range 8 * len(good) {
		bad := bytes.Clone(good)
		bad[bit/8] ^= 1 << (bit % 8)
		if err := l.DB().Set(pebblelog.EventKey("p", 3), bad, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		got, err := scanAll(l, "f", 1)
		var ce *events.CorruptError
		if !errors.As(err, &ce) || ce.Session != "p" || ce.Seq != 3 || len(got) != 2 {
			t.Fatalf("bit %d flipped: Scan saw %d events and returned %v, want 2 and a *CorruptError for p seq 3", bit, len(got), err)
		}
	}
}

// TestCorruptEvent writes damaged values behind the Log's back and checks
// that Read stops at them with a *CorruptError naming session and seq.
func TestCorruptEvent(t *testing.T) {
	good := events.Encode(&mkEvents(3, 1)[0])
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		return b
	}
	tests := []struct {
		name    string
		value   []byte // stored at seq 3
		wantSeq uint64
		reason  string
	}{
		{"bit flip in payload", flip(8 * (len(good) - 6)), 3, "checksum mismatch"},
		{"bit flip in checksum", flip(8*len(good) - 1), 3, "checksum mismatch"},
		{"bit flip in id", flip(8 * 5), 3, "checksum mismatch"},
		{"bit flip in version", flip(1), 3, "unknown version 3"},
		{"truncated", good[:len(good)-1], 3, "checksum mismatch"},
		{"truncated to 3 bytes", good[:3], 3, "truncated"},
		{"empty", nil, 3, "truncated"},
		{"event of another seq", events.Encode(&mkEvents(9, 1)[0]), 3, "stored event has seq 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
			defer l.Close()
			mustCreate(t, l, meta("s1"))
			mustAppend(t, l, "s1", 0, mkEvents(1, 5))
			if err := l.DB().Set(pebblelog.EventKey("s1", 3), tt.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			got, err := readAll(l, "s1", 1)
			wantCorrupt(t, "Read", err, "s1", tt.wantSeq, tt.reason)
			if len(got) != 2 {
				t.Fatalf("events before the corruption: got %d, want 2", len(got))
			}
			got, serr := scanAll(l, "s1", 1)
			wantCorrupt(t, "Scan", serr, "s1", tt.wantSeq, tt.reason)
			if len(got) != 2 || serr.Error() != err.Error() {
				t.Fatalf("Scan: got %d events and %q, want 2 and Read's %q", len(got), serr, err)
			}
			if !strings.HasPrefix(err.Error(), "events: corrupt event in session s1 at seq 3: ") {
				t.Fatalf("Read error: got %q, want prefix %q", err, "events: corrupt event in session s1 at seq 3: ")
			}
			// An idempotent retry over the corrupt event reports it too.
			wantCorrupt(t, "Append retry", l.Append(context.Background(), "s1", 2, mkEvents(3, 1)), "s1", 3, tt.reason)
		})
	}
}

// TestCorruptLayout damages the key space itself: missing events and keys
// that do not hold a seq.
func TestCorruptLayout(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(db *pebble.DB) error
		wantSeq uint64
		reason  string
	}{
		{"missing event", func(db *pebble.DB) error {
			return db.Delete(pebblelog.EventKey("s1", 3), pebble.Sync)
		}, 3, "event missing (next stored is seq 4)"},
		{"short key first", func(db *pebble.DB) error {
			return db.Set([]byte("e/s1/\x00"), []byte("x"), pebble.Sync)
		}, 1, "malformed key"},
		{"short key after the last", func(db *pebble.DB) error {
			return db.Set([]byte("e/s1/\x00\x00\x00\x00\x00\x00\x06"), []byte("x"), pebble.Sync)
		}, 6, "malformed key"},
		{"seq zero", func(db *pebble.DB) error {
			return db.Set(pebblelog.EventKey("s1", 0), []byte("x"), pebble.Sync)
		}, 1, "malformed key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
			defer l.Close()
			mustCreate(t, l, meta("s1"))
			mustAppend(t, l, "s1", 0, mkEvents(1, 5))
			if err := tt.damage(l.DB()); err != nil {
				t.Fatal(err)
			}
			_, err := readAll(l, "s1", 1)
			wantCorrupt(t, "Read", err, "s1", tt.wantSeq, tt.reason)
			_, err = scanAll(l, "s1", 1)
			wantCorrupt(t, "Scan", err, "s1", tt.wantSeq, tt.reason)
		})
	}
	t.Run("missing event of a fork's parent", func(t *testing.T) {
		l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
		defer l.Close()
		mustCreate(t, l, meta("p"))
		mustAppend(t, l, "p", 0, mkEvents(1, 5))
		f := meta("f")
		f.Parent, f.ForkSeq = "p", 5
		mustCreate(t, l, f)
		if err := l.DB().Delete(pebblelog.EventKey("p", 5), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(l, "f", 1)
		wantCorrupt(t, "Read(f)", err, "p", 5, "event missing")
		if len(got) != 4 {
			t.Fatalf("events before the corruption: got %d, want 4", len(got))
		}
		got, err = scanAll(l, "f", 1)
		wantCorrupt(t, "Scan(f)", err, "p", 5, "event missing")
		if len(got) != 4 {
			t.Fatalf("events scanned before the corruption: got %d, want 4", len(got))
		}
	})
	t.Run("malformed last key", func(t *testing.T) {
		l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
		defer l.Close()
		mustCreate(t, l, meta("s1"))
		mustAppend(t, l, "s1", 0, mkEvents(1, 2))
		if err := l.DB().Set([]byte("e/s1/\xff"), []byte("x"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		l.ForgetCache()
		_, err := l.LastSeq(context.Background(), "s1")
		wantCorrupt(t, "LastSeq", err, "s1", 1, "malformed last key")
	})
}

func TestCorruptMeta(t *testing.T) {
	good, err := events.EncodeMeta(&events.SessionMeta{ID: "s1", Status: events.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	other, err := events.EncodeMeta(&events.SessionMeta{ID: "s2", Status: events.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[3] ^= 0x10
	tests := []struct {
		name   string
		value  []byte
		reason string
	}{
		{"bit flip", flipped, "metadata checksum mismatch"},
		{"truncated", good[:len(good)-2], "metadata checksum mismatch"},
		{"empty", nil, "truncated metadata"},
		{"other session's metadata", other, `metadata names session "s2"`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
			defer l.Close()
			mustCreate(t, l, meta("s0"))
			mustCreate(t, l, meta("s1"))
			mustAppend(t, l, "s1", 0, mkEvents(1, 2))
			if err := l.DB().Set(pebblelog.MetaKey("s1"), tt.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			l.ForgetCache()
			_, err := l.Session(ctx, "s1")
			wantCorrupt(t, "Session", err, "s1", 0, tt.reason)
			if want := "events: corrupt metadata of session s1: "; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Session error: got %q, want prefix %q", err, want)
			}
			_, err = l.Sessions(ctx)
			wantCorrupt(t, "Sessions", err, "s1", 0, tt.reason)
			_, err = readAll(l, "s1", 1)
			wantCorrupt(t, "Read", err, "s1", 0, tt.reason)
			wantCorrupt(t, "Append", l.Append(ctx, "s1", 2, mkEvents(3, 1)), "s1", 0, tt.reason)
			wantCorrupt(t, "CreateSession", l.CreateSession(ctx, meta("s1")), "s1", 0, tt.reason)
			wantCorrupt(t, "UpdateSession", l.UpdateSession(ctx, meta("s1")), "s1", 0, tt.reason)
			// Other sessions are unaffected.
			if _, err := l.Session(ctx, "s0"); err != nil {
				t.Fatalf("Session(s0): %v", err)
			}
		})
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, pebblelog.Options{})
	mustCreate(t, l, meta("s1"))
	mustCreate(t, l, meta("s2"))
	mustAppend(t, l, "s1", 0, mkEvents(1, 3))
	mustAppend(t, l, "s1", 3, mkEvents(4, 2))
	mustAppend(t, l, "s2", 0, mkEvents(1, 1))
	f := meta("f")
	f.Parent, f.ForkSeq = "s1", 2
	mustCreate(t, l, f)
	mustAppend(t, l, "f", 2, mkEvents(3, 1))
	wantSessions, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	l = mustOpen(t, dir, pebblelog.Options{})
	defer l.Close()
	got, err := l.Sessions(ctx)
	if err != nil || !reflect.DeepEqual(got, wantSessions) {
		t.Fatalf("Sessions after reopen: got %+v, %v; want %+v", got, err, wantSessions)
	}
	for _, tt := range []struct {
		id   string
		last uint64
	}{{"s1", 5}, {"s2", 1}, {"f", 3}} {
		last, err := l.LastSeq(ctx, tt.id)
		if err != nil || last != tt.last {
			t.Fatalf("LastSeq(%s) after reopen: got %d, %v; want %d", tt.id, last, err, tt.last)
		}
	}
	evs, err := readAll(l, "s1", 1)
	if err != nil || len(evs) != 5 {
		t.Fatalf("Read(s1) after reopen: got %d events, %v; want 5", len(evs), err)
	}
	if err := l.Append(ctx, "s1", 4, mkEvents(5, 1)); err != nil {
		t.Fatalf("idempotent retry after reopen: %v", err)
	}
	if err := l.Append(ctx, "s1", 4, mkEvents(5, 2)); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("stale append after reopen: got %v, want ErrConflict", err)
	}
	mustAppend(t, l, "s1", 5, mkEvents(6, 1))
	if _, err := pebblelog.Open(dir, pebblelog.Options{}); err == nil {
		t.Fatal("second Open of a directory in use: got nil error, want the lock error")
	}
}

// TestCrash checks that every acknowledged Append survives a crash that
// loses everything not synced.
func TestCrash(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	l := mustOpen(t, "db", pebblelog.Options{FS: fs})
	mustCreate(t, l, meta("s1"))
	for i := range 20 {
		mustAppend(t, l, "s1", uint64(i*3), mkEvents(uint64(i*3+1), 3))
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = mustOpen(t, "db", pebblelog.Options{FS: crashed})
	defer l.Close()
	last, err := l.LastSeq(ctx, "s1")
	if err != nil || last != 60 {
		t.Fatalf("LastSeq after crash: got %d, %v; want 60", last, err)
	}
	evs, err := readAll(l, "s1", 1)
	if err != nil || len(evs) != 60 {
		t.Fatalf("Read after crash: got %d events, %v; want 60", len(evs), err)
	}
	mustAppend(t, l, "s1", 60, mkEvents(61, 1))
}

func TestOpenErrors(t *testing.T) {
	if _, err := pebblelog.Open("", pebblelog.Options{}); err == nil {
		t.Fatal("Open(\"\"): got nil error, want one")
	}
	if _, err := pebblelog.Open("db", pebblelog.Options{FS: vfs.NewMem(), CacheSize: -1}); err == nil {
		t.Fatal("Open with a negative cache size: got nil error, want one")
	}
}

// Tables hold their events in blocks of about BlockSize before
// compression, not Pebble's default 4 KiB (a scan allocates one block at a
// time).
func TestTablesHaveLargeBlocks(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, pebblelog.Options{})
	mustCreate(t, l, meta("s1"))
	evs := mkEvents(1, 20000)
	for i := range evs {
		evs[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d,"note":%q}`, evs[i].Seq, strings.Repeat("x", 100)))
	}
	for i := 0; i < len(evs); i += 1000 {
		mustAppend(t, l, "s1", uint64(i), evs[i:i+1000])
	}
	if err := l.Close(); err != nil { // flushes the memtable to a table
		t.Fatal(err)
	}
	l = mustOpen(t, dir, pebblelog.Options{ReadOnly: true})
	defer l.Close()
	levels, err := l.DB().SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var raw, blocks uint64
	for _, tables := range levels {
		for _, tb := range tables {
			raw += tb.Properties.RawKeySize + tb.Properties.RawValueSize
			blocks += tb.Properties.NumDataBlocks
		}
	}
	if blocks == 0 {
		t.Fatal("no data blocks in any table")
	}
	if per := raw / blocks; per < pebblelog.BlockSize*3/4 {
		t.Fatalf("%d bytes of keys and values in %d data blocks: %d per block, want about %d", raw, blocks, per, pebblelog.BlockSize)
	}
}
