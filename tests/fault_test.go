package tests

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim/app"
)

// The fault suite: a store damaged on disk is reported (exit 3, naming what
// can be named) or read with nothing acknowledged lost — never a panic and
// never "ok" with fewer events than were stored. Each case runs the real
// binary on a fresh data folder holding one finished session.

// faultRun runs the binary and returns its output and exit code.
func faultRun(tb testing.TB, args ...string) (string, int) {
	tb.Helper()
	cmd := exec.Command(corpsimBinary(tb), args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatalf("corpsim %v: %v", args, err)
	}
	if strings.Contains(string(out), "panic:") || strings.Contains(string(out), "goroutine ") {
		tb.Fatalf("corpsim %v panicked (exit %d):\n%s", args, code, out)
	}
	return string(out), code
}

// faultSession runs startup seed 7 (with run's extra flags) into a new
// data folder and returns the folder, the session and its event count.
func faultSession(tb testing.TB, extra ...string) (string, string, int) {
	tb.Helper()
	data := filepath.Join(tb.TempDir(), "data")
	out, code := faultRun(tb, append([]string{"run", "--seed", "7", "--data", data, "--json"}, extra...)...)
	if code != 0 {
		tb.Fatalf("run exited %d:\n%s", code, out)
	}
	var res struct {
		Session string `json:"session"`
		Events  int    `json:"events"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		tb.Fatalf("run --json: %v\n%s", err, out)
	}
	return data, res.Session, res.Events
}

// filesOf lists the files of the store matching glob, largest first.
func filesOf(tb testing.TB, data, glob string) []string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(data, glob))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Slice(m, func(i, j int) bool {
		a, _ := os.Stat(m[i])
		b, _ := os.Stat(m[j])
		return a.Size() > b.Size()
	})
	return m
}

func flipByte(tb testing.TB, path string, at float64) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		tb.Fatalf("%s: %v (%d bytes)", path, err, len(b))
	}
	i := int(float64(len(b)) * at)
	b[i] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// mustReportOrKeepAll: verify either reports the damage (exit 3) or says ok
// with every event stored.
func mustReportOrKeepAll(t *testing.T, data, session string, events int, what string) {
	t.Helper()
	out, code := faultRun(t, "verify", session, "--data", data, "--json")
	switch code {
	case 3:
		t.Logf("%s: reported (exit 3): %s", what, strings.TrimSpace(out))
	case 0:
		var rep struct {
			OK     bool `json:"ok"`
			Events int  `json:"events"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
			t.Fatalf("%s: verify --json: %v\n%s", what, err, out)
		}
		if !rep.OK || rep.Events != events {
			t.Fatalf("%s: verify says ok=%v with %d events, but %d were stored", what, rep.OK, rep.Events, events)
		}
		t.Logf("%s: read whole (%d events)", what, rep.Events)
	default:
		t.Fatalf("%s: verify exited %d, want 3 (reported) or 0 with every event:\n%s", what, code, out)
	}
	if code == 3 && !strings.Contains(out, data) && !strings.Contains(out, session) {
		t.Errorf("%s: the report names neither the store nor the session:\n%s", what, out)
	}
}

