package tests

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/server"
)

// corpsim delete on a real Pebble data folder: a session with a fork is
// refused and nothing goes; with --forks the fork goes first, then the
// session; the other session is untouched and still verifies; the space of
// the 200,000-ticket bench session comes back at once (its keys are
// compacted); an unknown session is refused by name.
func TestDeleteGivesTheSpaceBack(t *testing.T) {
	data := t.TempDir()
	keep := cliResult(t, "run", "--seed", "1", "--data", data)
	big := cliResult(t, "run", "--world", "support-desk-bench", "--seed", "1", "--data", data)
	out, errs, code := runCLI(t, "fork", big.Session, "--at", "1000", "--create-only", "--json", "--data", data)
	var fork struct{ ID string }
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &fork) != nil || fork.ID == "" {
		t.Fatalf("fork --create-only: exit %d\n%s%s", code, out, errs)
	}
	before := folderBytes(t, data)

	_, errs, code = runCLI(t, "delete", big.Session, "--data", data)
	if code == cli.ExitOK || !strings.Contains(errs, "has forks that read their first events from it ("+fork.ID+")") || !strings.Contains(errs, "--forks deletes them too") {
		t.Fatalf("delete of a session with a fork: exit %d, %q", code, errs)
	}
	if got := mustCLI(t, "sessions", "--data", data); !strings.Contains(got, big.Session) || !strings.Contains(got, fork.ID) {
		t.Fatalf("a refused delete took something:\n%s", got)
	}

	out = mustCLI(t, "delete", big.Session, "--forks", "--json", "--data", data)
	var res struct {
		Deleted []struct {
			Session string
			Events  int
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Deleted) != 2 ||
		res.Deleted[0].Session != fork.ID || res.Deleted[0].Events != 0 ||
		res.Deleted[1].Session != big.Session || res.Deleted[1].Events != int(big.Events) {
		t.Fatalf("delete --forks --json: %v\n%s; want the fork (0 events of its own), then %s (%d)", err, out, big.Session, big.Events)
	}
	after := folderBytes(t, data)
	if after*2 > before {
		t.Errorf("the data folder holds %d bytes after the delete, %d before; want the bench session's space back", after, before)
	}
	list := mustCLI(t, "sessions", "--data", data)
	if strings.Contains(list, big.Session) || strings.Contains(list, fork.ID) || !strings.Contains(list, keep.Session) {
		t.Errorf("sessions after the delete:\n%s", list)
	}
	if out := mustCLI(t, "verify", keep.Session, "--data", data); !strings.Contains(out, ": ok (state hash "+keep.StateHash+")") {
		t.Errorf("the session kept does not verify: %s", out)
	}
	_, errs, code = runCLI(t, "delete", big.Session, "--data", data)
	if code == cli.ExitOK || !strings.Contains(errs, "no session "+big.Session+" in "+data) {
		t.Errorf("delete of a deleted session: exit %d, %q", code, errs)
	}
	t.Logf("data folder: %d bytes before, %d after", before, after)

	// A session and its fork both named need no --forks, in either order.
	other := cliResult(t, "run", "--seed", "2", "--data", data)
	out, errs, code = runCLI(t, "fork", other.Session, "--at", "1", "--create-only", "--json", "--data", data)
	var fork2 struct{ ID string }
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &fork2) != nil {
		t.Fatalf("fork --create-only: exit %d\n%s%s", code, out, errs)
	}
	// A serve stopped while it ran them would continue them at its next
	// start: the delete takes them out of its state file, and only them.
	state := filepath.Join(data, server.StateFileName)
	saved := `{"sessions": {"` + other.Session + `": {}, "` + fork2.ID + `": {"paused": true}, "KEEP": {}}}`
	if err := os.WriteFile(state, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustCLI(t, "delete", other.Session, fork2.ID, "--data", data)
	if b, err := os.ReadFile(state); err != nil || strings.Contains(string(b), other.Session) || strings.Contains(string(b), fork2.ID) || !strings.Contains(string(b), "KEEP") {
		t.Errorf("the serve's state file after the delete: %s, %v", b, err)
	}
	if want := "deleted " + fork2.ID + " (0 events)\ndeleted " + other.Session + " ("; !strings.HasPrefix(out, want) {
		t.Errorf("delete SESSION FORK: %q; want the fork first, %q…", out, want)
	}

	// Three named, one of them with a fork not named: refused before
	// anything goes (the first fork was deleted, then the refusal came).
	third := cliResult(t, "run", "--seed", "3", "--data", data)
	forkOf := func(parent string) string {
		t.Helper()
		var f struct{ Session string }
		if err := json.Unmarshal([]byte(mustCLI(t, "fork", parent, "--at", "1", "--create-only", "--json", "--data", data)), &f); err != nil {
			t.Fatal(err)
		}
		return f.Session
	}
	a, b := forkOf(third.Session), forkOf(third.Session)
	g := forkOf(b)
	_, errs, code = runCLI(t, "delete", third.Session, a, b, "--data", data)
	if code == cli.ExitOK || !strings.Contains(errs, "session "+b+" has forks that read their first events from it ("+g+")") || !strings.Contains(errs, "nothing was deleted") {
		t.Fatalf("delete of sessions one of which has a fork not named: exit %d, %q", code, errs)
	}
	if list := mustCLI(t, "sessions", "--data", data); !strings.Contains(list, a) || !strings.Contains(list, b) || !strings.Contains(list, g) || !strings.Contains(list, third.Session) {
		t.Fatalf("a refused delete took something:\n%s", list)
	}
}

// folderBytes is the size of the files under dir.
func folderBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
