package tests

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
)

// A running corpsim serve deletes sessions over HTTP (DELETE
// /v1/sessions/{id}, the operator's) on its real Pebble log: a session
// with a fork is refused (409) until ?forks=true deletes the fork first;
// a session running (held for its start) is refused (409) until stopped;
// an unknown one is a 404. With --nemo-discard, a NeMo Gym session's log
// is deleted once it is closed. What is left verifies after the serve
// stops; the deleted sessions are gone from the folder.
func TestServeDeletesSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr, "--nemo-discard")
	tokb, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	tok, base := strings.TrimSpace(string(tokb)), "http://"+haddr+"/v1/sessions"
	ctx := requestCtx(t, 2*time.Minute)
	create := func(path string, body any) string {
		t.Helper()
		code, b := httpDo(ctx, http.MethodPost, base+path, tok, body)
		var r wire.CreateReply
		if code != http.StatusCreated || json.Unmarshal(b, &r) != nil || r.Session == "" {
			t.Fatalf("POST %s: %d %s", path, code, b)
		}
		return r.Session
	}
	finished := func(id string) {
		sp.waitFor(t, id, "the end", time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	}
	del := func(id, query string) (int, wire.DeleteReply) {
		t.Helper()
		code, b := httpDo(ctx, http.MethodDelete, base+"/"+id+query, tok, nil)
		var r wire.DeleteReply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("DELETE %s%s: %d %s", id, query, code, b)
		}
		return code, r
	}
	a := create("", wire.CreateRequest{World: "meetings", Seed: 1, Agents: "greedy"})
	b := create("", wire.CreateRequest{World: "meetings", Seed: 2, Agents: "greedy"})
	finished(a)
	finished(b)
	fork := create("/"+a+"/reset", map[string]any{"seed": 5})
	finished(fork)
	held := create("", wire.CreateRequest{World: "meetings", Seed: 3, Agents: "greedy", Wait: true})

	if code, r := del(a, ""); code != http.StatusConflict || len(r.Deleted) != 0 || !strings.Contains(r.Error, "has forks") {
		t.Fatalf("DELETE of a session with a fork: %d %+v; want 409 naming its forks", code, r)
	}
	if code, r := del(held, ""); code != http.StatusConflict || !strings.Contains(r.Error, "stop it first") {
		t.Fatalf("DELETE of a session held for its start: %d %+v; want 409", code, r)
	}
	code, r := del(a, "?forks=true")
	if code != http.StatusOK || len(r.Deleted) != 2 || r.Deleted[0].Session != fork || r.Deleted[1].Session != a || r.Deleted[1].Events == 0 {
		t.Fatalf("DELETE ?forks=true: %d %+v; want 200 deleting %s, then %s", code, r, fork, a)
	}
	if code, r := del(a, ""); code != http.StatusNotFound {
		t.Fatalf("DELETE of a deleted session: %d %+v; want 404", code, r)
	}
	// The same over NATS, the operator's client: nothing to delete twice.
	if done, err := sp.op.Delete(ctx, []string{fork}, false); err == nil || len(done) != 0 || !strings.Contains(err.Error(), "no such session") {
		t.Fatalf("NATS delete of a deleted fork: %v, %v; want no such session", done, err)
	}
	if code, _ := httpDo(ctx, http.MethodDelete, base+"/"+b, "not-the-token", nil); code != http.StatusUnauthorized {
		t.Fatalf("DELETE without the operator token: %d, want 401", code)
	}

	n := newNemoClient(t, haddr)
	rollout := n.seed(nemoRow(4, "alice"))
	if code, body := n.post("close", map[string]any{}); code != http.StatusOK {
		t.Fatalf("/nemo/close: %d %s", code, body)
	}
	// A rollout verified (played to its end) and then closed, as NeMo
	// Gym's clients do: closed the instant it ended, while the server
	// still finishes it.
	verified := n.seed(nemoRow(5, "alice"))
	if code, body := n.post("verify", map[string]any{}); code != http.StatusOK {
		t.Fatalf("/nemo/verify: %d %s", code, body)
	}
	if code, body := n.post("close", map[string]any{}); code != http.StatusOK {
		t.Fatalf("/nemo/close after verify: %d %s", code, body)
	}

	code, lb := httpDo(ctx, http.MethodGet, base, tok, nil)
	var list struct{ Sessions []events.SessionMeta }
	if code != http.StatusOK || json.Unmarshal(lb, &list) != nil {
		t.Fatalf("GET /v1/sessions: %d %s", code, lb)
	}
	var ids []string
	for _, m := range list.Sessions {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{b, held}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("sessions listed %v; want %v (not %s, %s, nor the NeMo rollouts %s, %s)", ids, want, a, fork, rollout, verified)
	}
	// The folder is the running serve's: the CLI says how to delete there.
	if _, errs, code := runCLI(t, "delete", b, "--data", data); code == cli.ExitOK || !strings.Contains(errs, "DELETE /v1/sessions/{id}") {
		t.Fatalf("corpsim delete beside the running serve: exit %d, %q", code, errs)
	}
	if _, err := sp.op.Control(ctx, held, wire.OpStop); err != nil {
		t.Fatal(err)
	}
	sp.stop(t, 20*time.Second)
	if out := mustCLI(t, "verify", b, "--data", data); !strings.Contains(out, ": ok (state hash") {
		t.Fatalf("verify of the session kept: %s", out)
	}
	listed := mustCLI(t, "sessions", "--data", data)
	for _, gone := range []string{a, fork, rollout, verified} {
		if strings.Contains(listed, gone) {
			t.Errorf("deleted session %s is still in the folder:\n%s", gone, listed)
		}
	}
}
