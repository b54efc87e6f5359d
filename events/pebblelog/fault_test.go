package pebblelog_test

// Storage faults: damaged tables, WALs and MANIFESTs, a full disk, a
// read-only folder. Each either is reported as an error naming what it can
// (the file; the session and seq when they can be known) or leaves the log
// with nothing acknowledged lost: never a panic, never silently fewer
// events.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// The sessions of a test store: done ended (its end recorded with its last
// seq), live was still running when the process stopped.
const (
	doneEvents = 200
	liveEvents = 120
)

// testLogger returns an hclog.Logger writing to t.Log.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Output: tbWriter{tb}, Level: hclog.Info})
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// appendN appends events last+1 … last+n to session id in batches of 4.
func appendN(tb testing.TB, l events.Log, id string, last uint64, n int) {
	tb.Helper()
	for i := 0; i < n; i += 4 {
		mustAppend(tb, l, id, last+uint64(i), mkEvents(last+uint64(i)+1, min(4, n-i)))
	}
}

// finish records the end of session id at seq last, as the driver does.
func finish(tb testing.TB, l events.Log, id string, last uint64) {
	tb.Helper()
	m := meta(id)
	m.Status, m.LastSeq = events.StatusFinished, last
	if err := l.UpdateSession(context.Background(), m); err != nil {
		tb.Fatalf("UpdateSession(%s, finished): %v", id, err)
	}
}

// crashImage returns a crashable MemFS holding, in "db", what a crash of a
// process that had written done (ended) and live (running) leaves; if
// clean, the process closed the log first.
func crashImage(tb testing.TB, clean bool) *vfs.MemFS {
	tb.Helper()
	fs := vfs.NewCrashableMem()
	l := mustOpen(tb, "db", pebblelog.Options{FS: fs})
	mustCreate(tb, l, meta("done"))
	appendN(tb, l, "done", 0, doneEvents)
	finish(tb, l, "done", doneEvents)
	mustCreate(tb, l, meta("live"))
	appendN(tb, l, "live", 0, liveEvents)
	var img *vfs.MemFS
	if !clean {
		img = fs.CrashClone(vfs.CrashCloneCfg{})
	}
	if err := l.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	if clean {
		img = fs.CrashClone(vfs.CrashCloneCfg{})
	}
	return img
}

