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
