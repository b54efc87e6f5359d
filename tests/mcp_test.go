package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// mcpSDK is the official MCP TypeScript SDK, pinned.
const mcpSDK = "@modelcontextprotocol/sdk@1.32.2"

// installMCPSDK installs the MCP TypeScript SDK into a temporary folder and
// copies the client script beside it (an ES module finds its packages from
// where it lives, not through NODE_PATH). It returns node and the script.
func installMCPSDK(t *testing.T) (node, script string) {
	t.Helper()
	node, script, _ = nodeClient(t, mcpSDK, "mcp_seat.mjs")
	return node, script
}

// httpServe is a real `corpsim serve --http` started by a test.
type httpServe struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	exited         chan error
	base, token    string
	data           string
}

func startHTTPServe(t *testing.T, args ...string) *httpServe {
	t.Helper()
	s := &httpServe{data: t.TempDir(), token: natsserver.NewToken(), exited: make(chan error, 1)}
	httpAddr := freeAddr(t)
	s.base = "http://" + httpAddr
	s.cmd = exec.Command(corpsimBinary(t), append([]string{"serve", "--listen", freeAddr(t), "--http", httpAddr,
		"--data", s.data, "--operator-token", s.token}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	// Up when the gateway answers and its address lines (printed in one
	// write before it serves) have come through the pipe.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(s.base + "/v1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(s.stdout.String(), "corpsim HTTP gateway on") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("corpsim serve --http did not come up\n%s%s", s.stdout.String(), s.stderr.String())
		}
	}
	return s
}

// do makes a JSON request with a bearer token.
func (s *httpServe) do(t *testing.T, method, path, token string, body any, want int) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return b
}

