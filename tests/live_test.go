package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// TestLivePageInBrowser: corpsim serve --http serves a live page of a
// running session, behind the operator token; in headless Chromium
// (driven by the npm playwright-core package) it shows the session's
// state at once, updates while the session runs, survives a reload, and
// ends with the session's own events and score.
func TestLivePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim and a browser")
	}
	browser := chromium(t)
	node, script, dir := nodeClient(t, "playwright-core@1.65.1", "live_page.mjs")

	data, haddr := filepath.Join(dir, "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr)
	tok, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	op := strings.TrimSpace(string(tok))
	base := "http://" + haddr
	// The session runs up to bob's first turn and waits there for the
	// test, which plays bob through the gateway while the page watches.
	code, body := httpDo(t.Context(), "POST", base+"/v1/sessions", op,
		wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy,bob=remote"})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var reply wire.CreateReply
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatal(err)
	}

	if code, _ := httpDo(t.Context(), "GET", base+"/live/"+reply.Session+"/stream", "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("the live stream with a wrong token: HTTP %d, want 401", code)
	}
	shots := t.ArtifactDir()
	cmd := exec.Command(node, script, browser, base+"/live/"+reply.Session+"?token="+op, shots)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	type phase struct {
		Phase   string  `json:"phase"`
		Events  uint64  `json:"events"`
		URL     string  `json:"url"`
		Status  string  `json:"status"`
		Members int     `json:"members"`
		Score   float64 `json:"score"`
		Latest  int     `json:"latest"`
		Queues  int     `json:"queues"`
	}
	read := func(want string) phase {
		t.Helper()
		done := make(chan bool, 1)
		var p phase
		go func() { done <- lines.Scan() }()
		select {
		case ok := <-done:
			if !ok || json.Unmarshal(lines.Bytes(), &p) != nil || p.Phase != want {
				t.Fatalf("waiting for %q, the page script said %q\n%s", want, lines.Text(), stderr.String())
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("the page script did not reach %q\n%s", want, stderr.String())
		}
		t.Logf("page: %s", lines.Text())
		return p
	}
	first := read("first")
	if strings.Contains(first.URL, "token=") {
		t.Errorf("the token stays in the address bar: %s", first.URL)
	}
	// bob takes one turn: the session goes on to his next.
	seat := base + "/v1/sessions/" + reply.Session + "/seats/bob/"
	bob := reply.Seats["bob"].Token
	code, body = httpDo(t.Context(), "GET", seat+"observation?wait=30s", bob, nil)
	var obs org.Observation
	if code != http.StatusOK || json.Unmarshal(body, &obs) != nil || obs.Turn == 0 {
		t.Fatalf("bob's first turn: %d %s", code, body)
	}
	acts, _ := (&agents.Greedy{}).Decide(t.Context(), obs)
	if acts == nil {
		acts = []org.Action{}
	}
	if code, body := httpDo(t.Context(), "POST", seat+"act", bob, org.Reply{Turn: obs.Turn, Actions: acts}); code != http.StatusOK {
		t.Fatalf("bob's act: %d %s", code, body)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	updated := read("updated")
	if updated.Events <= first.Events || updated.Members == 0 || updated.Status != "running" {
		t.Fatalf("the page did not update while the session ran: %d events then %d (%s), %d member rows", first.Events, updated.Events, updated.Status, updated.Members)
	}
	reloaded := read("reloaded")
	if reloaded.Events < updated.Events || reloaded.Status != "running" {
		t.Fatalf("after a reload the page shows %d events (%s), before it %d", reloaded.Events, reloaded.Status, updated.Events)
	}
	// bob plays through the gateway to the end.
	p := &httpPlayer{done: make(chan struct{})}
	pctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-p.done })
	go p.run(pctx, seat, bob)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	ended := read("ended")
	sp.waitFor(t, reply.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	code, body = httpDo(t.Context(), "GET", base+"/v1/sessions/"+reply.Session+"/score", op, nil)
	var st httpgw.ScoreReply
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Status != "finished" {
		t.Fatalf("score: %d %s", code, body)
	}
	if ended.Events != st.Events || math.Abs(ended.Score-st.Score) > 0.005 || ended.Latest == 0 || ended.Queues == 0 || !strings.HasPrefix(ended.Status, "ended") {
		t.Fatalf("the ended page shows %d events, score %.2f, %q (%d latest rows, %d queues); the session has %d events, score %.2f",
			ended.Events, ended.Score, ended.Status, ended.Latest, ended.Queues, st.Events, st.Score)
	}
	t.Logf("live page: %d events at first, %d while running, %d after a reload, %s at the end with %d events, score %.2f; screenshots in %s",
		first.Events, updated.Events, reloaded.Events, ended.Status, ended.Events, ended.Score, shots)
}

// TestLiveListsHeldAndPausedSessions: the live view's index lists what
// the server lists, not only what its store holds: a session created to
// wait for its start (nothing of it is stored yet) has a row and a page
// whose stream starts empty and follows it once it starts; a paused
// session's row says paused.
func TestLiveListsHeldAndPausedSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr)
	defer sp.stop(t, 20*time.Second)
	tok, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	op, base := strings.TrimSpace(string(tok)), "http://"+haddr
	create := func(req wire.CreateRequest) string {
		code, body := httpDo(t.Context(), "POST", base+"/v1/sessions", op, req)
		var reply wire.CreateReply
		if code != http.StatusCreated || json.Unmarshal(body, &reply) != nil {
			t.Fatalf("create: %d %s", code, body)
		}
		return reply.Session
	}
	control := func(id, opName string) {
		if code, body := httpDo(t.Context(), "POST", base+"/v1/sessions/"+id+"/control", op, map[string]string{"op": opName}); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", opName, id, code, body)
		}
	}
	held := create(wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy", Wait: true})
	paused := create(wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy,bob=remote", TurnTimeout: "1h"})
	control(paused, "pause")
	defer control(paused, "stop") // before the server's shutdown, which would wait for bob's hour
	// A session created later that has ended: by creation alone it would
	// be listed first (newest first); the paused one goes before it.
	time.Sleep(1100 * time.Millisecond) // a later creation second
	finished := create(wire.CreateRequest{World: "startup", Seed: 5, Agents: "greedy"})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, body := httpDo(t.Context(), "GET", base+"/v1/sessions?status=finished", op, nil)
		if strings.Contains(string(body), finished) {
			if strings.Contains(string(body), `"damaged"`) {
				t.Fatalf("a whole list says it is damaged: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s did not finish: %s", finished, body)
		}
	}

	code, index := httpDo(t.Context(), "GET", base+"/live/", op, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /live/: %d %s", code, index)
	}
	row := func(id string) string {
		i := strings.Index(string(index), ">"+id+"</a>")
		if i < 0 {
			return ""
		}
		end := strings.Index(string(index[i:]), "</tr>")
		return string(index[i : i+end])
	}
	if r := row(held); !strings.Contains(r, `class="running"`) {
		t.Errorf("the session held for its start in /live/: %q; want a row, running", r)
	}
	if r := row(paused); !strings.Contains(r, `class="paused"`) {
		t.Errorf("the paused session in /live/: %q; want a row, paused", r)
	}
	if p, f := strings.Index(string(index), ">"+paused+"</a>"), strings.Index(string(index), ">"+finished+"</a>"); p < 0 || f < 0 || p > f {
		t.Errorf("/live/ lists the paused session at %d, the later finished one at %d; want the paused one first", p, f)
	}
	if code, page := httpDo(t.Context(), "GET", base+"/live/"+held, op, nil); code != http.StatusOK {
		t.Fatalf("the held session's page: %d %s", code, page)
	}

	// Its stream: an empty snapshot now, then the session once it starts.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rq, _ := http.NewRequestWithContext(ctx, "GET", base+"/live/"+held+"/stream", nil)
	rq.Header.Set("Authorization", "Bearer "+op)
	resp, err := http.DefaultClient.Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the held session's stream: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	snapshots, started := 0, false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var snap struct {
			Events uint64 `json:"events"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &snap); err != nil {
			continue // the end event's data
		}
		snapshots++
		if snapshots == 1 {
			if snap.Events != 0 {
				t.Fatalf("the first snapshot of a session held for its start has %d events; want 0", snap.Events)
			}
			control(held, "start")
			started = true
			continue
		}
		if started && snap.Events > 0 {
			return // it follows the session from its start
		}
	}
	t.Fatalf("the stream ended after %d snapshots without the started session's events: %v", snapshots, sc.Err())
}
