package tests

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
)

// TestTraceChainKeepsToTheTask: a task's cause chain holds only its causal
// predecessors — its own work, its dependencies' completions, what woke its
// members for it — and ends at its own creation; it does not run on into
// the arrival before it or colleagues' work on other tasks.
func TestTraceChainKeepsToTheTask(t *testing.T) {
	data := t.TempDir()
	chain := func(session, task string) []struct{ Type, Text, Note string } {
		t.Helper()
		out, errs, code := runCLI(t, "trace", session, "--task", task, "--data", data, "--json")
		if code != cli.ExitOK {
			t.Fatalf("trace %s: exit %d: %s", task, code, errs)
		}
		var tr struct {
			Chain []struct{ Type, Text, Note string } `json:"chain"`
		}
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			t.Fatal(err)
		}
		return tr.Chain
	}
	session := func(args ...string) string {
		t.Helper()
		out, errs, code := runCLI(t, append([]string{"run", "--data", data}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("run: exit %d: %s", code, errs)
		}
		return regexp.MustCompile(`(?m)^session\s+(\S+)$`).FindStringSubmatch(out)[1]
	}

	desk := session("--world", "support-desk", "--seed", "1")
	c := chain(desk, "general-2")
	last := c[len(c)-1]
	if last.Type != "task.created" || !strings.Contains(last.Text, "general-2 arrived") {
		t.Fatalf("general-2's chain ends at %s %q, want its own arrival", last.Type, last.Text)
	}
	for _, l := range c {
		if strings.Contains(l.Text, "general-1") {
			t.Errorf("general-2's chain runs into another ticket: %q", l.Text)
		}
	}

	startup := session("--world", "startup", "--seed", "2")
	c = chain(startup, "backend")
	// backend depends on api and db-schema, which depend on spec.
	other := regexp.MustCompile(`\b(frontend|design-ux|ci|build-servers|load-test-kit|launch)\b`)
	sawDep := false
	for _, l := range c {
		if other.MatchString(l.Text) {
			t.Errorf("backend's chain runs into other work: %s %q", l.Type, l.Text)
		}
		sawDep = sawDep || (l.Type == "task.completed" && regexp.MustCompile(`completed (api|db-schema)\b`).MatchString(l.Text))
	}
	if !sawDep {
		t.Errorf("backend's chain does not reach the completion of a dependency:\n%+v", c)
	}
}