func (s *httpServe) create(t *testing.T, req wire.CreateRequest) wire.CreateReply {
	t.Helper()
	var reply wire.CreateReply
	if err := json.Unmarshal(s.do(t, "POST", "/v1/sessions", s.token, req, http.StatusCreated), &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// mcpPost sends one raw request to /mcp.
func (s *httpServe) mcpPost(ctx context.Context, header map[string]string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// score is the gateway's score of an ended session (asked again while the
// server is still closing the session).
func (s *httpServe) score(t *testing.T, session string) float64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var sc struct {
			Status   string  `json:"status"`
			Score    float64 `json:"score"`
			Complete bool    `json:"complete"`
		}
		req, _ := http.NewRequest("GET", s.base+"/v1/sessions/"+session+"/score", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&sc)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && sc.Status == "finished" && sc.Complete {
				return sc.Score
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s did not finish with a complete score: %+v", session, sc)
		}
	}
}

// memberTurns counts member's turn and turn.timeout events of a session,
// from the gateway's events.
func (s *httpServe) memberTurns(t *testing.T, session, member string) (turns, timeouts int) {
	t.Helper()
	for from := uint64(1); from != 0; {
		var page struct {
			Events []struct {
				Type  string `json:"Type"`
				Actor string `json:"Actor"`
			} `json:"events"`
			Next uint64 `json:"next"`
		}
		if err := json.Unmarshal(s.do(t, "GET", fmt.Sprintf("/v1/sessions/%s/events?from=%d", session, from), s.token, nil, http.StatusOK), &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			if e.Actor != member {
				continue
			}
			switch e.Type {
			case payload.EvTurn:
				turns++
			case payload.EvTurnTimeout:
				timeouts++
			}
		}
		from = page.Next
	}
	return turns, timeouts
}

// metric reads one sample of the server's /metrics (0 when absent).
func (s *httpServe) metric(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// stop sends SIGTERM and wants a clean exit.
func (s *httpServe) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("corpsim serve exited with %v after SIGTERM\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("corpsim serve did not exit within 30s of SIGTERM\n%s", s.stderr.String())
	}
}

// logScore is the team score `corpsim score` recomputes from the log.
func logScore(t *testing.T, data, session string) float64 {
	t.Helper()
	out, err := exec.Command(corpsimBinary(t), "score", session, "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("corpsim score %s: %v\n%s", session, err, out)
	}
	var res struct {
		Score struct {
			TeamScore float64 `json:"team_score"`
		} `json:"score"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("corpsim score --json: %v in\n%s", err, out)
	}
	return res.Score.TeamScore
}

type mcpOutcome struct {
	Session string         `json:"session"`
	Member  string         `json:"member"`
	Status  string         `json:"status"`
	Turns   int            `json:"turns"`
	Refused int            `json:"refused"`
	Actions map[string]int `json:"actions"`
	// The nemo mode's: verify's reward and the session it verified.
	Reward   float64 `json:"reward"`
	Verified string  `json:"verified"`
}

// runMCPClient runs the client script and returns its output lines and
// outcome.
func runMCPClient(t *testing.T, node, script string, args ...string) ([]map[string]json.RawMessage, mcpOutcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	startup, err := worlds.Shipped("startup") // the sessions' world: the seat is offered its tools
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, d := range agents.ToolDefsFor(startup) {
		tools = append(tools, d.Function.Name)
	}
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(filepath.Dir(script), "node_modules"), "CORPSIM_TOOLS="+strings.Join(tools, ","))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), args[0], err, out, stderr.String())
	}
	var lines []map[string]json.RawMessage
	var outcome mcpOutcome
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, line)
		if o, ok := line["outcome"]; ok {
			if err := json.Unmarshal(o, &outcome); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("node %s:\n%s", args[0], out)
	if outcome.Session == "" {
		t.Fatalf("the client printed no outcome\n%s\nstderr:\n%s", out, stderr.String())
	}
	return lines, outcome
}

// TestMCPClientPlaysASeat: an agent on the official MCP TypeScript SDK
// (npm, pinned) joins a seat of a shipped world on a real `corpsim serve
// --http` over streamable HTTP with the seat's token: it lists the seat's
// tools, calls them (a bad call refused, its turn left waiting), is refused
// with another session's seat token, the operator token and none, and plays
// the seat to the session's end. Before it plays, malformed JSON-RPC, an
// unknown method, a body over --max-message and a client that disconnects
// in the middle of a call hit the seat's /mcp: each is refused and counted
// in /metrics, and nothing of the session is lost: it finishes with no
// turn timed out, every turn of the seat the client's, and its return is
// the score `corpsim score` recomputes from the log. Then the same client
// plays a seat of another session through `corpsim mcp` over stdio.
func TestMCPClientPlaysASeat(t *testing.T) {
	node, script := installMCPSDK(t)
	srv := startHTTPServe(t, "--max-message", "1048576", "--turn-timeout", "2m")
	if !strings.Contains(srv.stdout.String(), "/mcp") {
		t.Errorf("serve does not say where MCP is served:\n%s", srv.stdout.String())
	}
	play := srv.create(t, wire.CreateRequest{World: "startup", Seed: 5, Agents: "greedy,bob=remote", Wait: true})
	other := srv.create(t, wire.CreateRequest{World: "startup", Seed: 6, Agents: "greedy,bob=remote", Wait: true})
	tok := play.Seats["bob"].Token

	// Hostile requests, before the session starts.
	ctx := context.Background()
	seat := map[string]string{"Authorization": "Bearer " + tok}
	initReq := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	code, _, err := srv.mcpPost(ctx, seat, initReq)
	if err != nil || code != http.StatusOK {
		t.Fatalf("initialize: %d, %v", code, err)
	}
	big := append([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"message","arguments":{"to":"alice","text":"`),
		bytes.Repeat([]byte("x"), 2<<20)...)
	big = append(big, `"}}}`...)
	for _, c := range []struct {
		name string
		body []byte
		want int
	}{
		{"malformed JSON-RPC", []byte(`{"jsonrpc":"2.0","id":`), http.StatusBadRequest},
		{"an unknown method", []byte(`{"jsonrpc":"2.0","id":3,"method":"seats/steal"}`), http.StatusBadRequest},
		{"a body over --max-message", big, http.StatusRequestEntityTooLarge},
	} {
		code, b, err := srv.mcpPost(ctx, seat, c.body)
		if err != nil || code != c.want {
			t.Errorf("%s: HTTP %d (%v), want %d: %.200s", c.name, code, err, c.want, b)
		}
	}
	// A client that goes away in the middle of an observe call.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _, err = srv.mcpPost(cctx, map[string]string{"Authorization": "Bearer " + tok, "Mcp-Protocol-Version": "2026-07-28",
		"Mcp-Method": "tools/call", "Mcp-Name": "observe"},
		[]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"observe","arguments":{"wait":30},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the abandoned observe call: %v, want it cut off by its client", err)
	}

	srv.do(t, "POST", "/v1/sessions/"+play.Session+"/control", srv.token, wire.ControlRequest{Op: wire.OpStart}, http.StatusOK)
	lines, outcome := runMCPClient(t, node, script, "http", srv.base+"/mcp", tok, other.Seats["bob"].Token, srv.token)
	if outcome.Session != play.Session || outcome.Member != "bob" || outcome.Status != "finished" || outcome.Turns == 0 || outcome.Refused != 1 {
		t.Fatalf("outcome %+v: want bob of %s finished, with turns played", outcome, play.Session)
	}
	refusals, sawOther := 0, false
	for _, l := range lines {
		if _, ok := l["refused"]; ok {
			refusals++
		}
		if o, ok := l["other_seat"]; ok {
			sawOther = strings.Contains(string(o), other.Session) && !strings.Contains(string(o), play.Session)
		}
	}
	if refusals != 3 || !sawOther {
		t.Errorf("%d refusals (want 3: another seat's token on this MCP session, the operator token, none), other seat seen as its own: %v", refusals, sawOther)
	}
	turns, timeouts := srv.memberTurns(t, play.Session, "bob")
	if timeouts != 0 || turns != outcome.Turns {
		t.Fatalf("bob's log: %d turns, %d timed out; the client answered %d", turns, timeouts, outcome.Turns)
	}
	ret := srv.score(t, play.Session)

	// The refusals are counted, by kind; the steps too.
	for series, least := range map[string]float64{
		`corpsim_adapter_errors_total{adapter="mcp",code="http_400"}`:       2,
		`corpsim_adapter_errors_total{adapter="mcp",code="http_413"}`:       1,
		`corpsim_adapter_errors_total{adapter="mcp",code="http_401"}`:       1,
		`corpsim_adapter_errors_total{adapter="mcp",code="http_403"}`:       2,
		`corpsim_adapter_errors_total{adapter="mcp",code="tool_error_400"}`: 1,
		`corpsim_adapter_steps_total{adapter="mcp"}`:                        float64(outcome.Turns),
	} {
		if got := srv.metric(t, series); got < least {
			t.Errorf("%s = %v, want at least %v", series, got, least)
		}
	}

	// The same client through corpsim mcp, over stdio.
	stdio := srv.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
	_, so := runMCPClient(t, node, script, "stdio", corpsimBinary(t), srv.base, stdio.Seats["bob"].Token)
	if so.Session != stdio.Session || so.Member != "bob" || so.Status != "finished" || so.Turns == 0 {
		t.Fatalf("stdio outcome %+v: want bob of %s finished", so, stdio.Session)
	}
	sturns, stimeouts := srv.memberTurns(t, stdio.Session, "bob")
	if stimeouts != 0 || sturns != so.Turns {
		t.Fatalf("bob's log (stdio): %d turns, %d timed out; the client answered %d", sturns, stimeouts, so.Turns)
	}
	sret := srv.score(t, stdio.Session)

	srv.do(t, "POST", "/v1/sessions/"+other.Session+"/control", srv.token, wire.ControlRequest{Op: wire.OpStop}, http.StatusOK)
	srv.stop(t)
	for _, c := range []struct {
		session string
		ret     float64
	}{{play.Session, ret}, {stdio.Session, sret}} {
		if got := logScore(t, srv.data, c.session); math.Abs(got-c.ret) > 1e-6 {
			t.Errorf("session %s: the gateway's score %.6f, corpsim score says %.6f", c.session, c.ret, got)
		}
	}
	t.Logf("http: bob played %d turns, score %.2f; stdio: %d turns, score %.2f", outcome.Turns, ret, so.Turns, sret)
}

// TestNemoGymMCPAgent: an agent on the official MCP TypeScript SDK plays
// a NeMo Gym session as NeMo Gym's MCP-native agents (claude_code_agent)
// do: seed_session on a real `corpsim serve --http`, the endpoint and the
// X-NeMo-Gym-Session-Token header its reply's "mcp" names (a forged token
// refused; the token and the cookie are two secrets, neither opening the
// other's routes), the seat played to the session's end over MCP, then
// verify with the session's cookie: its reward is the score `corpsim
// score` recomputes from the log, and every turn of the seat was the
// client's. The client leaves its MCP session open, as an agent's CLI
// that exits does: closing the NeMo Gym session closes it.
func TestNemoGymMCPAgent(t *testing.T) {
	node, script := installMCPSDK(t)
	srv := startHTTPServe(t, "--turn-timeout", "2m")
	lines, outcome := runMCPClient(t, node, script, "nemo", srv.base+"/nemo")
	if outcome.Member != "bob" || outcome.Status != "finished" || outcome.Turns == 0 || outcome.Verified != outcome.Session {
		t.Fatalf("outcome %+v: want bob's session played to its end and verified", outcome)
	}
	refusals := 0
	for _, l := range lines {
		if _, ok := l["refused"]; ok {
			refusals++
		}
	}
	if refusals != 2 {
		t.Errorf("%d refusals; want the forged token's and the cookie's", refusals)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n := srv.metric(t, `corpsim_adapter_sessions{adapter="mcp"}`)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v MCP sessions open after the NeMo Gym session closed; want 0", n)
		}
	}
	turns, timeouts := srv.memberTurns(t, outcome.Session, "bob")
	if timeouts != 0 || turns != outcome.Turns {
		t.Fatalf("bob's log: %d turns, %d timed out; the client answered %d", turns, timeouts, outcome.Turns)
	}
	srv.stop(t)
	if got := logScore(t, srv.data, outcome.Session); math.Abs(got-outcome.Reward) > 1e-6 {
		t.Errorf("verify's reward %.6f; corpsim score says %.6f", outcome.Reward, got)
	}
}

// TestMCPOff: --mcp=false leaves /mcp off the listener.
func TestMCPOff(t *testing.T) {
	srv := startHTTPServe(t, "--mcp=false")
	code, _, err := srv.mcpPost(context.Background(), nil, []byte(`{}`))
	if err != nil || code != http.StatusNotFound {
		t.Fatalf("POST /mcp with --mcp=false: HTTP %d (%v), want 404 (the gateway's)", code, err)
	}
	if strings.Contains(srv.stdout.String(), "/mcp") {
		t.Errorf("serve --mcp=false says it serves MCP:\n%s", srv.stdout.String())
	}
}

// TestMCPCommandErrors: corpsim mcp refuses to start without a seat token
// or with a URL that is none (usage, exit 2), and fails (exit 1) when the
// server cannot be reached or refuses the token.
func TestMCPCommandErrors(t *testing.T) {
	t.Setenv(cli.SeatTokenEnv, "")
	srv := startHTTPServe(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no token", []string{"mcp", "--url", "http://127.0.0.1:8080"}, cli.ExitUsage, "needs a seat's token"},
		{"not a URL", []string{"mcp", "--url", "nats://127.0.0.1:4222", "--token", "x"}, cli.ExitUsage, "--url"},
		{"no server", []string{"mcp", "--url", "http://" + freeAddr(t), "--token", "x"}, cli.ExitError, "connect to"},
		{"an unknown token", []string{"mcp", "--url", srv.base, "--token", natsserver.NewToken()}, cli.ExitError, "refused the seat token (HTTP 401: invalid token: unknown or expired seat token)"},
		{"the operator token", []string{"mcp", "--url", srv.base, "--token", srv.token}, cli.ExitError, "refused the seat token (HTTP 403: the operator token is not a seat's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, %q; want exit %d and a message containing %q", code, errs, c.code, c.want)
			}
		})
	}
}
