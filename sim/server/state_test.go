package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
)

// The state file keeps sessions and their seats' tokens across reopening,
// mode 0600, and drops what is removed.
func TestStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve-state.json")
	f, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	seat := wire.Seat{Session: "s1", Member: "bob", Token: "tok", Subject: wire.TurnSubject("s1", "bob")}
	if err := f.put("s1", savedSession{Seats: map[string]wire.Seat{"bob": seat}, TurnTimeout: "5s"}); err != nil {
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

// A recorded timeout wins over the default; a missing or invalid one does not.
func TestSavedTimeouts(t *testing.T) {
	for _, c := range []struct {
		turn, join         string
		wantTurn, wantJoin time.Duration
	}{
		{"", "", 30 * time.Second, time.Minute},
		{"5s", "2m", 5 * time.Second, 2 * time.Minute},
		{"soon", "-1s", 30 * time.Second, time.Minute},
	} {
		turn, join := savedSession{TurnTimeout: c.turn, JoinTimeout: c.join}.timeouts(30*time.Second, time.Minute)
		if turn != c.wantTurn || join != c.wantJoin {
			t.Errorf("timeouts(%q, %q) = %v, %v; want %v, %v", c.turn, c.join, turn, join, c.wantTurn, c.wantJoin)
		}
	}
}

// Changes made at once (sessions created and ended together by many
// clients) share rewrites of the state file, and each returns once one
// begun after it is durable: read back, the file holds exactly the
// sessions put and not removed, as the last change left them.
func TestStateFileChangesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFileName)
	f, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			if err := f.put(id, savedSession{TurnTimeout: fmt.Sprintf("%ds", i)}); err != nil {
				t.Error(err)
				return
			}
			if err := f.setPaused(id, true); err != nil {
				t.Error(err)
			}
			if i%2 == 1 {
				if err := f.remove(id); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	back, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	got := back.saved()
	if len(got) != n/2 {
		t.Fatalf("the file holds %d sessions, want %d", len(got), n/2)
	}
	for i := 0; i < n; i += 2 {
		id := fmt.Sprintf("s%02d", i)
		if s, ok := got[id]; !ok || !s.Paused || s.TurnTimeout != fmt.Sprintf("%ds", i) {
			t.Fatalf("session %s in the file: %+v (%v); want it paused, turn timeout %ds", id, s, ok, i)
		}
	}
}

// A change that finds its value already set still returns only once the
// file holds it: the change that set it may not be durable yet (a pause
// recorded by the session and by its operator at once).
func TestStateFileUnchangedWaitsForDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFileName)
	f, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.put("s1", savedSession{}); err != nil {
		t.Fatal(err)
	}
	// Another caller's change, made but not yet written (its rewrite
	// under way).
	f.mu.Lock()
	saved := f.st.Sessions["s1"]
	saved.Paused = true
	f.st.Sessions["s1"] = saved
	f.changes++
	f.mu.Unlock()
	if err := f.setPaused("s1", true); err != nil {
		t.Fatal(err)
	}
	back, err := openState(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := back.saved()["s1"]; !ok || !s.Paused {
		t.Fatalf("setPaused returned with the file holding %+v (%v); want s1 paused", s, ok)
	}
}
