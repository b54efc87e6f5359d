package pebblelog_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// diskImage writes crashImage(clean) to a new folder on the OS file system
// and returns its path.
func diskImage(tb testing.TB, clean bool) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "db")
	if _, err := vfs.Clone(crashImage(tb, clean), vfs.Default, "db", dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// folderState returns each file of dir with its size, modification time
// and SHA-256.
func folderState(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]string)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d bytes, mtime %d, sha256 %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return out
}

func wantSameFolder(tb testing.TB, what string, before, after map[string]string) {
	tb.Helper()
	if maps.Equal(before, after) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if after[name] != before[name] {
			tb.Errorf("%s: %s was %s, is %q", what, name, before[name], after[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[name]; !ok {
			tb.Errorf("%s: %s appeared", what, name)
		}
	}
	tb.FailNow()
}

// readWhole checks that l holds both sessions of a crash image, whole.
func readWhole(tb testing.TB, what string, l *pebblelog.Log) {
	tb.Helper()
	for id, want := range map[string]int{"done": doneEvents, "live": liveEvents} {
		evs, err := readAll(l, id, 1)
		if err != nil || len(evs) != want {
			tb.Fatalf("%s: session %s: read %d events, %v; want %d", what, id, len(evs), err, want)
		}
	}
}

// TestReadOnly opens, read-only, a store a crash left (its running session
// in the WAL alone): it reads everything, refuses writes, and leaves every
// file as it was, the WAL included; a read-write open then replays it.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := diskImage(t, false)
	before := folderState(t, dir)
	l := mustOpen(t, dir, pebblelog.Options{ReadOnly: true, Logger: testLogger(t)})
	readWhole(t, "read-only", l)
	m := meta("done")
	m.Status = events.StatusFinished
	for name, err := range map[string]error{
		"CreateSession": l.CreateSession(ctx, meta("new")),
		"UpdateSession": l.UpdateSession(ctx, m),
		"Append":        l.Append(ctx, "live", liveEvents, mkEvents(liveEvents+1, 1)),
		"PutCheckpoint": l.PutCheckpoint(ctx, "live", events.Checkpoint{Seq: 1, StateHash: fmt.Sprintf("%064x", 1)}),
	} {
		if !errors.Is(err, pebblelog.ErrReadOnly) {
			t.Errorf("%s on a read-only log: got %v, want ErrReadOnly", name, err)
		}
	}
	// Readers share the folder.
	l2 := mustOpen(t, dir, pebblelog.Options{ReadOnly: true})
	readWhole(t, "second reader", l2)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	wantSameFolder(t, "after a read-only open", before, folderState(t, dir))
	// A writer waits for them (Pebble's attempt rewrites the empty LOCK).
	if w, err := pebblelog.Open(dir, pebblelog.Options{}); err == nil {
		w.Close()
		t.Fatal("read-write Open while a reader holds the folder: got nil error")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	w := mustOpen(t, dir, pebblelog.Options{})
	if r, err := pebblelog.Open(dir, pebblelog.Options{ReadOnly: true}); err == nil {
		r.Close()
		t.Fatal("read-only Open while a writer holds the folder: got nil error")
	}
	readWhole(t, "read-write after read-only", w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pebblelog.Open(filepath.Join(t.TempDir(), "none"), pebblelog.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only Open of a folder with no log: got nil error")
	}
}

// TestReadOnlyMount opens a store on a read-only bind mount (root only:
// chmod does not stop root). Read-only, it reads everything; read-write,
// Open fails with an error.
func TestReadOnlyMount(t *testing.T) {
	dir := diskImage(t, false)
	mnt := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", dir, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot make the mount read-only: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "probe"), nil, 0o644); err == nil {
		t.Fatal("the mount is writable")
	}
	before := folderState(t, dir)
	l := mustOpen(t, mnt, pebblelog.Options{ReadOnly: true})
	readWhole(t, "read-only mount", l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err := pebblelog.Open(mnt, pebblelog.Options{}); err == nil {
		w.Close()
		t.Fatal("read-write Open on a read-only mount: got nil error")
	} else {
		t.Logf("read-write Open on a read-only mount: %v", err)
	}
	wantSameFolder(t, "after opening the read-only mount", before, folderState(t, dir))
}
