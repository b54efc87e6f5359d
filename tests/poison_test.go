package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/server"
)

// stateMarks reads serve-state.json: each saved session and its resuming
// mark ("" when not marked).
func stateMarks(tb testing.TB, data string) map[string]string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(data, server.StateFileName))
	if err != nil {
		tb.Fatal(err)
	}
	var st struct {
		Sessions map[string]struct {
			Resuming string `json:"resuming"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for id, s := range st.Sessions {
		out[id] = s.Resuming
	}
	return out
}

// TestServeKilledWhileResuming: a serve is killed (SIGKILL) while it is
// resuming a session; the next serve on the same data does not resume that
// session but records it failed with the reason, and resumes the healthy
// one, which finishes. The session being resumed is held deterministically:
// its llm seat's endpoint never answers, so after the resume it makes no
// progress until the kill.
func TestServeKilledWhileResuming(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	hang := make(chan struct{})
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a model that never answers
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer llm.Close()
	defer close(hang)
	t.Setenv("TEST_LLM_KEY", "test-key")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	args := []string{"--llm-base-url", llm.URL + "/v1", "--llm-model", "fake", "--llm-key-env", "TEST_LLM_KEY",
		"--turn-timeout", "10m", "--shutdown-grace", "1s", "--log-level", "info"}
	ctx := requestCtx(t, 10*time.Minute)

	// 1. Two sessions, stopped by SIGTERM: held (its llm seat's first turn
	// never ends) and healthy (greedy agents on a long world).
	sp := startServe(t, data, args...)
	held, err := sp.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=llm"})
	if err != nil {
		t.Fatal(err)
	}
	src := mustRead(t, longWorld(t, dir))
	healthy, err := sp.op.Create(ctx, wire.CreateRequest{Source: string(src), Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	sp.waitFor(t, held.Session, "its first batch", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 1 })
	sp.waitFor(t, healthy.Session, "300 events", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 300 })
	sp.stop(t, 30*time.Second)
	if marks := stateMarks(t, data); len(marks) != 2 || marks[held.Session] != "" || marks[healthy.Session] != "" {
		t.Fatalf("after SIGTERM the state file keeps %v, want both sessions, not marked", marks)
	}
	heldMeta, heldAt := storedMeta(t, data, held.Session)
	if heldMeta.Status != events.StatusInterrupted {
		t.Fatalf("the held session is %s after SIGTERM, want interrupted", heldMeta.Status)
	}

	// 2. A serve resumes both; while the held one is still marked as being
	// resumed, SIGKILL.
	sp = startServe(t, data, args...)
	var marks map[string]string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		marks = stateMarks(t, data)
		if marks[held.Session] != "" && marks[healthy.Session] == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state file never showed the held session marked and the healthy one cleared: %v\n%s", marks, sp.stderr.String())
		}
	}
	if err := sp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sp.done
	t.Logf("killed while resuming %s (marked %s); the state file kept %v", held.Session, marks[held.Session], marks)

	// 3. The next serve: the held session is failed with the reason and not
	// resumed; the healthy one comes back and finishes.
	sp = startServe(t, data, args...)
	if out := sp.stdout.String(); !strings.Contains(out, "did not resume session "+held.Session) || !strings.Contains(out, server.ReasonStoppedResuming) {
		t.Errorf("serve does not say it did not resume %s, and why:\n%s", held.Session, out)
	}
	final := sp.waitFor(t, healthy.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	sp.stop(t, 30*time.Second)
	meta, last := storedMeta(t, data, held.Session)
	if meta.Status != events.StatusFailed || meta.Reason != server.ReasonStoppedResuming {
		t.Errorf("the session being resumed when serve was killed is %s with reason %q; want failed with %q", meta.Status, meta.Reason, server.ReasonStoppedResuming)
	}
	if last != heldAt {
		t.Errorf("the held session's log went from %d to %d events: it was run again", heldAt, last)
	}
	if _, ok := stateMarks(t, data)[held.Session]; ok {
		t.Error("the failed session is still in the state file")
	}
	if out, errs, code := corpsimIn(t, dir, "verify", healthy.Session, "--data", data); code != 0 {
		t.Fatalf("verify of the healthy session exited %d: %s%s", code, out, errs)
	}
	t.Logf("held session failed at event %d; the healthy one finished with %d events", last, final.Events)
}
