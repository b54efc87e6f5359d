package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
)

// TestCLIText: what the CLI prints for people says what it means — the
// end reason explained, no "on time 0" for a world of tickets alone,
// sessions with their agents and found by the --world the other commands
// take, diff naming both sides' agents and seeds, plurals right, and help
// texts that say what the README says.
func TestCLIText(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "support-desk", "--seed", "1", "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	if !strings.Contains(out, "(simulated time reached the world's horizon)") {
		t.Errorf("the scorecard does not explain the end reason:\n%s", out)
	}
	if regexp.MustCompile(`(?m)^on time`).MatchString(out) {
		t.Errorf("a world of tickets alone shows an on-time line (its timeliness is the SLA's):\n%s", out)
	}

	// A custom world file whose name differs from its file name.
	src, err := os.ReadFile(filepath.Join("..", "worlds", "shipped", "startup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "legal.yaml")
	src = regexp.MustCompile(`(?m)^name: .*$`).ReplaceAll(src, []byte("name: legal firm"))
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runCLI(t, "run", "--world", file, "--seed", "2", "--agents", "greedy,bob=planner", "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("run %s exited %d: %s", file, code, errs)
	}
	if !strings.Contains(out, "on time     14 of the 14 tasks done by their project's deadline") {
		t.Errorf("the on-time line does not say what it counts:\n%s", out)
	}
	custom := regexp.MustCompile(`(?m)^session\s+(\S+)$`).FindStringSubmatch(out)[1]
	out, _, code = runCLI(t, "sessions", "--world", file, "--data", data)
	if code != cli.ExitOK || !strings.Contains(out, custom) || strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Fatalf("sessions --world %s (exit %d) should list exactly %s:\n%s", file, code, custom, out)
	}
	if !strings.Contains(out, "AGENTS") || !strings.Contains(out, "greedy×4,planner×1") {
		t.Errorf("sessions does not show the agents:\n%s", out)
	}
	if out, _, _ = runCLI(t, "sessions", "--world", "legal firm", "--data", data); !strings.Contains(out, custom) {
		t.Errorf("sessions --world 'legal firm' misses %s:\n%s", custom, out)
	}

	// diff names both sides' agents and seeds, and the fork.
	out, errs, code = runCLI(t, "fork", custom, "--at", "100", "--seed", "3", "--agents", "greedy", "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("fork exited %d: %s", code, errs)
	}
	fork := regexp.MustCompile(`(?m)^session\s+(\S+)$`).FindStringSubmatch(out)[1]
	out, errs, code = runCLI(t, "diff", custom, fork, "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("diff exited %d: %s", code, errs)
	}
	for _, want := range []string{"seed 2", "agents greedy×4, planner×1", "seed 3", "agents greedy×5", "a fork of " + custom + " at #100"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff does not say %q:\n%s", want, out)
		}
	}

	// Plurals: a task worked in one stint.
	out, _, _ = runCLI(t, "trace", custom, "--task", "spec", "--data", data)
	if !regexp.MustCompile(`in (1 stint|\d+ stints)\n`).MatchString(out) || strings.Contains(out, "(s)") {
		t.Errorf("trace prints a (s) plural:\n%s", out)
	}

	// Help says what the README says about checkpoints.
	out, _, _ = runCLI(t, "run", "--help")
	if !strings.Contains(out, "0: adaptive, at least 1000 events apart") {
		t.Errorf("run --help on --checkpoint-every:\n%s", out)
	}
}