// files returns the names, sorted, of the files in fs's folder "db" ending
// in suffix (or starting with it, for "MANIFEST").
func files(tb testing.TB, fs vfs.FS, suffix string) []string {
	tb.Helper()
	names, err := fs.List("db")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) || strings.HasPrefix(n, suffix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func readFile(tb testing.TB, fs vfs.FS, path string) []byte {
	tb.Helper()
	f, err := fs.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// writeFile replaces the content of path, synced (so that it survives a
// CrashClone).
func writeFile(tb testing.TB, fs vfs.FS, path string, b []byte) {
	tb.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// damage returns a copy of img in which fn changed file name of "db".
func damage(tb testing.TB, img *vfs.MemFS, name string, fn func([]byte) []byte) *vfs.MemFS {
	tb.Helper()
	fs := img.CrashClone(vfs.CrashCloneCfg{})
	path := fs.PathJoin("db", name)
	writeFile(tb, fs, path, fn(bytes.Clone(readFile(tb, fs, path))))
	return fs
}

func flipAt(off int) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= 0x10; return b }
}

// outcome opens the store on fs and reads every session: it returns the
// Open error, or the number of events read of each session and the error
// that stopped the read (or listing the sessions).
type outcome struct {
	open   error
	list   error
	n      map[string]int
	err    map[string]error
	status map[string]events.SessionMeta
	last   map[string]uint64
	// lastErr is LastSeq's error: a reverse seek, which must name the
	// same first unreadable event as the forward read.
	lastErr map[string]error
}

func openAndRead(tb testing.TB, fs vfs.FS, ro bool) outcome {
	tb.Helper()
	o := outcome{n: map[string]int{}, err: map[string]error{}, status: map[string]events.SessionMeta{}, last: map[string]uint64{}, lastErr: map[string]error{}}
	l, err := pebblelog.Open("db", pebblelog.Options{FS: fs, ReadOnly: ro})
	if err != nil {
		o.open = err
		return o
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.Sessions(ctx); err != nil {
		o.list = err
	}
	for _, id := range []string{"done", "live"} {
		// The last seq first, as a fork or a score asks it before any
		// read: a reverse seek into the session's last block.
		o.last[id], o.lastErr[id] = l.LastSeq(ctx, id)
		var prev uint64
		err := l.Scan(ctx, id, 1, func(e *events.Event) error {
			if e.Seq != prev+1 {
				return fmt.Errorf("seq %d after %d", e.Seq, prev)
			}
			prev = e.Seq
			o.n[id]++
			return nil
		})
		o.err[id] = err
		o.status[id], _ = l.Session(ctx, id)
	}
	return o
}

// wantCorruptOrAll fails unless session id was read whole (want events)
// or its read stopped at a corruption error.
func (o outcome) wantCorruptOrAll(tb testing.TB, what, id string, want int) {
	tb.Helper()
	switch err := o.err[id]; {
	case err == nil && o.n[id] == want:
	case err == nil:
		tb.Fatalf("%s: session %s: read %d events and no error, want %d or an error", what, id, o.n[id], want)
	case !errors.Is(err, events.ErrCorrupt):
		tb.Fatalf("%s: session %s: read %d events, then %v; want an error wrapping ErrCorrupt", what, id, o.n[id], err)
	}
}

// TestCorruptTable flips one byte at a time, at a spread of offsets, in
// each table: every read stops at a corruption error naming the table (and
// the session and seq, when it reads events), or reads everything.
func TestCorruptTable(t *testing.T) {
	img := crashImage(t, true)
	ssts := files(t, img, ".sst")
	if len(ssts) == 0 {
		t.Fatal("no table after a clean close")
	}
	for _, name := range ssts {
		size := len(readFile(t, img, img.PathJoin("db", name)))
		step := max(1, size/97)
		errs := 0
		for off := 0; off < size; off += step {
			fs := damage(t, img, name, flipAt(off))
			for _, ro := range []bool{false, true} {
				o := openAndRead(t, fs, ro)
				what := fmt.Sprintf("%s byte %d flipped (read-only %v)", name, off, ro)
				if o.open != nil || o.list != nil {
					err := errors.Join(o.open, o.list)
					if !errors.Is(err, events.ErrCorrupt) || !strings.Contains(err.Error(), name) {
						t.Fatalf("%s: got %v, want a corruption error naming %s", what, err, name)
					}
					errs++
					continue
				}
				o.wantCorruptOrAll(t, what, "done", doneEvents)
				o.wantCorruptOrAll(t, what, "live", liveEvents)
				for id, err := range o.lastErr {
					var ce *events.CorruptError
					if err != nil && (!errors.As(err, &ce) || o.err[id] != nil && ce.Seq != uint64(o.n[id])+1) {
						t.Fatalf("%s: session %s: LastSeq: %v; want a *events.CorruptError naming seq %d, the first a read cannot read", what, id, err, o.n[id]+1)
					}
				}
				for id, err := range o.err {
					if err == nil {
						continue
					}
					errs++
					var ce *events.CorruptError
					if !errors.As(err, &ce) || ce.Session != id || ce.Seq != uint64(o.n[id])+1 {
						t.Fatalf("%s: session %s: got %v after %d events, want a *events.CorruptError naming %s seq %d", what, id, err, o.n[id], id, o.n[id]+1)
					}
					if !strings.Contains(err.Error(), "/"+name+")") || strings.Contains(err.Error(), "\n") {
						t.Fatalf("%s: session %s: error %q does not name the table's file on one line", what, id, err)
					}
				}
			}
		}
		if errs == 0 {
			t.Fatalf("%s: no flipped byte was reported", name)
		}
	}
}

// TestCorruptManifest flips each byte of the MANIFEST a clean close left:
// Open refuses it (read-write and read-only), naming it, and changes
// nothing. Pebble alone would read the MANIFEST up to the damage, take it
// for a torn end, and drop (a read-write open: delete) the tables listed
// after it.
func TestCorruptManifest(t *testing.T) {
	img := crashImage(t, true)
	manifests := files(t, img, "MANIFEST-")
	if len(manifests) != 1 {
		t.Fatalf("MANIFESTs: got %q, want one", manifests)
	}
	name := manifests[0]
	good := readFile(t, img, img.PathJoin("db", name))
	for off := range good {
		fs := damage(t, img, name, flipAt(off))
		for _, ro := range []bool{false, true} {
			o := openAndRead(t, fs, ro)
			var cf *pebblelog.CorruptFileError
			if !errors.As(o.open, &cf) || !strings.HasSuffix(cf.Path, name) || !errors.Is(o.open, events.ErrCorrupt) {
				t.Fatalf("%s byte %d flipped (read-only %v): Open got %v (read %v), want a *CorruptFileError naming it", name, off, ro, o.open, o.n)
			}
		}
		if len(files(t, fs, pebblelog.CloseRecordName)) != 1 || len(files(t, fs, ".sst")) == 0 {
			t.Fatalf("%s byte %d flipped: a refused Open removed files", name, off)
		}
	}
	// The undamaged store opens; a read-write open removes the record
	// before Pebble changes the MANIFEST, and records it again after each
	// change (here: the flush of the WAL it replayed, and of a session's
	// end), so that after a crash a damaged MANIFEST is still refused.
	fs := img.CrashClone(vfs.CrashCloneCfg{})
	if o := openAndRead(t, fs, true); o.open != nil || o.n["done"] != doneEvents || o.n["live"] != liveEvents {
		t.Fatalf("undamaged, read-only: %+v", o)
	}
	l := mustOpen(t, "db", pebblelog.Options{FS: fs})
	finish(t, l, "live", liveEvents)
	if got := files(t, fs, pebblelog.CloseRecordName); len(got) != 1 {
		t.Fatalf("record of the MANIFEST while open read-write, after a flush: %q, want one", got)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	cur := files(t, crashed, "MANIFEST-")
	for _, at := range []float64{0.1, 0.5, 0.9} {
		b := readFile(t, crashed, crashed.PathJoin("db", cur[len(cur)-1]))
		dmg := damage(t, crashed, cur[len(cur)-1], flipAt(int(float64(len(b))*at)))
		var cf *pebblelog.CorruptFileError
		if o := openAndRead(t, dmg, true); !errors.As(o.open, &cf) {
			t.Fatalf("after a crash, %s flipped at %.0f%%: Open got %v (read %v), want a *CorruptFileError", cur[len(cur)-1], at*100, o.open, o.n)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := files(t, fs, pebblelog.CloseRecordName); len(got) != 1 {
		t.Fatalf("record after a clean close: %q, want one", got)
	}
	if o := openAndRead(t, crashed, false); o.open != nil || o.n["done"] != doneEvents {
		t.Fatalf("crash without a record of a clean close: %+v", o)
	}
	// A MANIFEST cut short is refused too.
	var cf *pebblelog.CorruptFileError
	fs = damage(t, img, name, func(b []byte) []byte { return b[:len(b)-3] })
	if o := openAndRead(t, fs, true); !errors.As(o.open, &cf) {
		t.Fatalf("%s cut short: Open got %v, want a *CorruptFileError", name, o.open)
	}
	// A record that another program made stale, opening the store
	// read-write, is ignored: Pebble itself (which appends to the MANIFEST
	// or starts a new one), and a record that names another MANIFEST.
	fs = img.CrashClone(vfs.CrashCloneCfg{})
	db, err := pebble.Open("db", &pebble.Options{FS: fs, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("x"), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if o := openAndRead(t, fs, false); o.open != nil || o.n["done"] != doneEvents || o.n["live"] != liveEvents {
		t.Fatalf("after a read-write open by Pebble itself: %+v", o)
	}
	fs = img.CrashClone(vfs.CrashCloneCfg{})
	writeFile(t, fs, fs.PathJoin("db", pebblelog.CloseRecordName), []byte(`{"manifest":"MANIFEST-000099","size":1,"crc32c":2}`))
	if o := openAndRead(t, fs, true); o.open != nil || o.n["done"] != doneEvents {
		t.Fatalf("a record naming another MANIFEST: %+v", o)
	}
}

// TestCorruptWAL damages the last WAL of a store: flipped bytes, and the
// WAL cut short. The session that ended is whole every time: its events
// and its end went to a table when it ended. The session still running at
// the crash lives in the WAL alone; Pebble reads a WAL up to its first bad
// record and takes that for a torn end, so it may come back shorter: a
// gapless prefix, still running (the caller marks it interrupted), which
// the Log cannot tell from a crash before those events were written.
func TestCorruptWAL(t *testing.T) {
	for _, clean := range []bool{false, true} {
		img := crashImage(t, clean)
		logs := files(t, img, ".log")
		if len(logs) == 0 {
			t.Fatal("no WAL")
		}
		name := logs[len(logs)-1] // the last WAL (by number): the others hold only flushed data
		good := readFile(t, img, img.PathJoin("db", name))
		if !clean && len(good) == 0 {
			t.Fatalf("the last WAL %s of a crash is empty", name)
		}
		step := max(1, len(good)/60)
		shorter := 0
		for off := 0; off < len(good); off += step {
			for _, cut := range []bool{false, true} {
				fn := flipAt(off)
				if cut {
					fn = func(b []byte) []byte { return b[:off] }
				}
				fs := damage(t, img, name, fn)
				for _, ro := range []bool{true, false} {
					what := fmt.Sprintf("clean %v, %s cut %v at %d/%d, read-only %v", clean, name, cut, off, len(good), ro)
					o := openAndRead(t, fs, ro)
					if o.open != nil {
						if !errors.Is(o.open, events.ErrCorrupt) {
							t.Fatalf("%s: Open: %v, want a corruption error", what, o.open)
						}
						continue
					}
					if o.err["done"] != nil || o.n["done"] != doneEvents || o.status["done"].Status != events.StatusFinished {
						t.Fatalf("%s: the finished session: %d events, %v, %+v; want all %d", what, o.n["done"], o.err["done"], o.status["done"], doneEvents)
					}
					if err := events.CheckEnd(o.status["done"], o.last["done"]); err != nil {
						t.Fatalf("%s: CheckEnd: %v", what, err)
					}
					if n := o.n["live"]; o.err["live"] != nil && !errors.Is(o.err["live"], events.ErrNoSession) || n > liveEvents {
						t.Fatalf("%s: the running session: %d events, %v; want a prefix of %d", what, n, o.err["live"], liveEvents)
					}
					if clean && o.n["live"] != liveEvents {
						t.Fatalf("%s: after a clean close the running session has %d events, want %d", what, o.n["live"], liveEvents)
					}
					if o.n["live"] < liveEvents {
						shorter++
					}
				}
			}
		}
		t.Logf("clean close %v: %d of the damaged WALs gave a shorter running session", clean, shorter)
		if !clean && shorter == 0 {
			t.Fatalf("no damage to %s reached the running session: is it the WAL that holds it?", name)
		}
	}
}

// TestWALNotNeeded checks that a store whose WALs are all gone holds every
// session that ended and, after a clean close, everything.
func TestWALNotNeeded(t *testing.T) {
	for _, clean := range []bool{false, true} {
		fs := crashImage(t, clean)
		for _, name := range files(t, fs, ".log") {
			if err := fs.Remove(fs.PathJoin("db", name)); err != nil {
				t.Fatal(err)
			}
		}
		o := openAndRead(t, fs, false)
		if o.open != nil || o.err["done"] != nil || o.n["done"] != doneEvents {
			t.Fatalf("clean %v, no WAL: the finished session: %+v", clean, o)
		}
		if clean && (o.err["live"] != nil || o.n["live"] != liveEvents) {
			t.Fatalf("clean close, no WAL: the running session: %d events, %v; want %d", o.n["live"], o.err["live"], liveEvents)
		}
	}
}

// TestCheckEnd shows what the end marker is for: a finished session whose
// last events are gone is reported as events lost.
func TestCheckEnd(t *testing.T) {
	ctx := context.Background()
	l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
	defer l.Close()
	mustCreate(t, l, meta("s1"))
	appendN(t, l, "s1", 0, 40)
	finish(t, l, "s1", 40)
	m, err := l.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := events.CheckEnd(m, 40); err != nil {
		t.Fatalf("CheckEnd, whole: %v", err)
	}
	if err := l.DB().DeleteRange(pebblelog.EventKey("s1", 31), pebblelog.EventKey("s1", 41), nil); err != nil {
		t.Fatal(err)
	}
	l.ForgetCache()
	last, err := l.LastSeq(ctx, "s1")
	if err != nil || last != 30 {
		t.Fatalf("LastSeq after the loss: %d, %v; want 30", last, err)
	}
	err = events.CheckEnd(m, last)
	if !errors.Is(err, events.ErrLost) || !strings.Contains(err.Error(), "10 events missing") {
		t.Fatalf("CheckEnd after the loss: got %v, want ErrLost with 10 events missing", err)
	}
}

// fullFS returns fs with every write and sync failing with ENOSPC while
// full is set.
func fullFS(fs vfs.FS, full *syncBool) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
			errorfs.OpFileSyncTo, errorfs.OpFilePreallocate, errorfs.OpFileFlush:
			if full.Get() {
				return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
			}
		}
		return nil
	}))
}

// stillFull is the FullDiskWait of the tests whose disk stays full: the
// writes of Pebble's wait that long for room, then the Log stops.
const stillFull = 200 * time.Millisecond

// TestDiskFullInPebble fills the disk under Pebble (the Log's own reserve
// turned off) for longer than FullDiskWait: the Append that meets it fails
// with an error that tells a full disk, every operation after it fails,
// Close returns, and nothing acknowledged is lost. Several sessions append
// at once.
func TestDiskFullInPebble(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	var full syncBool
	l := mustOpen(t, "db", pebblelog.Options{FS: fullFS(mem, &full), MinFreeSpace: -1, FullDiskWait: stillFull, Logger: testLogger(t)})
	const sessions = 6
	acked := make([]uint64, sessions)
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for s := range sessions { // all made before the disk fills
		mustCreate(t, l, meta(fmt.Sprintf("s%d", s)))
	}
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for last := uint64(0); ; last += 4 {
				if last == 200 && s == 0 {
					full.Set(true)
				}
				if err := l.Append(ctx, id, last, mkEvents(last+1, 4)); err != nil {
					errs[s] = err
					return
				}
				acked[s] = last + 4
			}
		}()
	}
	wg.Wait()
	for s, err := range errs {
		if !errors.Is(err, pebblelog.ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("session s%d: Append on a full disk: got %v, want ErrFailed and ENOSPC", s, err)
		}
	}
	if _, err := l.Sessions(ctx); !errors.Is(err, pebblelog.ErrFailed) {
		t.Fatalf("Sessions after the failure: got %v, want ErrFailed", err)
	}
	if err := l.Close(); !errors.Is(err, pebblelog.ErrFailed) {
		t.Fatalf("Close after the failure: got %v, want ErrFailed", err)
	}
	full.Set(false)
	wantAcknowledged(t, mem, acked)
}

