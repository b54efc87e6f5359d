package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A soak of a world file that does not load is refused before it starts,
// with the file's mistake, and makes no data folder: every create of its
// sessions would be refused, and the soak spun through thousands of them a
// second, an error line each, to report 0 sessions and nothing lost (exit 0).
func TestSoakRefusesAWorldThatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(file, []byte("just a string\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Soak(ctx, SoakOptions{World: file, Duration: time.Second, Sessions: 1, Data: data, Grace: time.Second})
	if err == nil || !strings.Contains(err.Error(), file+":1:1:") {
		t.Fatalf("got %+v, %v; want the world file's mistake at %s:1:1", rep, err, file)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data folder after a refused soak: %v, want none made", err)
	}
}
