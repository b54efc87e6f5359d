package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/worlds"
)

// openenvServer is a `corpsim serve --http` process for the OpenEnv tests.
type openenvServer struct {
	bin, data, http, token string
	stdout, stderr         *lockedBuffer
	cmd                    *exec.Cmd
	exited                 chan error
	stopped                bool
}

func startOpenEnvServer(t *testing.T, extra ...string) *openenvServer {
	t.Helper()
	return launchServer(t, "/openenv/health", extra...)
}

// launchServer starts corpsim serve --http and waits until GET health
// answers 200.
func launchServer(t *testing.T, health string, extra ...string) *openenvServer {
	t.Helper()
	s := &openenvServer{bin: corpsimBinary(t), data: t.TempDir(), http: freeAddr(t), token: natsserver.NewToken(),
		stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	args := append([]string{"serve", "--listen", freeAddr(t), "--http", s.http, "--data", s.data, "--operator-token", s.token}, extra...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if !s.stopped {
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.http + health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case err := <-s.exited:
			s.stopped = true
			t.Fatalf("corpsim serve exited: %v\nstderr:\n%s", err, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s\nstderr:\n%s", health, s.http, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *openenvServer) healthy() bool {
	resp, err := http.Get("http://" + s.http + "/openenv/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct{ Status string }
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Status == "healthy"
}

// stop sends SIGTERM and waits for a clean exit, which unlocks the data folder.
func (s *openenvServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.stopped = true
		if err != nil {
			t.Fatalf("corpsim serve exited with %v after SIGTERM\nstderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("corpsim serve did not exit within 60s of SIGTERM\nstderr:\n%s", s.stderr.String())
	}
}

// openenvPlayed is what openenv_episode.js play prints.
type openenvPlayed struct {
	Session   string   `json:"session"`
	Abandoned string   `json:"abandoned"`
	Return    float64  `json:"return"`
	Steps     int      `json:"steps"`
	Asked     int      `json:"asked"`
	Status    string   `json:"status"`
	Score     *float64 `json:"score"`
	Codes     []string `json:"codes"`
	Close     int      `json:"close"`
	Tools     []string `json:"tools"` // reset's, by name
	State     struct {
		EpisodeID string   `json:"episode_id"`
		StepCount int      `json:"step_count"`
		Done      bool     `json:"done"`
		Seats     []string `json:"seats"`
	} `json:"state"`
}

// TestOpenEnvThirdPartyClient: a Node.js client on the npm "ws" package
// (pinned) speaks OpenEnv's WebSocket protocol to a real `corpsim serve
// --http`. It plays episodes of shipped worlds to their end — one seat
// remote among built-in agents, and every seat remote — and each
// episode's return (the sum of its rewards) equals the team score `corpsim
// score` recomputes from the log after the server has stopped. Before it
// plays, it sends a frame that is not JSON, unknown types, a step before
// reset, malformed steps and a frame over --max-message: each is answered
// with its OpenEnv error code, and the connection and the episode go on.
// A second reset stops the episode it leaves, which the log records. A
// seat's token and an unknown token are refused before the upgrade. A
// client that drops its TCP connection mid-episode leaves the server
// serving, and its session recorded as interrupted with a log that
// verifies.
func TestOpenEnvThirdPartyClient(t *testing.T) {
	node, script, dir := nodeClient(t, "ws@8.23.0", "openenv_episode.js")
	modules := filepath.Join(dir, "node_modules")
	const maxMessage = 1 << 20
	srv := startOpenEnvServer(t, "--max-message", fmt.Sprint(maxMessage))
	ws := "ws://" + srv.http + "/openenv/ws"
	runNode := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
		cmd.Env = append(cmd.Environ(), "NODE_PATH="+modules)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		began := time.Now()
		out, err := cmd.Output()
		t.Logf("node %s: %.1fs", args[0], time.Since(began).Seconds())
		if err != nil {
			t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s\nserver stderr:\n%s", strings.Join(args[:1], " "), err, out, stderr.String(), srv.stderr.String())
		}
		return out
	}

	var played []openenvPlayed
	for _, tc := range []struct {
		world, seed, agents string
		seats               []string
	}{
		{"startup", "7", "greedy,bob=remote", []string{"bob"}},
		{"procurement", "2", "", nil}, // every agent seat remote
	} {
		var p openenvPlayed
		out := runNode("play", ws, srv.token, tc.world, tc.seed, tc.agents, fmt.Sprint(maxMessage))
		if err := json.Unmarshal(bytes.TrimSpace(out), &p); err != nil {
			t.Fatalf("play printed %q: %v", out, err)
		}
		t.Logf("%s seed %s agents %q: %d steps, %d turns answered, return %.2f, codes %v", tc.world, tc.seed, tc.agents, p.Steps, p.Asked, p.Return, p.Codes)
		wantCodes := []string{"INVALID_JSON", "UNKNOWN_TYPE", "UNKNOWN_TYPE", "SESSION_ERROR", "VALIDATION_ERROR", "VALIDATION_ERROR", "VALIDATION_ERROR", "VALIDATION_ERROR", "SESSION_ERROR"}
		if !slices.Equal(p.Codes, wantCodes) {
			t.Fatalf("error codes %v, want %v", p.Codes, wantCodes)
		}
		if p.Status != "finished" || p.Score == nil || math.Abs(*p.Score-p.Return) > 1e-6 || p.Steps == 0 || p.Asked == 0 {
			t.Fatalf("episode %+v: want finished after some steps, with a return equal to its final score", p)
		}
		if p.State.EpisodeID != p.Session || p.State.StepCount != p.Steps || !p.State.Done || p.Close != 1000 {
			t.Fatalf("state %+v and close %d: want episode %s, %d steps, done; close 1000", p.State, p.Close, p.Session, p.Steps)
		}
		w, err := worlds.Shipped(tc.world)
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		for _, d := range agents.ToolDefsFor(w) {
			tools = append(tools, d.Function.Name)
		}
		if !slices.Equal(p.Tools, tools) {
			t.Fatalf("reset's tools %v, want %s's %v", p.Tools, tc.world, tools)
		}
		if tc.seats != nil && !slices.Equal(p.State.Seats, tc.seats) {
			t.Fatalf("the connection played %v, want %v", p.State.Seats, tc.seats)
		}
		if tc.seats == nil && len(p.State.Seats) < 2 {
			t.Fatalf("without agents the connection played %v, want every agent seat", p.State.Seats)
		}
		played = append(played, p)
	}

	// The stateless routes, with Node's own fetch: reset lists the world's
	// tools as /ws does, and the steps' rewards add up to the score.
	var sl struct {
		Session       string
		Tools         []string
		Steps         int
		Return, Score float64
		Status        string
	}
	if err := json.Unmarshal(runNode("stateless", "http://"+srv.http, srv.token, "startup", "7", "greedy,bob=remote"), &sl); err != nil {
		t.Fatalf("stateless: %v", err)
	}
	if want := played[0].Tools; !slices.Equal(sl.Tools, want) || sl.Status != "finished" || sl.Steps == 0 || math.Abs(sl.Return-sl.Score) > 1e-6 {
		t.Fatalf("stateless episode %+v: want startup's tools %v, finished after some steps with a return equal to its score", sl, want)
	}
	t.Logf("stateless: %d steps, return %.2f", sl.Steps, sl.Return)

	// OpenEnv's tool calling, as its MCPToolClient plays: list_tools,
	// observe, one call_tool a turn naming no seat, some as MCP tools/call
	// in "mcp" frames; with one seat remote, and with every seat remote
	// (several asked at once: the calls are sent together).
	for i, ep := range []struct{ world, agents string }{{"startup", "greedy,bob=remote"}, {"startup", ""}} {
		var tc struct {
			Session, Status string
			Return          float64
			Score           *float64
			Calls, Steps    int
			MCPCalls        int `json:"mcp_calls"`
			MaxSeats        int `json:"max_seats"`
			Seats           []string
			Before, Tools   []string
			MCPTools        []string `json:"mcp_tools"`
			Errors          []any
		}
		if err := json.Unmarshal(runNode("tools", ws, srv.token, ep.world, "7", ep.agents), &tc); err != nil {
			t.Fatalf("tools: %v", err)
		}
		t.Logf("tool calling on %s: %d calls (%d over mcp) in %d steps, up to %d seats asked at once, return %.2f, errors %v",
			ep.world, tc.Calls, tc.MCPCalls, tc.Steps, tc.MaxSeats, tc.Return, tc.Errors)
		if want := append(agents.ToolNames(agents.ToolDefs()), "observe"); !slices.Equal(tc.Before, want) {
			t.Fatalf("list_tools before reset %v, want every action's and observe, %v (no --openenv-world)", tc.Before, want)
		}
		w, err := worlds.Shipped(ep.world)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(agents.ToolNames(agents.ToolDefsFor(w)), "observe"); !slices.Equal(tc.Tools, want) || !slices.Equal(tc.MCPTools, want) {
			t.Fatalf("list_tools %v and tools/list %v, want %s's %v", tc.Tools, tc.MCPTools, ep.world, want)
		}
		if fmt.Sprint(tc.Errors) != "[tool_not_found invalid_args -32601]" {
			t.Fatalf("errors %v, want tool_not_found, invalid_args and -32601", tc.Errors)
		}
		if tc.Status != "finished" || tc.Score == nil || math.Abs(*tc.Score-tc.Return) > 1e-6 || tc.MCPCalls == 0 || tc.Steps == 0 || tc.Steps > tc.Calls {
			t.Fatalf("tool-calling episode %+v: want finished, some calls over mcp, a return equal to its score", tc)
		}
		if i == 1 && (len(tc.Seats) < 2 || tc.MaxSeats < 2 || tc.Steps >= tc.Calls) {
			t.Fatalf("every seat remote: seats %v, at most %d asked at once, %d steps for %d calls: want several seats asked together, their calls sent in fewer steps",
				tc.Seats, tc.MaxSeats, tc.Steps, tc.Calls)
		}
		played = append(played, openenvPlayed{Session: tc.Session, Return: tc.Return}) // corpsim score checks it below
	}

	// What `openenv validate http://ADDR/openenv` asks of a running server
	// beyond /health, /metadata and /schema: an OpenAPI document of the 1.x
	// standard in simulation mode, a JSON-RPC /mcp; and the state of an
	// episode the stateless routes played.
	resp, err := http.Get("http://" + srv.http + "/openenv/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Info  struct{ Version string }
		Paths map[string]any
	}
	err = json.NewDecoder(resp.Body).Decode(&api)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(api.Info.Version, "1.") || api.Paths["/reset"] == nil || api.Paths["/step"] == nil || api.Paths["/state"] == nil {
		t.Fatalf("openapi.json: %d %v %+v", resp.StatusCode, err, api.Info)
	}
	resp, err = http.Post("http://"+srv.http+"/openenv/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct{ JSONRPC string }
	err = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || rpc.JSONRPC != "2.0" {
		t.Fatalf("POST /openenv/mcp {}: %d %v %+v", resp.StatusCode, err, rpc)
	}
	req, _ := http.NewRequest("GET", "http://"+srv.http+"/openenv/state?episode_id="+sl.Session, nil)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		StepCount int `json:"step_count"`
		Done      bool
		Status    string
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || st.StepCount != sl.Steps || !st.Done || st.Status != "finished" {
		t.Fatalf("state of the stateless episode: %d %v %+v, want %d steps, finished", resp.StatusCode, err, st, sl.Steps)
	}

	// Refused: an unknown token, and a seat's token (made by /v1).
	body := `{"world":"startup","seed":1,"agents":"greedy,bob=remote","wait":true}` // never started: it holds nothing up
	req, _ = http.NewRequest("POST", "http://"+srv.http+"/v1/sessions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Session string
		Seats   map[string]struct{ Token string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create through /v1: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for tok, want := range map[string]int{created.Seats["bob"].Token: 403, "not-a-token": 401} {
		var r struct{ Status int }
		if err := json.Unmarshal(runNode("refuse", ws, tok), &r); err != nil || r.Status != want {
			t.Fatalf("connecting with a token: status %d (%v), want %d", r.Status, err, want)
		}
	}

	// An abrupt disconnect: the server goes on, the session is stopped.
	var dropped struct{ Session string }
	if err := json.Unmarshal(runNode("abrupt", ws, srv.token, "support-desk", "1", "remote"), &dropped); err != nil || dropped.Session == "" {
		t.Fatalf("abrupt: %v", err)
	}
	if !srv.healthy() {
		t.Fatal("the server does not answer after an abrupt disconnect")
	}
	var after openenvPlayed
	if err := json.Unmarshal(bytes.TrimSpace(runNode("play", ws, srv.token, "startup", "7", "greedy,bob=remote", fmt.Sprint(maxMessage))), &after); err != nil {
		t.Fatal(err)
	}
	if after.Return != played[0].Return {
		t.Fatalf("the same episode after a disconnect returned %.4f, before %.4f (deterministic agents, same seed)", after.Return, played[0].Return)
	}
	began := time.Now()
	srv.stop(t)
	t.Logf("stop: %.1fs", time.Since(began).Seconds())

	for _, p := range append(played, after) { // the tool-calling episode among them
		out, err := exec.Command(srv.bin, "score", p.Session, "--data", srv.data, "--json").Output()
		if err != nil {
			t.Fatalf("corpsim score %s: %v\n%s", p.Session, err, out)
		}
		var res struct {
			Score struct {
				TeamScore float64 `json:"team_score"`
			} `json:"score"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("corpsim score --json: %v in\n%s", err, out)
		}
		if math.Abs(res.Score.TeamScore-p.Return) > 1e-6 {
			t.Fatalf("session %s: the OpenEnv return %.6f, corpsim score says %.6f", p.Session, p.Return, res.Score.TeamScore)
		}
	}
	status := map[string]string{}
	out, err := exec.Command(srv.bin, "sessions", "--data", srv.data, "--json").Output()
	if err != nil {
		t.Fatalf("corpsim sessions: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var m struct{ ID, Status string }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		status[m.ID] = m.Status
	}
	for _, id := range []string{dropped.Session, played[0].Abandoned, played[1].Abandoned} {
		if status[id] != "interrupted" {
			t.Fatalf("session %s left by its connection is %q, want interrupted (all sessions: %v)", id, status[id], status)
		}
		if out, err := exec.Command(srv.bin, "verify", id, "--data", srv.data).CombinedOutput(); err != nil {
			t.Fatalf("corpsim verify %s: %v\n%s", id, err, out)
		}
	}
}

// TestOpenEnvOff: --openenv=false leaves /openenv off the listener, and /v1 on.
func TestOpenEnvOff(t *testing.T) {
	srv := launchServer(t, "/v1/health", "--openenv=false")
	resp, err := http.Get("http://" + srv.http + "/openenv/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/openenv/health with --openenv=false: %d, want 404", resp.StatusCode)
	}
	if strings.Contains(srv.stdout.String(), "OpenEnv") {
		t.Fatalf("serve announces OpenEnv with --openenv=false:\n%s", srv.stdout.String())
	}
	srv.stop(t)
}

// TestOpenEnvShutdownEndsItsSessions: on SIGTERM, serve closes the OpenEnv
// connections (1001, going away) and stops their sessions before it shuts
// the service down, so the next serve on the data does not resume a
// session that no connection controls any more.
func TestOpenEnvShutdownEndsItsSessions(t *testing.T) {
	node, script, dir := nodeClient(t, "ws@8.23.0", "openenv_episode.js")
	s := startOpenEnvServer(t)
	cmd := exec.Command(node, script, "hold", "ws://"+s.http+"/openenv/ws", s.token, "startup", "3", "greedy,bob=remote")
	cmd.Env = append(cmd.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	var held struct{ Session string }
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &held) != nil || held.Session == "" {
		t.Fatalf("the client did not start an episode: %q", lines.Text())
	}
	s.stop(t)
	var closed struct{ Closed int }
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &closed) != nil || closed.Closed != 1001 {
		t.Errorf("the client's connection ended with %q, want close code 1001 (going away)", lines.Text())
	}
	if strings.Contains(s.stdout.String(), held.Session) {
		t.Errorf("serve keeps %s to resume, though its connection is gone:\n%s", held.Session, s.stdout.String())
	}
	meta := func() events.SessionMeta {
		t.Helper()
		l := mustOpenStore(t, s.data)
		defer l.Close()
		m, err := l.Session(context.Background(), held.Session)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := meta(); m.Status != events.StatusInterrupted {
		t.Fatalf("the left session is %s, want interrupted", m.Status)
	}
	// A restarted serve resumes nothing.
	next := exec.Command(s.bin, "serve", "--listen", freeAddr(t), "--http", freeAddr(t), "--data", s.data, "--operator-token", s.token)
	var out lockedBuffer
	next.Stdout, next.Stderr = &out, &out
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.Process.Signal(syscall.SIGTERM); _ = next.Wait() }()
	for start := time.Now(); !strings.Contains(out.String(), "corpsim serving on"); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("the second serve did not start:\n%s", out.String())
		}
	}
	if strings.Contains(out.String(), "resumed") {
		t.Fatalf("the second serve resumed a session:\n%s", out.String())
	}
}