// TestDiskFullWaitsForRoom fills the disk under Pebble (the Log's own
// reserve turned off, as when another writer fills it between the Log's
// look and the commit) for a while, FullDiskWait at its default (until the
// Log closes): the Appends Pebble took
// wait, reads go on meanwhile, and once the disk has room they go through
// and the Log goes on, with nothing lost and no failure (Pebble stops its
// database at a failed WAL write: CI saw it stop a served log for good).
func TestDiskFullWaitsForRoom(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	var full syncBool
	l := mustOpen(t, "db", pebblelog.Options{FS: fullFS(mem, &full), MinFreeSpace: -1, Logger: testLogger(t)})
	const sessions = 3
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		mustCreate(t, l, meta(id))
		if err := l.Append(ctx, id, 0, mkEvents(1, 8)); err != nil {
			t.Fatal(err)
		}
	}
	full.Set(true)
	done := make(chan error, sessions)
	for s := range sessions {
		go func() { done <- l.Append(ctx, fmt.Sprintf("s%d", s), 8, mkEvents(9, 8)) }()
	}
	select {
	case err := <-done:
		t.Fatalf("an Append on a full disk returned %v; want it to wait for room", err)
	case <-time.After(5 * pebblelog.FullDiskPoll):
	}
	// Reads go on while the writes wait (Pebble shows a batch it took
	// before its sync, so the waiting one may be read too).
	if evs, err := readAll(l, "s1", 1); err != nil || len(evs) < 8 {
		t.Fatalf("a read while the disk is full: %d events, %v; want the 8 stored", len(evs), err)
	}
	if ms, err := l.Sessions(ctx); err != nil || len(ms) != sessions {
		t.Fatalf("Sessions while the disk is full: %d, %v", len(ms), err)
	}
	full.Set(false)
	for range sessions {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("an Append that waited for room: %v; want it stored", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the Appends waiting for room did not return once the disk had room")
		}
	}
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		if err := l.Append(ctx, id, 16, mkEvents(17, 4)); err != nil {
			t.Fatalf("session %s: an Append after the disk had room again: %v", id, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v; want no failure", err)
	}
	wantAcknowledged(t, mem, []uint64{20, 20, 20})
}

