package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/sim/app"
)

// mustList lists the names in folder dir.
func mustList(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A command that writes to one session (resume, fork, reset, delete) given
// a folder that exists but holds no store (a typo'd --data, a folder of
// something else) says the session is not there and leaves the folder as
// it was, as it does for a folder that does not exist: it does not make a
// store there (a Pebble store and its 24 MiB ballast) to find no session in.
func TestWritersDoNotMakeAStoreToFindNoSession(t *testing.T) {
	ctx := context.Background()
	const id = "01M00000000000000000000NOP"
	for name, try := range map[string]func(data string) error{
		"resume": func(data string) error { _, err := app.Resume(ctx, app.RunOptions{Data: data}, id); return err },
		"fork": func(data string) error {
			_, _, err := app.Fork(ctx, app.RunOptions{Data: data}, app.ForkOptions{Parent: id, At: 5})
			return err
		},
		"reset": func(data string) error {
			_, _, err := app.Fork(ctx, app.RunOptions{Data: data}, app.ForkOptions{Parent: id, Reset: true})
			return err
		},
		"delete": func(data string) error { _, err := app.Delete(ctx, data, []string{id}, false, nil); return err },
	} {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			if err := os.WriteFile(filepath.Join(data, "notes.txt"), []byte("not a store\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := try(data)
			if err == nil || !strings.Contains(err.Error(), "no session "+id+" in "+data) {
				t.Errorf("got %v, want no session %s in %s", err, id, data)
			}
			if got := mustList(t, data); !slices.Equal(got, []string{"notes.txt"}) {
				t.Errorf("the folder holds %v afterwards, want only notes.txt", got)
			}
		})
	}
}

// A writer that opens a store holds its folder: a bus.url left there by a
// corpsim killed while it served names a bus nobody listens on, and is
// removed, so that a command refused the folder meanwhile is not sent to
// that dead bus (and log --follow does not try it).
func TestOpenLogRemovesADeadProcessBusURL(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	log, err := app.OpenLog(ctx, data, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.WriteBusURL(data, "nats://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	// A kill -9: the store is closed (its lock released), bus.url stays.
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	log, err = app.OpenLog(ctx, data, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if url := app.ReadBusURL(data); url != "" {
		t.Errorf("bus.url %q after a writer opened the folder, want none", url)
	}
	_, err = app.OpenRead(ctx, data, nil)
	if err == nil || strings.Contains(err.Error(), "nats://127.0.0.1:1") {
		t.Errorf("a read while the writer holds the folder: %v; want it refused without the dead bus's URL", err)
	}
}
