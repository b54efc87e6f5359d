package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// The same world file read from two folders makes the same session.started:
// it records the file's name, not the path it was given by (a review's
// diff found two such sessions apart at seq 1, and export put the
// operator's folders into training data).
func TestWorldFileRecordedByName(t *testing.T) {
	src, err := worlds.Source("startup")
	if err != nil {
		t.Fatal(err)
	}
	var firsts [][]byte
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "deeper", "still")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "mine.yaml")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		l := memlog.New()
		res := mustRun(t, app.RunOptions{World: path, Seed: 2, Agents: "greedy", Log: l, CheckpointEvery: -1})
		first := readAll(t, l, res.Session)[0]
		if !bytes.Contains(first.Payload, []byte(`"world_file":"mine.yaml"`)) || bytes.Contains(first.Payload, []byte(dir)) {
			t.Fatalf("session.started of %s: %.200s; want world_file mine.yaml and no folder", path, first.Payload)
		}
		firsts = append(firsts, first.Payload)
	}
	if !bytes.Equal(firsts[0], firsts[1]) {
		t.Errorf("the same file from two folders: session.started differs")
	}
}