func TestFaultCorruptStore(t *testing.T) {
	t.Run("a byte of an sstable", func(t *testing.T) {
		data, s, n := faultSession(t)
		ssts := filesOf(t, data, "*.sst")
		if len(ssts) == 0 {
			t.Fatal("a finished session left no sstable: a clean close must flush")
		}
		flipByte(t, ssts[0], 0.4)
		out, code := faultRun(t, "verify", s, "--data", data)
		if code != 3 {
			t.Fatalf("verify of a flipped sstable byte exited %d, want 3:\n%s", code, out)
		}
		if !strings.Contains(out, s) {
			t.Errorf("the report does not name the session:\n%s", out)
		}
		mustReportOrKeepAll(t, data, s, n, "sst flip")
		// The other read-only commands report too, never panic.
		for _, cmd := range [][]string{{"replay", s}, {"score", s}, {"sessions"}} {
			faultRun(t, append(cmd, "--data", data)...)
		}
	})
	t.Run("a byte of the last WAL", func(t *testing.T) {
		data, s, n := faultSession(t)
		wals := filesOf(t, data, "*.log")
		if len(wals) == 0 {
			t.Skip("no WAL left")
		}
		if st, _ := os.Stat(wals[0]); st.Size() > 0 {
			flipByte(t, wals[0], 0.5)
		}
		mustReportOrKeepAll(t, data, s, n, "WAL flip")
	})
	t.Run("the WAL cut to a tenth", func(t *testing.T) {
		data, s, n := faultSession(t)
		for _, w := range filesOf(t, data, "*.log") {
			st, _ := os.Stat(w)
			if err := os.Truncate(w, st.Size()/10); err != nil {
				t.Fatal(err)
			}
		}
		mustReportOrKeepAll(t, data, s, n, "WAL cut")
	})
	t.Run("a byte of the MANIFEST", func(t *testing.T) {
		data, s, n := faultSession(t)
		m := filesOf(t, data, "MANIFEST-*")
		if len(m) == 0 {
			t.Fatal("no MANIFEST")
		}
		flipByte(t, m[0], 0.5)
		mustReportOrKeepAll(t, data, s, n, "MANIFEST flip")
	})
	t.Run("events lost after the end marker", func(t *testing.T) {
		data, s, n := faultSession(t)
		// Delete the last ten events behind the log's back, as a lost WAL
		// tail would have; the session's metadata still records its end.
		deleteEvents(t, data, s, n-9, n)
		out, code := faultRun(t, "verify", s, "--data", data)
		if code != 3 || strings.Count(out, "10 events missing") != 1 {
			t.Fatalf("verify after losing 10 events exited %d, want 3 naming them once:\n%s", code, out)
		}
		// replay too: a log without the end its metadata records is
		// damage, not a session that did not end.
		out, code = faultRun(t, "replay", s, "--data", data)
		if code != 3 || !strings.Contains(out, "10 events missing") {
			t.Fatalf("replay after losing 10 events exited %d, want 3 naming them:\n%s", code, out)
		}
		// And the commands that read the session whole: none scores,
		// exports or explains what is left as if it were the session
		// (they all exited 0). A fork at or before the recorded end,
		// within the lost tail, needs the events missing: it said
		// "--at N is beyond the end" and exited 2.
		for _, args := range [][]string{{"log", s}, {"log", s, "--from", strconv.Itoa(n - 3)}, {"score", s}, {"export", s, "--format", "sft"}, {"export", s, "--format", "jsonl"},
			{"report", s, "-o", filepath.Join(t.TempDir(), "r.html")}, {"diagnose", s},
			{"fork", s, "--at", strconv.Itoa(n)}, {"fork", s, "--at", strconv.Itoa(n - 3), "--create-only"}} {
			out, code := faultRun(t, append(args, "--data", data)...)
			if code != 3 || !strings.Contains(out, "10 events missing") {
				t.Errorf("%v after losing 10 events exited %d, want 3 naming them:\n%.600s", args, code, out)
			}
		}
		// Past the end its metadata records, a fork is still a mistake
		// in what was asked (exit 2), which says what the log lost.
		out, code = faultRun(t, "fork", s, "--at", strconv.Itoa(n+1), "--data", data)
		if want := fmt.Sprintf("--at %d is beyond the end of session %s, which has %d events (its log lost the last 10)", n+1, s, n); code != 2 || !strings.Contains(out, want) {
			t.Errorf("fork --at %d after losing 10 events exited %d, want 2 and %q:\n%s", n+1, code, want, out)
		}
	})
}