// TestDiskFullWaitEndsAtClose: StopWaiting (a process stopping) while a
// write of the WAL waits for room on a disk that stays full ends the wait:
// the Append that waited fails; Close returns naming the full disk, and
// nothing acknowledged before is lost. Close ends a wait too (it calls
// StopWaiting first).
func TestDiskFullWaitEndsAtClose(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	var full syncBool
	l := mustOpen(t, "db", pebblelog.Options{FS: fullFS(mem, &full), MinFreeSpace: -1, Logger: testLogger(t)})
	mustCreate(t, l, meta("s0"))
	if err := l.Append(ctx, "s0", 0, mkEvents(1, 8)); err != nil {
		t.Fatal(err)
	}
	full.Set(true)
	done := make(chan error, 1)
	go func() { done <- l.Append(ctx, "s0", 8, mkEvents(9, 8)) }()
	time.Sleep(3 * pebblelog.FullDiskPoll)
	select {
	case err := <-done:
		t.Fatalf("an Append on a full disk returned %v; want it to wait for room", err)
	default:
	}
	l.StopWaiting() // a signal: the process stops
	select {
	case err := <-done:
		if !errors.Is(err, pebblelog.ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("the Append that waited, after StopWaiting: %v; want ErrFailed and ENOSPC", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("StopWaiting did not end the wait for room")
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("Close with a write waiting for room: %v; want the full disk named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the wait for room")
	}
	full.Set(false)
	wantAcknowledged(t, mem, []uint64{8})
}

// wantAcknowledged reopens the log in mem as a crash would leave it and
// checks that session s<i> holds at least acked[i] events, all readable.
func wantAcknowledged(t *testing.T, mem *vfs.MemFS, acked []uint64) {
	t.Helper()
	l := mustOpen(t, "db", pebblelog.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
	defer l.Close()
	for s := range acked {
		id := fmt.Sprintf("s%d", s)
		last, err := l.LastSeq(context.Background(), id)
		if err != nil || last < acked[s] {
			t.Fatalf("session %s after reopen: last seq %d, %v; acknowledged %d", id, last, err, acked[s])
		}
		if evs, err := readAll(l, id, 1); err != nil || uint64(len(evs)) != last {
			t.Fatalf("session %s after reopen: read %d events, %v; want %d", id, len(evs), err, last)
		}
	}
}

// TestDiskFullPipelined is TestDiskFullInPebble for writers that keep two
// batches in flight (AppendPipelined): each batch is acknowledged only when
// its durable wait returned nil, and nothing acknowledged is lost; a batch
// ordered after the failure is not acknowledged.
func TestDiskFullPipelined(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	var full syncBool
	l := mustOpen(t, "db", pebblelog.Options{FS: fullFS(mem, &full), MinFreeSpace: -1, FullDiskWait: stillFull, Logger: testLogger(t)})
	const sessions = 4
	acked := make([]uint64, sessions)
	errs := make([]error, sessions)
	for s := range sessions {
		mustCreate(t, l, meta(fmt.Sprintf("s%d", s)))
	}
	var wg sync.WaitGroup
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var wait func() error // the batch in flight before the last one
			var waitEnd uint64
			for last := uint64(0); ; last += 4 {
				if last == 200 && s == 0 {
					full.Set(true)
				}
				next, err := l.AppendPipelined(ctx, id, last, mkEvents(last+1, 4))
				if wait != nil {
					if werr := wait(); werr != nil && err == nil {
						err = werr
					} else if werr == nil {
						acked[s] = waitEnd
					}
				}
				if err != nil {
					if next != nil {
						_ = next()
					}
					errs[s] = err
					return
				}
				wait, waitEnd = next, last+4
			}
		}()
	}
	wg.Wait()
	for s, err := range errs {
		if !errors.Is(err, pebblelog.ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("session s%d: pipelined append on a full disk: got %v, want ErrFailed and ENOSPC", s, err)
		}
	}
	if err := l.Close(); !errors.Is(err, pebblelog.ErrFailed) {
		t.Fatalf("Close after the failure: got %v, want ErrFailed", err)
	}
	full.Set(false)
	if acked[0] < 196 { // s0 fills the disk once it has appended 200 events
		t.Fatalf("session s0: %d events acknowledged before the disk filled, want at least 196", acked[0])
	}
	wantAcknowledged(t, mem, acked)
}

// TestDiskFullReserve fills the disk as the Log sees it: Appends, new
// sessions and checkpoints are refused with ENOSPC before Pebble meets a
// full disk, the Log goes on, the session can be recorded interrupted, and
// once space is freed Appends go on.
func TestDiskFullReserve(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 200 << 20})
	l := mustOpen(t, "db", pebblelog.Options{FS: mem, MinFreeSpace: 1 << 20})
	defer l.Close()
	mustCreate(t, l, meta("s1"))
	appendN(t, l, "s1", 0, 20)
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 900 << 10, TotalBytes: 200 << 20})
	// The Log looks at the free space again within 256 writes.
	last := uint64(20)
	var err error
	for range 300 {
		if err = l.Append(ctx, "s1", last, mkEvents(last+1, 1)); err != nil {
			break
		}
		last++
	}
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, pebblelog.ErrFailed) {
		t.Fatalf("Append with 900 KiB free of a 1 MiB reserve: got %v, want ENOSPC (and not ErrFailed)", err)
	}
	if err := l.CreateSession(ctx, meta("s2")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("CreateSession: got %v, want ENOSPC", err)
	}
	m := meta("s1")
	m.Status, m.LastSeq = events.StatusInterrupted, last
	if err := l.UpdateSession(ctx, m); err != nil {
		t.Fatalf("UpdateSession(interrupted) with 900 KiB free: %v", err)
	}
	if evs, err := readAll(l, "s1", 1); err != nil || uint64(len(evs)) != last {
		t.Fatalf("Read: %d events, %v; want %d", len(evs), err, last)
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 10, TotalBytes: 200 << 20})
	if err := l.UpdateSession(ctx, m); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("UpdateSession with 100 KiB free: got %v, want ENOSPC", err)
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 200 << 20})
	mustAppend(t, l, "s1", last, mkEvents(last+1, 1))
	// A read-write Open of a folder whose WAL does not fit in the free
	// space is refused at once (Pebble would spin on the flush); a
	// read-only one is not.
	fs := vfs.NewCrashableMem()
	w := mustOpen(t, "db", pebblelog.Options{FS: fs, MinFreeSpace: -1})
	mustCreate(t, w, meta("s1"))
	appendN(t, w, "s1", 0, 40)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	w.Close()
	crashed.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 512 << 10, TotalBytes: 200 << 20})
	if _, err := pebblelog.Open("db", pebblelog.Options{FS: crashed}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("read-write Open with 512 KiB free: got %v, want ENOSPC", err)
	}
	r := mustOpen(t, "db", pebblelog.Options{FS: crashed, ReadOnly: true})
	if evs, err := readAll(r, "s1", 1); err != nil || len(evs) != 40 {
		t.Fatalf("read-only Open with 512 KiB free: %d events, %v", len(evs), err)
	}
	r.Close()
}

// TestLogger checks that Pebble's messages reach the Logger.
func TestLogger(t *testing.T) {
	var buf syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem(), Logger: logger})
	mustCreate(t, l, meta("s1"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "[INFO]  pebble: Found 0 WALs") {
		t.Fatalf("logged %q, want Pebble's Info line about WALs", got)
	}
}

type syncBool struct {
	mu sync.Mutex
	v  bool
}

func (b *syncBool) Set(v bool) { b.mu.Lock(); b.v = v; b.mu.Unlock() }
func (b *syncBool) Get() bool  { b.mu.Lock(); defer b.mu.Unlock(); return b.v }

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bigEvents returns mkEvents(from, n) with payloads of about 1 KiB.
func bigEvents(from uint64, n int) []events.Event {
	evs := mkEvents(from, n)
	for i := range evs {
		evs[i].Payload = fmt.Appendf(nil, `{"n":%d,"pad":%q}`, evs[i].Seq, strings.Repeat("x", 1000))
	}
	return evs
}

