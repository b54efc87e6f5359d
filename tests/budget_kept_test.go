package tests

import (
	"encoding/json"
	"testing"
)

// A session's budget of events (--max-events) is in its metadata, and a
// fork, a reset and a resume keep it unless given another: they ran to
// the default budget, so a resumed session did not equal the uninterrupted
// one, and the memory cap the flag sets was gone (a review: 60,000 events
// and event_limit uninterrupted, 77,019 and horizon resumed).
func TestBudgetKeptByForkAndResume(t *testing.T) {
	data := t.TempDir()
	root := cliResult(t, "run", "--world", "startup", "--seed", "1", "--max-events", "200", "--data", data)
	if root.Ended != "event_limit" {
		t.Fatalf("run --max-events 200: %d events, ended %s; want event_limit", root.Events, root.Ended)
	}
	for what, r := range map[string]func() (uint64, string, string){
		"fork": func() (uint64, string, string) {
			f := cliResult(t, "fork", root.Session, "--at", "49", "--data", data)
			return f.Events, f.Ended, f.StateHash
		},
		"reset": func() (uint64, string, string) {
			f := cliResult(t, "reset", root.Session, "--data", data)
			return f.Events, f.Ended, f.StateHash
		},
		"resume of a fork made with --create-only": func() (uint64, string, string) {
			var meta struct {
				ID        string `json:"id"`
				MaxEvents int    `json:"max_events"`
			}
			out := mustCLI(t, "fork", root.Session, "--at", "49", "--create-only", "--json", "--data", data)
			if err := json.Unmarshal([]byte(out), &meta); err != nil || meta.MaxEvents != 200 {
				t.Fatalf("fork --create-only: %v, %s; want max_events 200", err, out)
			}
			f := cliResult(t, "resume", meta.ID, "--data", data)
			return f.Events, f.Ended, f.StateHash
		},
	} { // order: each case is its own
		if n, why, hash := r(); n != root.Events || why != "event_limit" || hash != root.StateHash {
			t.Errorf("%s: %d events, %s, %s; want the session's %d, event_limit, %s", what, n, why, hash, root.Events, root.StateHash)
		}
	}
	if f := cliResult(t, "fork", root.Session, "--at", "49", "--max-events", "300", "--data", data); f.Events <= root.Events {
		t.Errorf("fork --max-events 300: %d events; want more than %d", f.Events, root.Events)
	}
	// 0 given is the default budget, as run takes it, not the session's.
	if f := cliResult(t, "fork", root.Session, "--at", "49", "--max-events", "0", "--data", data); f.Ended == "event_limit" {
		t.Errorf("fork --max-events 0: %d events, ended %s; want the default budget", f.Events, f.Ended)
	}
}