// TestFaultLostBeforeACheckpoint: events lost before a session's latest
// checkpoint (a WAL deleted from the middle of its history) are refused by
// a fork and a resume, which start from that checkpoint: both went on and
// made sessions that could never be verified (a review: resume exited 0,
// "finished", 77,019 events that fail verify).
func TestFaultLostBeforeACheckpoint(t *testing.T) {
	data, s, n := faultSession(t, "--checkpoint-every", "50")
	out, code := faultRun(t, "fork", s, "--at", strconv.Itoa(n), "--create-only", "--json", "--data", data)
	if code != 0 {
		t.Fatalf("fork --create-only exited %d:\n%s", code, out)
	}
	var fork struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &fork); err != nil || fork.ID == "" {
		t.Fatalf("fork --create-only --json: %v\n%s", err, out)
	}
	deleteEvents(t, data, s, 10, 20)
	for _, args := range [][]string{{"fork", s, "--at", strconv.Itoa(n - 1)}, {"resume", fork.ID}} {
		out, code := faultRun(t, append(args, "--data", data)...)
		if code != 3 || !strings.Contains(out, "seq 10") {
			t.Errorf("%s after losing events 10-20 exited %d, want 3 naming seq 10:\n%.600s", args[0], code, out)
		}
	}
}

// deleteEvents deletes events from to to (inclusive) of session s from
// the store in data behind the log's back, as lost WAL data would.
func deleteEvents(tb testing.TB, data, s string, from, to int) {
	tb.Helper()
	key := func(seq int) []byte {
		k := append([]byte("e/"+s+"/"), make([]byte, 8)...)
		binary.BigEndian.PutUint64(k[len(k)-8:], uint64(seq))
		return k
	}
	behindTheLog(tb, data, func(db *pebble.DB) error { return db.DeleteRange(key(from), key(to+1), pebble.Sync) })
}

// behindTheLog changes the store in data with change, behind the log's back.
func behindTheLog(tb testing.TB, data string, change func(*pebble.DB) error) {
	tb.Helper()
	db, err := pebble.Open(data, &pebble.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := change(db); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	// pebblelog notices that another program opened the store since its
	// last clean close, and says to delete this file if that is known.
	if err := os.Remove(filepath.Join(data, "pebblelog-close.json")); err != nil {
		tb.Fatal(err)
	}
}

// TestFaultDamagedMetadata: one session's metadata that no longer reads
// hides no other session and stops no command that does not need it. It
// stopped them all: every command that opens the store for writing (run,
// serve, fork, resume) and sessions failed on it.
func TestFaultDamagedMetadata(t *testing.T) {
	data, s, _ := faultSession(t)
	out, code := faultRun(t, "run", "--seed", "8", "--data", data, "--json")
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, out)
	}
	other := strings.TrimSpace(strings.Split(strings.SplitAfter(out, `"session": "`)[1], `"`)[0])
	behindTheLog(t, data, func(db *pebble.DB) error { return db.Set([]byte("m/"+s), []byte("scrambled"), pebble.Sync) })
	for _, args := range [][]string{{"sessions"}, {"sessions", "--json"}} {
		out, code := faultRun(t, append(args, "--data", data)...)
		if code != 3 || !strings.Contains(out, other) || !strings.Contains(out, "corrupt metadata of session "+s) {
			t.Errorf("%v exited %d; want 3, %s listed and %s named:\n%s", args, code, other, s, out)
		}
	}
	for _, args := range [][]string{{"run", "--seed", "9"}, {"fork", other, "--at", "1"}, {"verify", other}} {
		if out, code := faultRun(t, append(args, "--data", data)...); code != 0 {
			t.Errorf("%v exited %d beside a damaged session:\n%s", args, code, out)
		}
	}
	if out, code := faultRun(t, "verify", s, "--data", data); code != 3 || !strings.Contains(out, s) {
		t.Errorf("verify of the damaged session exited %d; want 3 naming it:\n%s", code, out)
	}
	// A server beside it lists the others too: its list (over NATS and
	// HTTP) and its live page failed (503, 500), so no client could see
	// any session.
	addr := freeAddr(t)
	sp := startServe(t, data, "--http", addr)
	base, op := "http://"+addr, strings.TrimSpace(string(mustRead(t, filepath.Join(data, "operator.token"))))
	for _, path := range []string{"/v1/sessions", "/live/"} {
		if code, body := httpDo(t.Context(), "GET", base+path, op, nil); code != http.StatusOK || !strings.Contains(string(body), other) || strings.Contains(string(body), `"`+s+`"`) {
			t.Errorf("GET %s beside a damaged session: %d\n%.600s", path, code, body)
		}
	}
	if code, body := httpDo(t.Context(), "GET", base+"/live/", op, nil); !strings.Contains(string(body), "Damaged store") {
		t.Errorf("the live page does not say the store is damaged (%d):\n%.600s", code, body)
	}
	// The list says it is not whole: over HTTP in "damaged", over NATS in
	// a header that sessions --nats turns into exit 3 after the list.
	if _, body := httpDo(t.Context(), "GET", base+"/v1/sessions", op, nil); !strings.Contains(string(body), `"damaged":"`) || !strings.Contains(string(body), s) {
		t.Errorf("GET /v1/sessions does not say what is damaged:\n%.600s", body)
	}
	if out, code := faultRun(t, "sessions", "--nats", sp.url, "--token", op); code != 3 || !strings.Contains(out, other) || !strings.Contains(out, "lists only some sessions") {
		t.Errorf("sessions --nats beside a damaged session exited %d; want 3, %s listed and the damage named:\n%s", code, other, out)
	}
	// Said once, not at every listing (the lists above: four).
	if n := strings.Count(sp.stderr.String(), "sessions left out of the list"); n != 1 {
		t.Errorf("serve warned of the damaged list %d times; want once:\n%s", n, sp.stderr.String())
	}
}