// TestDiskFullTmpfs fills a real disk, a small tmpfs (root only), with
// sessions appending at once: with the Log's reserve, Appends are refused
// and the sessions are recorded interrupted; without it, Pebble meets the
// full disk and the Log fails. Either way nothing acknowledged is lost,
// and a read-write Open of the full disk is refused at once.
//
// Without the reserve, Pebble itself can die on the full disk: a failed WAL
// rotation panics inside it and the unwinding unlocks a mutex twice, a
// fatal error no recover catches (cockroachdb/pebble#5225, #5601). And when
// Pebble panics in a write and the Log recovers, the Log leaves that
// database open (its commit pipeline may hold a lock for good), so the
// folder stays locked until the process ends. So the filling runs in a
// child process of the test binary, as a server that failed would exit:
// Pebble's crash is reported as Pebble's and skipped, anything else fails
// as usual, and the parent opens the full disk once the child is gone. The
// reserve exists so that a corpsim log never reaches that point.
func TestDiskFullTmpfs(t *testing.T) {
	if dir := os.Getenv("CORPSIM_DISKFULL_DIR"); dir != "" {
		t.Run("MinFreeSpace=-1", func(t *testing.T) {
			acked := fillDisk(t, dir, -1)
			b, err := json.Marshal(acked)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(os.Getenv("CORPSIM_DISKFULL_ACKED"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		})
		return
	}
	for _, reserve := range []int64{0, -1} {
		t.Run(fmt.Sprintf("MinFreeSpace=%d", reserve), func(t *testing.T) {
			// Room for the reserve (DefaultMinFreeSpace), a WAL file
			// (110% of a memtable) and some events; without a reserve,
			// the WAL file and some events, so the disk fills soon.
			size := "140m"
			if reserve < 0 {
				size = "40m"
			}
			mnt := mountTmpfs(t, size)
			dir := filepath.Join(mnt, "db")
			if reserve == 0 {
				checkFullDisk(t, dir, reserve, fillDisk(t, dir, reserve))
				return
			}
			ackedFile := filepath.Join(t.TempDir(), "acked.json")
			// A child that has not finished within childLimit is stopped
			// with SIGQUIT, so that its goroutines say where it waits.
			ctx, cancel := context.WithTimeout(context.Background(), childLimit)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDiskFullTmpfs$/^MinFreeSpace=-1$", "-test.count=1", "-test.v")
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
			cmd.WaitDelay = 10 * time.Second
			cmd.Env = append(os.Environ(), "CORPSIM_DISKFULL_DIR="+dir, "CORPSIM_DISKFULL_ACKED="+ackedFile)
			out, err := cmd.CombinedOutput()
			switch {
			case err != nil && bytes.Contains(out, []byte("unlock of unlocked mutex")):
				t.Skipf("Pebble died on the full disk (cockroachdb/pebble#5225): %.300s", out)
			case err != nil && ctx.Err() != nil && bytes.Contains(out, []byte("pebble/v2.(*commitPipeline).prepare")):
				// Pebble panicked in one append, which its Log reported
				// (wedged); another append, already inside Pebble, waits
				// for ever on the commit pipeline's mutex the panic left
				// locked. The same Pebble failure as the one above.
				t.Skipf("Pebble hung on the full disk: an append waits for ever on its commit pipeline after a panic in another (cockroachdb/pebble#5225)")
			case err != nil:
				t.Fatalf("the full-disk child failed: %v\n%s", err, out)
			case !bytes.Contains(out, []byte("--- PASS: TestDiskFullTmpfs/MinFreeSpace=-1")):
				t.Fatalf("the full-disk child ran no such subtest:\n%s", out)
			}
			if bytes.Contains(out, []byte("panic in a write")) {
				t.Log("Pebble panicked in a write in the child, whose Log left the database open; the child has ended")
			}
			b, err := os.ReadFile(ackedFile)
			if err != nil {
				t.Fatal(err)
			}
			var acked []uint64
			if err := json.Unmarshal(b, &acked); err != nil {
				t.Fatal(err)
			}
			checkFullDisk(t, dir, reserve, acked)
		})
	}
}

// mountTmpfs mounts a tmpfs of size (as mount's size=) on a folder of the
// test's, unmounted at its end; it skips the test where that cannot be done
// (it needs root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// childLimit bounds the full-disk child of TestDiskFullTmpfs, which fills
// its 40 MB disk in seconds.
const childLimit = 2 * time.Minute

// fillDisk runs four sessions appending at once to a Log in dir, on a
// small disk, with the given MinFreeSpace, until each is refused, and
// closes the Log. It returns how many events each session had
// acknowledged.
func fillDisk(t *testing.T, dir string, reserve int64) []uint64 {
	ctx := context.Background()
	l := mustOpen(t, dir, pebblelog.Options{MinFreeSpace: reserve, FullDiskWait: stillFull, Logger: testLogger(t)})
	const sessions = 4
	acked := make([]uint64, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		mustCreate(t, l, meta(id))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for last := uint64(0); ; last += 20 {
				if err := l.Append(ctx, id, last, bigEvents(last+1, 20)); err != nil {
					errs[s] = err
					m := meta(id)
					m.Status, m.LastSeq = events.StatusInterrupted, last
					if uerr := l.UpdateSession(ctx, m); reserve == 0 && uerr != nil {
						errs[s] = fmt.Errorf("recording session %s interrupted: %w", id, uerr)
					}
					return
				}
				acked[s] = last + 20
			}
		}()
	}
	wg.Wait()
	for s, err := range errs {
		if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, pebblelog.ErrFailed) != (reserve < 0) {
			t.Fatalf("session s%d: got %v, want ENOSPC (and ErrFailed: %v)", s, err, reserve < 0)
		}
	}
	if err := l.Close(); (err != nil) != (reserve < 0) {
		t.Fatalf("Close: %v", err)
	}
	return acked
}

// checkFullDisk opens the Log that fillDisk filled: read-write, which a
// full disk refuses with ENOSPC (and the disk the reserve kept from filling
// accepts), then read-only, where every acknowledged event is there and,
// with the reserve, each session is recorded interrupted at its last.
func checkFullDisk(t *testing.T, dir string, reserve int64, acked []uint64) {
	ctx := context.Background()
	switch w, err := pebblelog.Open(dir, pebblelog.Options{}); {
	case reserve < 0 && !errors.Is(err, syscall.ENOSPC):
		t.Fatalf("read-write Open of the full disk: got %v, want ENOSPC", err)
	case reserve == 0 && err != nil:
		t.Fatalf("read-write Open of the disk the reserve kept from filling: %v", err)
	case err == nil:
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r := mustOpen(t, dir, pebblelog.Options{ReadOnly: true})
	defer r.Close()
	for s := range acked {
		id := fmt.Sprintf("s%d", s)
		evs, err := readAll(r, id, 1)
		if err != nil || uint64(len(evs)) < acked[s] {
			t.Fatalf("session %s: read %d events, %v; acknowledged %d", id, len(evs), err, acked[s])
		}
		m, err := r.Session(ctx, id)
		if reserve == 0 && (err != nil || m.Status != events.StatusInterrupted || m.LastSeq != acked[s]) {
			t.Fatalf("session %s: metadata %+v, %v; want interrupted at %d", id, m, err, acked[s])
		}
	}
}

// TestDiskFullTmpfsFreed: another writer fills a real disk (a small
// tmpfs, root only) to its last byte under sessions appending with no
// reserve, so that Pebble's WAL meets the full disk, and frees it a second
// later. The writes wait for room (FullDiskWait) instead of stopping the
// database: every session goes on to its end, and every event is there
// after a reopen.
func TestDiskFullTmpfsFreed(t *testing.T) {
	ctx := context.Background()
	mnt := mountTmpfs(t, "200m")
	dir := filepath.Join(mnt, "db")
	logs := &syncBuffer{}
	l := mustOpen(t, dir, pebblelog.Options{MinFreeSpace: -1,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	const sessions, each = 3, 4000
	for s := range sessions {
		mustCreate(t, l, meta(fmt.Sprintf("s%d", s)))
	}
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	filled := make(chan struct{})
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for last := uint64(0); last < each; last += 20 {
				if last == 400 && s == 0 {
					close(filled)
				}
				if err := l.Append(ctx, id, last, bigEvents(last+1, 20)); err != nil {
					errs[s] = fmt.Errorf("append after %d: %w", last, err)
					return
				}
			}
		}()
	}
	<-filled
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	time.Sleep(time.Second)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for s, err := range errs {
		if err != nil {
			t.Fatalf("session s%d, on a disk full for a second: %v\n%s", s, err, logs.String())
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "waits for room") {
		t.Logf("no write of Pebble's met the full disk (the sessions' appends were between commits); the test proves less:\n%s", logs.String())
	}
	r := mustOpen(t, dir, pebblelog.Options{ReadOnly: true})
	defer r.Close()
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		if evs, err := readAll(r, id, 1); err != nil || len(evs) != each {
			t.Fatalf("session %s after reopen: read %d events, %v; want %d", id, len(evs), err, each)
		}
	}
}

// TestDiskFullBallast: another writer fills a real disk (a small tmpfs,
// root only) to its last byte while a session runs. Its Appends are
// refused, and its end is still recorded: the Log deletes its ballast to
// make room for the metadata update. Once the disk has room again, the
// ballast is written again.
func TestDiskFullBallast(t *testing.T) {
	ctx := context.Background()
	mnt := mountTmpfs(t, "200m")
	dir := filepath.Join(mnt, "db")
	l := mustOpen(t, dir, pebblelog.Options{Logger: testLogger(t)})
	defer l.Close()
	ballast := filepath.Join(dir, pebblelog.BallastName)
	if fi, err := os.Stat(ballast); err != nil || fi.Size() != pebblelog.DefaultMinFreeSpace/4 {
		t.Fatalf("after Open: ballast %v, %v; want %d bytes", fi, err, pebblelog.DefaultMinFreeSpace/4)
	}
	mustCreate(t, l, meta("s1"))
	appendN(t, l, "s1", 0, 40)
	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	last := uint64(40)
	var err error
	for range 300 {
		if err = l.Append(ctx, "s1", last, mkEvents(last+1, 1)); err != nil {
			break
		}
		last++
	}
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, pebblelog.ErrFailed) {
		t.Fatalf("Append on the full disk: got %v, want ENOSPC (and not ErrFailed)", err)
	}
	m := meta("s1")
	m.Status, m.LastSeq = events.StatusInterrupted, last
	if err := l.UpdateSession(ctx, m); err != nil {
		t.Fatalf("UpdateSession(interrupted) on a disk filled by another writer: %v", err)
	}
	if _, err := os.Stat(ballast); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the ballast is still there after it was needed: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	m.Status = events.StatusRunning
	if err := l.UpdateSession(ctx, m); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ballast); err != nil || fi.Size() != pebblelog.DefaultMinFreeSpace/4 {
		t.Fatalf("with room again: ballast %v, %v; want it written again", fi, err)
	}
	mustAppend(t, l, "s1", last, mkEvents(last+1, 1))
	if got, err := l.Session(ctx, "s1"); err != nil || got.LastSeq != last {
		t.Fatalf("Session: %+v, %v", got, err)
	}
}

