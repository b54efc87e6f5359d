package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
)

// TestMaxEventsFlag: `run --max-events N` ends the session "event_limit"
// with at most N events, and the stored log verifies; a budget below the
// minimum is a usage error for run and serve, which leaves nothing behind
// (serve wrote its operator token into the data folder first).
func TestMaxEventsFlag(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "support-desk", "--data", data, "--max-events", "400", "--json")
	if code != cli.ExitOK {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	var res struct {
		Session string `json:"session"`
		Events  uint64 `json:"events"`
		Ended   string `json:"ended"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Ended != "event_limit" || res.Events > 400 || res.Events < 380 {
		t.Fatalf("ended %q after %d events; want event_limit within the budget of 400", res.Ended, res.Events)
	}
	if _, errs, code := runCLI(t, "verify", res.Session, "--data", data); code != cli.ExitOK {
		t.Fatalf("verify exited %d: %s", code, errs)
	}
	untouched := filepath.Join(t.TempDir(), "data")
	for _, cmd := range [][]string{
		{"run", "--ephemeral", "--data", untouched, "--max-events", "2"},
		{"serve", "--ephemeral", "--data", untouched, "--listen", "", "--max-events", "-1"},
		{"serve", "--data", untouched, "--listen", "", "--max-events", "-1"},
	} {
		if _, errs, code := runCLI(t, cmd...); code != cli.ExitUsage || !strings.Contains(errs, "--max-events") {
			t.Errorf("%v: exit %d (%s), want %d naming --max-events", cmd, code, errs, cli.ExitUsage)
		}
		if _, err := os.Stat(untouched); err == nil {
			t.Fatalf("%v: a usage error made the data folder", cmd)
		}
	}
}