// TestFaultReadOnlyFolder: the commands that only read work on a folder
// mounted read-only, and change nothing in a writable one.
func TestFaultReadOnlyFolder(t *testing.T) {
	data, s, _ := faultSession(t)
	before := snapshotDir(t, data)
	for _, cmd := range [][]string{{"sessions"}, {"log", s}, {"verify", s}, {"replay", s}, {"score", s}, {"trace", s, "--goal", "mvp"}} {
		if out, code := faultRun(t, append(cmd, "--data", data)...); code != 0 {
			t.Fatalf("%v exited %d:\n%s", cmd, code, out)
		}
	}
	if after := snapshotDir(t, data); after != before {
		t.Fatalf("read-only commands changed the store:\nbefore %s\nafter  %s", before, after)
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only folder needs root")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(data, ro, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	defer syscall.Unmount(ro, 0)
	if err := syscall.Mount(data, ro, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("read-only remount: %v", err)
	}
	for _, cmd := range [][]string{{"sessions"}, {"verify", s}, {"replay", s}, {"score", s}} {
		if out, code := faultRun(t, append(cmd, "--data", ro)...); code != 0 {
			t.Errorf("%v on a read-only folder exited %d:\n%s", cmd, code, out)
		}
	}
}

// snapshotDir is the names, sizes and modification times of dir's files.
func snapshotDir(tb testing.TB, dir string) string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d:%s ", e.Name(), info.Size(), info.ModTime())
	}
	return b.String()
}