// fill writes zeros to path until its file system is full.
func fill(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		_, err := f.Write(chunk)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// TestFlushFullDiskUsesBallast: a flush that meets a full disk (writes of
// tables fail with ENOSPC until the ballast is deleted, as another writer
// filling the disk would make them) does not stop the Log: the ballast
// makes room for Pebble's next try, the session's end is recorded and the
// Log goes on. A second full disk, with the ballast spent, does not stop
// it either: Pebble's next tries wait for room instead of failing again
// as fast as it can retry them, and the flush goes through once the disk
// has room again.
func TestFlushFullDiskUsesBallast(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 200 << 20})
	var full, ballastSpent syncBool
	var tries atomic.Int64 // tables created while the disk was full
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch {
		case op.Kind == errorfs.OpRemove && strings.HasSuffix(op.Path, pebblelog.BallastName) && full.Get():
			full.Set(false) // its room is free now
		case op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") && full.Get():
			tries.Add(1)
		case (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileSync) && strings.HasSuffix(op.Path, ".sst") && full.Get():
			if ballastSpent.Get() {
				// The other writer took the room the flush saw.
				mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 300 << 10, TotalBytes: 200 << 20})
			}
			return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
		}
		return nil
	}))
	l := mustOpen(t, "db", pebblelog.Options{FS: fs, MinFreeSpace: 1 << 20, Logger: testLogger(t)})
	if _, err := mem.Stat("db/" + pebblelog.BallastName); err != nil {
		t.Fatalf("no ballast after Open: %v", err)
	}
	// Too little room to write the ballast again once deleted.
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1200 << 10, TotalBytes: 200 << 20})
	mustCreate(t, l, meta("s1"))
	appendN(t, l, "s1", 0, 40)
	full.Set(true)
	finish(t, l, "s1", 40) // its flush fails once, then goes through
	if full.Get() {
		t.Fatal("the flush went through without the ballast being deleted")
	}
	if _, err := mem.Stat("db/" + pebblelog.BallastName); err == nil {
		t.Fatal("the ballast is still there")
	}
	mustCreate(t, l, meta("s2"))
	appendN(t, l, "s2", 0, 8)

	// Another writer fills the disk again, with the ballast spent. The
	// session's end is recorded (in the WAL: its flush failed) and the
	// Log goes on.
	ballastSpent.Set(true)
	tries.Store(0)
	full.Set(true)
	m := meta("s2")
	m.Status, m.LastSeq = events.StatusFinished, 8
	if err := l.UpdateSession(ctx, m); err != nil {
		t.Fatalf("a session's end on a full disk with no ballast: %v", err)
	}
	time.Sleep(time.Second)
	// Unpaced, Pebble tried thousands of tables in that second.
	n := tries.Load()
	if n > 3 {
		t.Fatalf("%d tables tried in a second on a full disk; want Pebble's tries to wait for room", n)
	}
	t.Logf("%d tables tried in a second on a full disk", n)
	if _, err := l.Sessions(ctx); err != nil {
		t.Fatalf("Sessions on a full disk: %v", err)
	}
	// Room again: the flush that waited goes through, and so does the next.
	full.Set(false)
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 200 << 20})
	mustCreate(t, l, meta("s3"))
	appendN(t, l, "s3", 0, 5)
	finish(t, l, "s3", 5)
	if err := l.Close(); err != nil {
		t.Fatalf("Close once the disk had room again: %v", err)
	}
	l = mustOpen(t, "db", pebblelog.Options{FS: fs, MinFreeSpace: 1 << 20, Logger: testLogger(t)})
	defer l.Close()
	for id, last := range map[string]uint64{"s1": 40, "s2": 8, "s3": 5} {
		got, err := l.Session(ctx, id)
		if err != nil || got.Status != events.StatusFinished || got.LastSeq != last {
			t.Fatalf("%s after a reopen: %+v, %v; want finished at %d", id, got, err, last)
		}
	}
}

// TestPacingWithoutAWaitingTable: a compaction that failed for a full disk
// makes tables wait for room, and Pebble may not try it again for a while.
// A session's end that finds its room free then flushes as usual: nothing
// else would end the pacing, and every end would stay in the WAL alone.
func TestPacingWithoutAWaitingTable(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 200 << 20})
	var warned syncBool
	logger := hclog.New(&hclog.LoggerOptions{Output: warnSpotter{&warned}, Level: hclog.Warn})
	l := mustOpen(t, "db", pebblelog.Options{FS: mem, MinFreeSpace: 1 << 20, Logger: logger})
	mustCreate(t, l, meta("s1"))
	appendN(t, l, "s1", 0, 10)
	before := l.DB().Metrics().Flush.Count
	l.Pace()
	warned.Set(false)
	finish(t, l, "s1", 10)
	if warned.Get() {
		t.Fatal("the end was left in the WAL alone")
	}
	if n := l.DB().Metrics().Flush.Count - before; n != 1 {
		t.Fatalf("the end made %d flushes, want 1", n)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// warnSpotter sets its flag when the log says the end was left in the WAL.
type warnSpotter struct{ b *syncBool }

func (w warnSpotter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "left in the WAL") {
		w.b.Set(true)
	}
	return len(p), nil
}

