package service

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corpsim/corpsim/agents/proto"
)

// The state file keeps sessions and their seats' tokens across reopening,
// mode 0600, and drops what is removed.
func TestStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve-state.json")
	f, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	seat := proto.Seat{Session: "s1", Member: "bob", Token: "tok", Subject: proto.TurnSubject("s1", "bob")}
	if err := f.put("s1", savedSession{Seats: map[string]proto.Seat{"bob": seat}, TurnTimeout: "5s"}); err != nil {
		t.Fatal(err)
	}
	if err := f.put("s2", savedSession{}); err != nil {
		t.Fatal(err)
	}
	if err := f.remove("s2"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	g, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	saved := g.saved()
	if len(saved) != 1 || saved["s1"].Seats["bob"] != seat || saved["s1"].TurnTimeout != "5s" {
		t.Fatalf("got %+v, want s1 with bob's seat", saved)
	}
	seats, err := SavedSeats(path)
	if err != nil || len(seats) != 1 || seats[0] != seat {
		t.Fatalf("SavedSeats: got %v, %v", seats, err)
	}
	if seats, err := SavedSeats(filepath.Join(t.TempDir(), "none.json")); err != nil || len(seats) != 0 {
		t.Fatalf("SavedSeats of a missing file: got %v, %v", seats, err)
	}
	var none *stateFile
	if err := none.put("x", savedSession{}); err != nil || none.saved() != nil {
		t.Fatal("a nil state file must keep nothing")
	}
}