// TestFaultDiskFull: a run on a full disk fails cleanly — an error, not a
// panic — and the session is recorded interrupted with what was stored.
func TestFaultDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=130m"); err != nil {
		t.Skipf("tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, 0)
	data := filepath.Join(dir, "data")
	runOut, code := faultRun(t, "run", "--world", "portfolio", "--seed", "1", "--data", data, "--checkpoint-every", "200")
	if code == 0 {
		t.Skipf("the run fit in 130 MiB:\n%s", runOut)
	}
	if !strings.Contains(runOut, "space") {
		t.Errorf("the run on a full disk exited %d without saying so:\n%s", code, runOut)
	}
	out, code := faultRun(t, "sessions", "--data", data, "--json")
	if code != 0 {
		t.Fatalf("sessions on the full disk exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, `"status":"interrupted"`) {
		t.Errorf("the session is not recorded interrupted:\n%s\nthe run said:\n%s", out, runOut)
	}
}

// crashedWithTwoWALs returns a data folder as a crash would leave it with
// two WALs: session a finished and flushed to a table; session b finished,
// its events and its end in a WAL that is not the last one, since the
// crash came while that WAL's memtable was being flushed (held here: the
// table's file cannot be made while the folder is copied).
func crashedWithTwoWALs(tb testing.TB) (data, a, b string, events int) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "live")
	var blocking atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") && blocking.Load() {
			once.Do(func() { close(blocked) })
			<-release
		}
		return nil
	}))
	l, err := pebblelog.Open(dir, pebblelog.Options{FS: fs, Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	resA := mustRun(tb, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Log: l})
	blocking.Store(true)
	type result struct {
		res *app.RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 8, Agents: "greedy", Log: l, Logger: testLogger(tb)})
		done <- result{res, err}
	}()
	select {
	case <-blocked:
	case r := <-done:
		tb.Fatalf("session b ended (%v) without a flush", r.err)
	case <-time.After(2 * time.Minute):
		tb.Fatal("session b's flush never began")
	}
	data = filepath.Join(tb.TempDir(), "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		tb.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "LOCK" || e.IsDir() {
			continue
		}
		if err := os.WriteFile(filepath.Join(data, e.Name()), mustRead(tb, filepath.Join(dir, e.Name())), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	close(release)
	r := <-done
	if r.err != nil {
		tb.Fatal(r.err)
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	if r.res.Events != resA.Events {
		tb.Fatalf("precondition: sessions of %d and %d events; want the same world's length", resA.Events, r.res.Events)
	}
	return data, resA.Session, r.res.Session, int(r.res.Events)
}

// TestFaultNonFinalWAL: in a store left by a crash, a flipped byte in a
// WAL that is not the last one, or in the MANIFEST (which no clean close
// recorded), is reported by verify, replay and sessions with exit 3,
// naming the damaged file; never a panic, never "ok" with fewer events.
func TestFaultNonFinalWAL(t *testing.T) {
	data, a, b, n := crashedWithTwoWALs(t)
	wals := filesOf(t, data, "*.log")
	sort.Strings(wals) // by number: the last one is the WAL made at the flush
	if len(wals) < 2 {
		t.Fatalf("precondition: the crashed store has WALs %v, want two", wals)
	}
	for _, s := range []string{a, b} {
		mustReportOrKeepAll(t, data, s, n, "the crashed store, undamaged")
		if out, code := faultRun(t, "verify", s, "--data", data); code != 0 {
			t.Fatalf("precondition: verify %s of the undamaged crashed store exited %d:\n%s", s, code, out)
		}
	}
	copyStore := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(data)
		for _, e := range entries {
			if err := os.WriteFile(filepath.Join(dst, e.Name()), mustRead(t, filepath.Join(data, e.Name())), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	for _, tt := range []struct {
		name string
		file func(dir string) string
	}{
		{"a byte of the first of two WALs", func(dir string) string { return filepath.Join(dir, filepath.Base(wals[0])) }},
		{"a byte of the MANIFEST after the crash", func(dir string) string { return filesOf(t, dir, "MANIFEST-*")[0] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStore(t)
			file := tt.file(dir)
			flipByte(t, file, 0.5)
			for _, cmd := range [][]string{{"verify", b}, {"verify", a}, {"replay", b}, {"sessions"}} {
				out, code := faultRun(t, append(cmd, "--data", dir)...)
				t.Logf("%v: exit %d: %s", cmd, code, strings.TrimSpace(out))
				if code == 0 && cmd[0] == "verify" {
					mustReportOrKeepAll(t, dir, cmd[1], n, tt.name)
					continue
				}
				if code != 3 {
					t.Errorf("%v exited %d, want 3 (a damaged store)", cmd, code)
				}
				if !strings.Contains(out, filepath.Base(file)) {
					t.Errorf("%v does not name the damaged file %s:\n%s", cmd, filepath.Base(file), out)
				}
			}
		})
	}
}