// TestPipelinedBatchDurableWithALaterWrite: a synced write made after
// AppendPipelined returned (a checkpoint, as the driver stores one) makes
// the batch durable too, before its own wait is called: a crash then keeps
// both (events.Pipeliner).
func TestPipelinedBatchDurableWithALaterWrite(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	l := mustOpen(t, "db", pebblelog.Options{FS: mem, MinFreeSpace: -1})
	mustCreate(t, l, meta("s0"))
	durable, err := l.AppendPipelined(ctx, "s0", 0, mkEvents(1, 40))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PutCheckpoint(ctx, "s0", mkCheckpoint(40)); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{}) // what was synced, only
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantAcknowledged(t, crashed, []uint64{40})
}

// TestDamagedLastBlock: the block holding a session's last events is
// damaged and the rest whole (its first events in the blocks before it,
// its metadata in an older table). Its last seq, a reverse seek that a
// fork and a score ask first, names the first event a read cannot read, as
// the read does, not the session's first (it said seq 1); a fork at an
// event before the damage shares what is whole and is made.
func TestDamagedLastBlock(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	l := mustOpen(t, dir, pebblelog.Options{})
	mustCreate(t, l, meta("s1"))
	if err := l.Close(); err != nil { // the metadata in a table of its own
		t.Fatal(err)
	}
	l = mustOpen(t, dir, pebblelog.Options{})
	mustAppend(t, l, "s1", 0, bigEvents(1, 100))
	if err := l.Close(); err != nil { // the events in a table of four blocks
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) < 2 {
		t.Fatalf("tables %v, %v; want two", ssts, err)
	}
	last := ssts[len(ssts)-1] // the newest: names sort by number
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	// The last data block is found from the end of the table, a byte
	// flipped at a time: the first whose damage a read meets after most
	// of the events (the index block and the footer after it fail at
	// once, or at the open).
	var damaged uint64
	var ce *events.CorruptError
	for off := len(b) - 64; off > len(b)/2 && damaged == 0; off -= 64 {
		c := bytes.Clone(b)
		c[off] ^= 0xff
		if err := os.WriteFile(last, c, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := pebblelog.Open(dir, pebblelog.Options{ReadOnly: true})
		if err != nil {
			continue
		}
		evs, rerr := readAll(r, "s1", 1)
		r.Close()
		if len(evs) >= 50 && errors.As(rerr, &ce) && ce.Seq == uint64(len(evs))+1 {
			damaged = ce.Seq
		}
	}
	if damaged == 0 {
		t.Fatal("no byte of the table's second half damages its last data block")
	}

	l = mustOpen(t, dir, pebblelog.Options{}) // nothing cached
	defer l.Close()
	_, lerr := l.LastSeq(ctx, "s1")
	if !errors.As(lerr, &ce) || ce.Session != "s1" || ce.Seq != damaged {
		t.Fatalf("LastSeq of a session whose last block is damaged: %v; want a *events.CorruptError at seq %d, as a read", lerr, damaged)
	}
	fork := meta("f1")
	fork.Parent, fork.ForkSeq = "s1", 30
	if err := l.CreateSession(ctx, fork); err != nil {
		t.Fatalf("a fork at seq 30 of a session damaged from seq %d: %v; want it made", damaged, err)
	}
	if evs, err := readAll(l, "f1", 1); err != nil || len(evs) != 30 {
		t.Fatalf("the fork's events: %d, %v; want the 30 it shares", len(evs), err)
	}
	fork = meta("f2")
	fork.Parent, fork.ForkSeq = "s1", 100
	if err := l.CreateSession(ctx, fork); !errors.Is(err, events.ErrCorrupt) {
		t.Fatalf("a fork at seq 100, in the damage: %v; want the corruption reported", err)
	}
}

// TestMissingMarker removes the empty marker files that name the store's
// MANIFEST and its format (some copy and sync tools skip empty files), and
// the MANIFEST itself: Open refuses each as damage, read-write and
// read-only, and removes nothing. Without the check, Pebble took a folder
// without its MANIFEST marker for a new store and, opened read-write,
// deleted every table and WAL of the old one. The message names the file
// that restores the marker; restored, the store opens whole.
func TestMissingMarker(t *testing.T) {
	for _, clean := range []bool{true, false} {
		img := crashImage(t, clean)
		marker := files(t, img, "marker.manifest.")
		if len(marker) != 1 {
			t.Fatalf("manifest markers: %q, want one", marker)
		}
		for _, gone := range []string{marker[0], files(t, img, "marker.format-version.")[0], files(t, img, "MANIFEST-")[0]} {
			fs := img.CrashClone(vfs.CrashCloneCfg{})
			if err := fs.Remove(fs.PathJoin("db", gone)); err != nil {
				t.Fatal(err)
			}
			before := len(files(t, fs, ""))
			for _, ro := range []bool{false, true} {
				o := openAndRead(t, fs, ro)
				var cf *pebblelog.CorruptFileError
				if !errors.As(o.open, &cf) || !errors.Is(o.open, events.ErrCorrupt) {
					t.Fatalf("clean %v, %s removed (read-only %v): Open got %v (read %v), want a *CorruptFileError", clean, gone, ro, o.open, o.n)
				}
				if gone == marker[0] && !strings.Contains(o.open.Error(), "an empty file named "+marker[0]+" restores") {
					t.Fatalf("clean %v, %s removed: %v, want the name of the marker to restore", clean, gone, o.open)
				}
			}
			if after := len(files(t, fs, "")); after != before || len(files(t, fs, ".sst")) == 0 {
				t.Fatalf("clean %v, %s removed: a refused Open changed the folder (%d files, then %d)", clean, gone, before, after)
			}
			if gone == marker[0] {
				writeFile(t, fs, fs.PathJoin("db", gone), nil)
				if o := openAndRead(t, fs, false); o.open != nil || o.n["done"] != doneEvents {
					t.Fatalf("clean %v, the marker restored: %+v", clean, o)
				}
			}
		}
	}
	// A store whose creation stopped before its format-version marker
	// (written last, after the MANIFEST, its marker and the first WAL)
	// has no table, and opens.
	fresh := vfs.NewCrashableMem()
	if err := mustOpen(t, "db", pebblelog.Options{FS: fresh}).Close(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Remove(fresh.PathJoin("db", files(t, fresh, "marker.format-version.")[0])); err != nil {
		t.Fatal(err)
	}
	if len(files(t, fresh, ".sst")) != 0 {
		t.Fatal("a store with no session has a table")
	}
	if o := openAndRead(t, fresh, false); o.open != nil {
		t.Fatalf("a store made up to its format-version marker: %v", o.open)
	}
	// With data in its WAL only (a crash before the first flush), the
	// store that lost that marker is refused as damaged, and kept.
	walOnly := vfs.NewCrashableMem()
	lw := mustOpen(t, "db", pebblelog.Options{FS: walOnly})
	mustCreate(t, lw, meta("s"))
	appendN(t, lw, "s", 0, 20)
	crashed := walOnly.CrashClone(vfs.CrashCloneCfg{})
	lw.Close()
	if err := crashed.Remove(crashed.PathJoin("db", files(t, crashed, "marker.format-version.")[0])); err != nil {
		t.Fatal(err)
	}
	if len(files(t, crashed, ".sst")) != 0 {
		t.Fatal("the crashed store has a table: the case is not data in the WAL only")
	}
	for _, ro := range []bool{false, true} {
		o := openAndRead(t, crashed, ro)
		if !errors.Is(o.open, events.ErrCorrupt) || !strings.Contains(o.open.Error(), "format-version marker") {
			t.Fatalf("data in the WAL only, its format-version marker lost (read-only %v): %v; want damage", ro, o.open)
		}
	}
	// A folder with no data yet opens as a new store: empty, or with only
	// the MANIFEST of a creation that stopped before its marker.
	fs := vfs.NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	if o := openAndRead(t, fs, false); o.open != nil {
		t.Fatalf("an empty folder: %v", o.open)
	}
	fs = vfs.NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, fs.PathJoin("db", "MANIFEST-000001"), []byte("x"))
	if o := openAndRead(t, fs, false); o.open != nil {
		t.Fatalf("a folder with a MANIFEST and no marker, table or WAL: %v", o.open)
	}
}

// TestMissingTable removes a table the MANIFEST lists, or cuts it short:
// Open refuses the store as damaged (Pebble's own consistency check, a
// plain error, told apart), read-write and read-only, and changes nothing.
func TestMissingTable(t *testing.T) {
	img := crashImage(t, true)
	tables := files(t, img, ".sst")
	if len(tables) == 0 {
		t.Fatal("no table in the store")
	}
	for _, cut := range []bool{false, true} {
		fs := img.CrashClone(vfs.CrashCloneCfg{})
		path := fs.PathJoin("db", tables[0])
		if cut {
			fs = damage(t, img, tables[0], func(b []byte) []byte { return b[:len(b)/2] })
		} else if err := fs.Remove(path); err != nil {
			t.Fatal(err)
		}
		before := files(t, fs, "")
		for _, ro := range []bool{false, true} {
			o := openAndRead(t, fs, ro)
			var cf *pebblelog.CorruptFileError
			if !errors.As(o.open, &cf) || !errors.Is(o.open, events.ErrCorrupt) || !strings.Contains(o.open.Error(), "restore the folder from a copy") {
				t.Fatalf("%s cut %v (read-only %v): Open got %v, want a *CorruptFileError", tables[0], cut, ro, o.open)
			}
		}
		if after := files(t, fs, ""); !slices.Equal(before, after) {
			t.Fatalf("%s cut %v: a refused Open changed the folder: %q, then %q", tables[0], cut, before, after)
		}
	}
	// An open refused for room leaves the record of the last clean close
	// too (it is checked before the record is removed).
	fs := img.CrashClone(vfs.CrashCloneCfg{})
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1, TotalBytes: 200 << 20})
	if _, err := pebblelog.Open("db", pebblelog.Options{FS: fs}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Open with a byte free: %v, want ENOSPC", err)
	}
	if got := files(t, fs, pebblelog.CloseRecordName); len(got) != 1 {
		t.Fatalf("an open refused for room removed the record of the last clean close (%q)", got)
	}
}

// TestCompactOverDamage: the compaction that gives a deleted session's
// space back reads the tables it spans; a damaged one is reported as
// damage (events.ErrCorrupt, the file named), not as Pebble's raw error.
// Bytes flipped across the session's table: each delete and compaction
// either passes or reports the damage so.
func TestCompactOverDamage(t *testing.T) {
	// A session of many blocks: the delete reads its first and last
	// events and its metadata, the compaction every block.
	img := vfs.NewCrashableMem()
	w := mustOpen(t, "db", pebblelog.Options{FS: img})
	mustCreate(t, w, meta("done"))
	appendN(t, w, "done", 0, 4000)
	finish(t, w, "done", 4000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tables := files(t, img, ".sst")
	size := len(readFile(t, img, img.PathJoin("db", tables[0])))
	ctx := context.Background()
	compacted := 0
	for off := 64; off < size; off += size / 40 {
		fs := damage(t, img, tables[0], flipAt(off))
		l, err := pebblelog.Open("db", pebblelog.Options{FS: fs, Logger: hclog.NewNullLogger()})
		if err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("byte %d flipped: open: %v; want damage", off, err)
			}
			continue
		}
		if _, err := l.DeleteSession(ctx, "done"); err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("byte %d flipped: delete: %v; want damage", off, err)
			}
			l.Close()
			continue
		}
		err = l.Compact(ctx, "done")
		var cf *pebblelog.CorruptFileError
		switch {
		case err == nil:
		case errors.Is(err, events.ErrCorrupt) && errors.As(err, &cf) && strings.HasSuffix(cf.Path, tables[0]):
			compacted++
		default:
			t.Fatalf("byte %d flipped: compact: %v; want a *CorruptFileError naming %s", off, err, tables[0])
		}
		l.Close()
	}
	if compacted == 0 {
		t.Fatal("no flipped byte left the delete to its compaction: the test shows nothing")
	}
}

// One session's metadata that does not read hides no other session:
// Sessions lists the others and names it in a *events.DamagedError.
func TestSessionsBesideDamagedMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := pebblelog.Open(dir, pebblelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := l.CreateSession(ctx, events.SessionMeta{ID: id, World: "w", Status: events.StatusFinished}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("m/b"), []byte("scrambled"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, pebblelog.CloseRecordName)); err != nil {
		t.Fatal(err)
	}
	l, err = pebblelog.Open(dir, pebblelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ms, err := l.Sessions(ctx)
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	var damaged *events.DamagedError
	var ce *events.CorruptError
	if !slices.Equal(ids, []string{"a", "c"}) || !errors.As(err, &damaged) || len(damaged.Errs) != 1 ||
		!errors.As(err, &ce) || ce.Session != "b" || !errors.Is(err, events.ErrCorrupt) {
		t.Fatalf("Sessions: %v, %v; want a and c, and b named damaged", ids, err)
	}
}

// A damaged block of a table among the sessions' metadata stops the
// listing there: the sessions before it are still listed, with a
// *events.DamagedError (a writer's open then warns and goes on; it failed).
func TestSessionsBeforeADamagedBlock(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	l := mustOpen(t, "db", pebblelog.Options{FS: fs})
	rng := rand.New(rand.NewPCG(3, 4))
	names := map[string]string{} // session -> one of its agents, found in the table by its bytes
	for i := range 60 {
		m := meta(fmt.Sprintf("s%02d", i))
		m.Agents = map[string]string{}
		for range 100 { // about 5 KB of metadata that does not compress
			const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			name := make([]byte, 32)
			for i := range name {
				name[i] = alnum[rng.IntN(len(alnum))]
			}
			m.Agents[string(name)] = "greedy"
			names[m.ID] = string(name[:12])
		}
		mustCreate(t, l, m)
	}
	l = mustOpen(t, "db", pebblelog.Options{FS: damageBlockOf(t, l, fs, []byte(names["s40"]), 0)})
	defer l.Close()
	ms, err := l.Sessions(ctx)
	if n := len(ms); n < 30 || n >= 41 || ms[0].ID != "s00" || !errors.As(err, new(*events.DamagedError)) || !errors.Is(err, events.ErrCorrupt) {
		t.Fatalf("Sessions: %d sessions, %v; want those before the damaged block (s00 to about s39) and the damage", n, err)
	}
	// It says where the list stops: a list cut short must not pass for whole.
	if want := "the sessions after " + ms[len(ms)-1].ID + " are not listed"; !strings.Contains(err.Error(), want) {
		t.Fatalf("Sessions: %v; want it to say %q", err, want)
	}
}

// damageBlockOf closes l, whose store is on fs, and returns a copy of the
// store in which the table block holding marker (bytes stored as they are:
// incompressible) has a byte flipped, off bytes after the marker.
func damageBlockOf(tb testing.TB, l *pebblelog.Log, fs *vfs.MemFS, marker []byte, off int) *vfs.MemFS {
	tb.Helper()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	img := fs.CrashClone(vfs.CrashCloneCfg{})
	for _, name := range files(tb, img, ".sst") {
		if at := bytes.Index(readFile(tb, img, img.PathJoin("db", name)), marker); at >= 0 {
			return damage(tb, img, name, flipAt(at+off))
		}
	}
	tb.Fatalf("%q is in no table: the test damages nothing", marker)
	return nil
}
