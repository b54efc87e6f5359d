package mcpseat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/mcpseat"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// stack is a corpsim server (embedded NATS with per-seat auth, the session
// service on an in-memory log), the HTTP gateway, and the MCP adapter over
// it, on one HTTP listener as corpsim serve --http mounts them.
type stack struct {
	url      string
	operator string
	log      events.Log
	gw       *httpgw.Gateway
	mcp      *mcpseat.Server
	rec      *countingRecorder
}

// testLogger logs to tb at Warn and above; for a fuzz test, nowhere (an
// F's Log may not be called while its fuzz target runs, and the server
// logs from its own goroutines).
func testLogger(tb testing.TB) hclog.Logger {
	if _, fuzz := tb.(*testing.F); fuzz {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Warn, Output: tbWriter{tb}})
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func startStack(tb testing.TB, cfg mcpseat.Config) *stack {
	tb.Helper()
	op := natsserver.NewToken()
	auth := natsserver.NewAuth(op)
	bus, err := natsserver.Start(natsserver.Options{Listen: "127.0.0.1:0", Auth: auth})
	if err != nil {
		tb.Fatal(err)
	}
	l := memlog.New()
	svc, err := server.New(server.Config{Log: l, Bus: bus, Auth: auth, Logger: testLogger(tb), CheckpointEvery: -1, TurnTimeout: 20 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	gw, err := httpgw.New(httpgw.Config{NATSURL: bus.ClientURL(), OperatorToken: op, Logger: testLogger(tb), TurnWait: 20 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	rec := &countingRecorder{failed: map[string]int{}}
	cfg.Logger, cfg.Recorder = testLogger(tb), rec
	ms := mcpseat.New(gw, cfg)
	mux := http.NewServeMux()
	mux.Handle(mcpseat.Path, ms.Handler())
	mux.Handle("/", gw.Handler())
	srv := httptest.NewServer(mux)
	tb.Cleanup(func() {
		ms.Close()
		gw.Close()
		srv.Close()
		svc.Close()
		bus.Shutdown()
	})
	return &stack{url: srv.URL, operator: op, log: l, gw: gw, mcp: ms, rec: rec}
}

// countingRecorder is a Recorder that counts.
type countingRecorder struct {
	mu                      sync.Mutex
	opened, closed, stepped int
	failed                  map[string]int
}

func (r *countingRecorder) Opened()  { r.mu.Lock(); r.opened++; r.mu.Unlock() }
func (r *countingRecorder) Closed()  { r.mu.Lock(); r.closed++; r.mu.Unlock() }
func (r *countingRecorder) Stepped() { r.mu.Lock(); r.stepped++; r.mu.Unlock() }
func (r *countingRecorder) Failed(code string) {
	r.mu.Lock()
	r.failed[code]++
	r.mu.Unlock()
}

func (r *countingRecorder) get() (opened, closed, stepped int, failed map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := map[string]int{}
	for k, v := range r.failed {
		f[k] = v
	}
	return r.opened, r.closed, r.stepped, f
}

func (s *stack) create(tb testing.TB, req wire.CreateRequest) wire.CreateReply {
	tb.Helper()
	reply, err := s.gw.Create(context.Background(), req)
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
	return reply
}

// bearer is an http.RoundTripper adding a bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect is an MCP client session on the stack's /mcp with token, on
// protocol revision version ("" is the SDK's newest, 2026-07-28).
func (s *stack) connect(tb testing.TB, token, version string) (*mcp.ClientSession, error) {
	tb.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: s.url + mcpseat.Path, HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, t, opts)
	if err == nil {
		tb.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mustConnect(tb testing.TB, s *stack, token, version string) *mcp.ClientSession {
	tb.Helper()
	cs, err := s.connect(tb, token, version)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	return cs
}

func call(tb testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("call %s: %v", name, err)
	}
	return res
}

// structuredAs decodes a result's structured content, and checks that its
// text is the same JSON.
func structuredAs[T any](tb testing.TB, res *mcp.CallToolResult) T {
	tb.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("structured content %s: %v", b, err)
	}
	if !res.IsError {
		if len(res.Content) != 1 {
			tb.Fatalf("got %d content blocks, want 1 (the JSON text)", len(res.Content))
		}
		txt, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			tb.Fatalf("content is %T, want text", res.Content[0])
		}
		var a, b2 any
		if json.Unmarshal([]byte(txt.Text), &a) != nil || json.Unmarshal(b, &b2) != nil || fmt.Sprint(a) != fmt.Sprint(b2) {
			tb.Fatalf("text %s is not the structured content %s", txt.Text, b)
		}
	}
	return v
}

func textOf(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out = append(out, t.Text)
		}
	}
	return strings.Join(out, "\n")
}

type observed struct {
	Done   bool   `json:"done"`
	Status string `json:"status"`
	org.Observation
}

// observeTurn calls observe until a turn waits or the session has ended.
func observeTurn(tb testing.TB, cs *mcp.ClientSession) observed {
	tb.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		res := call(tb, cs, mcpseat.ObserveTool, map[string]any{"wait": 5})
		if res.IsError {
			tb.Fatalf("observe: %s", textOf(res))
		}
		o := structuredAs[observed](tb, res)
		if o.Done || o.Turn != 0 {
			return o
		}
	}
	tb.Fatal("no turn within a minute")
	return observed{}
}

// A seat is offered its world's actions as tools (agents.ToolDefsFor, as
// `corpsim tools --world` lists them: no record tools in startup, which has
// no systems; in billing-support the record tools naming its record types)
// and observe, on every protocol revision.
func TestToolsAreTheActions(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	for _, world := range []struct{ name, seat string }{{"startup", "bob"}, {"billing-support", "ana"}} {
		w, err := worlds.Shipped(world.name)
		if err != nil {
			t.Fatal(err)
		}
		defs := agents.ToolDefsFor(w)
		reply := s.create(t, wire.CreateRequest{World: world.name, Seed: 1, Agents: "greedy," + world.seat + "=remote", Wait: true})
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(world.name+"/"+version, func(t *testing.T) {
				cs := mustConnect(t, s, reply.Seats[world.seat].Token, version)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				byName := map[string]*mcp.Tool{}
				var names []string
				for _, tool := range res.Tools {
					byName[tool.Name] = tool
					names = append(names, tool.Name)
				}
				want := []string{mcpseat.ObserveTool}
				for _, d := range defs {
					want = append(want, d.Function.Name)
				}
				slices.Sort(want)
				if !slices.Equal(names, want) {
					t.Fatalf("tools %v, want %v (in name order)", names, want)
				}
				if has := byName["create"] != nil; has != (len(w.Systems) > 0) {
					t.Errorf("the record tool create offered: %v; the world has %d systems", has, len(w.Systems))
				}
				for _, d := range defs {
					tool := byName[d.Function.Name]
					got, _ := json.Marshal(tool.InputSchema)
					var g, w any
					wantB, _ := json.Marshal(d.Function.Parameters)
					_ = json.Unmarshal(got, &g)
					_ = json.Unmarshal(wantB, &w)
					if fmt.Sprint(g) != fmt.Sprint(w) {
						t.Errorf("%s: inputSchema %s, want the tool's parameters %s", d.Function.Name, got, wantB)
					}
					if !strings.HasPrefix(tool.Description, d.Function.Description) {
						t.Errorf("%s: the description does not start with the action's", d.Function.Name)
					}
				}
				if ir := cs.InitializeResult(); !strings.Contains(ir.Instructions, "observe") {
					t.Errorf("instructions %q do not say how to play", ir.Instructions)
				}
				rs, err := cs.ListResources(context.Background(), nil)
				if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != mcpseat.ObservationURI {
					t.Fatalf("resources %+v, %v: want the one observation resource", rs, err)
				}
			})
		}
	}
}

// TestPlaysASeat plays bob's seat of a shipped world to its end over MCP,
// once per protocol revision: each turn observe, then the first action the
// greedy baseline would take (as the tool call agents.ToolCallFromAction
// makes of it), or wait. Every turn bob's log records is one the client
// answered, with the very action it sent.
func TestPlaysASeat(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			s := startStack(t, mcpseat.Config{})
			reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy,bob=remote"})
			cs := mustConnect(t, s, reply.Seats["bob"].Token, version)
			var sent []org.Action
			var greedy agents.Greedy
			for {
				o := observeTurn(t, cs)
				if o.Done {
					if o.Status != "finished" {
						t.Fatalf("the session ended %s, want finished", o.Status)
					}
					break
				}
				if o.Member != "bob" || o.Session != reply.Session {
					t.Fatalf("observation of %s/%s, want bob's of %s", o.Session, o.Member, reply.Session)
				}
				acts, _ := greedy.Decide(context.Background(), o.Observation)
				act := org.Action{Type: org.ActWait}
				if len(acts) > 0 {
					act = acts[0]
				}
				name, args, err := agents.ToolCallFromAction(act)
				if err != nil {
					t.Fatal(err)
				}
				res := call(t, cs, name, json.RawMessage(args))
				r := structuredAs[struct {
					Turn      uint64     `json:"turn"`
					Forwarded bool       `json:"forwarded"`
					Action    org.Action `json:"action"`
					Member    string     `json:"member"`
				}](t, res)
				if res.IsError || !r.Forwarded || r.Turn != o.Turn || r.Action != act || r.Member != "bob" {
					t.Fatalf("answering turn %d with %+v: %+v (isError %v: %s)", o.Turn, act, r, res.IsError, textOf(res))
				}
				sent = append(sent, act)
				if len(sent) > 2000 {
					t.Fatal("more than 2000 turns")
				}
			}
			var got []org.Action
			for ev, err := range s.log.Read(context.Background(), reply.Session, 1) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Actor != "bob" {
					continue
				}
				switch ev.Type {
				case payload.EvTurnTimeout, payload.EvTurnFailed:
					t.Fatalf("bob's turn at seq %d: %s", ev.Seq, ev.Type)
				case payload.EvTurn:
					var p payload.Turn
					if err := json.Unmarshal(ev.Payload, &p); err != nil {
						t.Fatal(err)
					}
					if len(p.Actions) != 1 {
						t.Fatalf("turn %d has %d actions, want the 1 sent", p.Turn, len(p.Actions))
					}
					got = append(got, p.Actions[0])
				}
			}
			if !slices.Equal(got, sent) {
				t.Fatalf("bob's log has %d turns, the client answered %d; they differ", len(got), len(sent))
			}
			score := finalScore(t, s, reply.Session)
			_, _, stepped, _ := s.rec.get()
			if stepped != len(sent) {
				t.Errorf("recorded %d steps, want %d", stepped, len(sent))
			}
			t.Logf("%s: bob played %d turns; team score %.2f", version, len(sent), score.Score)
		})
	}
}

// TestRefusedCalls: arguments that do not parse are a tool error and leave
// the turn waiting; an action once the session has ended is refused.
func TestRefusedCalls(t *testing.T) {
	s := startStack(t, mcpseat.Config{ActWait: 200 * time.Millisecond})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote"})
	cs := mustConnect(t, s, reply.Seats["bob"].Token, "2025-11-25")
	o := observeTurn(t, cs)
	for _, c := range []struct {
		name string
		args any
		want string
	}{
		{org.ActClaim, map[string]any{}, `needs the argument "task"`},
		{org.ActClaim, map[string]any{"task": 7}, "must be a string"},
		{org.ActWork, map[string]any{"task": "api", "speed": "fast"}, `has no argument "speed"`},
		{mcpseat.ObserveTool, map[string]any{"wait": -1}, "0 or more"},
		{mcpseat.ObserveTool, map[string]any{"until": 3}, "only \"wait\""},
	} {
		res := call(t, cs, c.name, c.args)
		if !res.IsError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s %v: isError %v, %q; want a tool error saying %q", c.name, c.args, res.IsError, textOf(res), c.want)
		}
	}
	// Nothing was sent: the same turn still waits.
	if again := observeTurn(t, cs); again.Turn != o.Turn {
		t.Fatalf("after refused calls turn %d waits, want %d", again.Turn, o.Turn)
	}
	// An unknown tool is a JSON-RPC error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fire_everyone"}); err == nil {
		t.Error("an unknown tool was answered")
	}
	// Stop the session: observe says done, an action is refused with 409.
	if _, err := s.gw.Control(context.Background(), reply.Session, wire.OpStop); err != nil {
		t.Fatal(err)
	}
	if o := observeTurn(t, cs); !o.Done {
		t.Fatalf("observe after stop: %+v, want done", o)
	}
	res := call(t, cs, org.ActWait, nil)
	r := structuredAs[struct {
		Status    int  `json:"status"`
		Forwarded bool `json:"forwarded"`
	}](t, res)
	if !res.IsError || r.Status != http.StatusConflict || r.Forwarded {
		t.Fatalf("wait after the end: %+v, isError %v (%s); want refused with 409", r, res.IsError, textOf(res))
	}
	_, _, _, failed := s.rec.get()
	if failed["tool_error_400"] != 5 || failed["tool_error_409"] != 1 || failed["-32602"] != 1 {
		t.Errorf("failures recorded %v, want 5 tool_error_400, 1 tool_error_409, 1 -32602", failed)
	}
}

func TestObservationResource(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	cs := mustConnect(t, s, reply.Seats["bob"].Token, "")
	read := func() map[string]any {
		t.Helper()
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpseat.ObservationURI})
		if err != nil || len(res.Contents) != 1 {
			t.Fatalf("read: %+v, %v", res, err)
		}
		if res.CacheScope != "private" || res.TTLMs != 0 {
			t.Errorf("the observation may be cached: scope %q, ttl %dms; want private and stale at once", res.CacheScope, res.TTLMs)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Not started: no turn waits.
	if v := read(); v["done"] != false || v["turn"] != float64(0) || v["member"] != "bob" {
		t.Fatalf("before the start: %v", v)
	}
	if _, err := s.gw.Control(context.Background(), reply.Session, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	o := observeTurn(t, cs)
	if v := read(); v["turn"] != float64(o.Turn) || v["member"] != "bob" || v["done"] != false {
		t.Fatalf("while turn %d waits: %v", o.Turn, v)
	}
}

// raw is an HTTP request to /mcp with a JSON-RPC body.
func (s *stack) raw(tb testing.TB, method, token, session, version string, body []byte) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, s.url+mcpseat.Path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// openSession initializes an MCP session with token and returns its ID.
func (s *stack) openSession(tb testing.TB, token string) string {
	tb.Helper()
	resp, b := s.raw(tb, "POST", token, "", "", []byte(initialize))
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		tb.Fatalf("initialize: HTTP %d, session %q: %s", resp.StatusCode, id, b)
	}
	resp, b = s.raw(tb, "POST", token, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if resp.StatusCode != http.StatusAccepted {
		tb.Fatalf("initialized: HTTP %d: %s", resp.StatusCode, b)
	}
	return id
}

func TestSeatTokens(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	one := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	two := s.create(t, wire.CreateRequest{World: "startup", Seed: 2, Agents: "greedy,bob=remote", Wait: true})
	bob1, bob2 := one.Seats["bob"].Token, two.Seats["bob"].Token
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"none", "", http.StatusUnauthorized},
		{"unknown", natsserver.NewToken(), http.StatusUnauthorized},
		{"operator", s.operator, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, version := range []string{"", "2026-07-28"} {
				resp, b := s.raw(t, "POST", c.token, "", version, []byte(initialize))
				if resp.StatusCode != c.want {
					t.Fatalf("version %q: HTTP %d, want %d: %s", version, resp.StatusCode, c.want, b)
				}
				if c.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("a 401 without WWW-Authenticate")
				}
			}
			if _, err := s.connect(t, c.token, ""); err == nil {
				t.Fatal("the SDK client connected")
			}
		})
	}
	t.Run("another seat's MCP session", func(t *testing.T) {
		id := s.openSession(t, bob1)
		list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if resp, b := s.raw(t, "POST", bob2, id, "2025-11-25", list); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("bob of session two on bob of session one's MCP session: HTTP %d, want 403: %s", resp.StatusCode, b)
		}
		if resp, b := s.raw(t, "POST", bob1, id, "2025-11-25", list); resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"observe"`)) {
			t.Fatalf("its own seat: HTTP %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("each token its own seat", func(t *testing.T) {
		for tok, want := range map[string]string{bob1: one.Session, bob2: two.Session} {
			cs := mustConnect(t, s, tok, "")
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpseat.ObservationURI})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Contents[0].Text, `"session":"`+want+`"`) {
				t.Fatalf("observation %s, want session %s's", res.Contents[0].Text, want)
			}
		}
	})
}

// TestHostileRequests: malformed JSON-RPC, unknown methods and oversized
// bodies are refused; the seat's MCP session, its turn and the server are
// untouched.
func TestHostileRequests(t *testing.T) {
	s := startStack(t, mcpseat.Config{MaxRequestBytes: 64 << 10})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote"})
	tok := reply.Seats["bob"].Token
	cs := mustConnect(t, s, tok, "2025-11-25")
	o := observeTurn(t, cs)
	id := s.openSession(t, tok)
	big := append([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"message","arguments":{"to":"alice","text":"`),
		bytes.Repeat([]byte("x"), 100<<10)...)
	big = append(big, `"}}}`...)
	for _, c := range []struct {
		name, version, session string
		body                   []byte
		want                   int
	}{
		{"not JSON", "2025-11-25", id, []byte(`{"jsonrpc":"2.0","id":`), http.StatusBadRequest},
		{"not JSON-RPC", "2025-11-25", id, []byte(`[1,2,3]`), http.StatusBadRequest},
		{"unknown method", "2025-11-25", id, []byte(`{"jsonrpc":"2.0","id":3,"method":"seats/steal"}`), http.StatusOK}, // JSON-RPC -32601
		{"unknown method 2026", "2026-07-28", "", []byte(`{"jsonrpc":"2.0","id":3,"method":"seats/steal","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), http.StatusNotFound},
		{"oversized", "2025-11-25", id, big, http.StatusRequestEntityTooLarge},
		{"oversized 2026", "2026-07-28", "", big, http.StatusRequestEntityTooLarge},
		{"unknown MCP session", "2025-11-25", "nosuchsession", []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`), http.StatusNotFound},
	} {
		resp, b := s.raw(t, "POST", tok, c.session, c.version, c.body)
		if resp.StatusCode != c.want {
			t.Errorf("%s: HTTP %d, want %d: %.200s", c.name, resp.StatusCode, c.want, b)
		}
	}
	// The seat and its turn are untouched, and the SDK client's session
	// still works; so does the raw session.
	if again := observeTurn(t, cs); again.Turn != o.Turn || again.Done {
		t.Fatalf("after the hostile requests turn %d waits (done %v), want %d", again.Turn, again.Done, o.Turn)
	}
	if resp, b := s.raw(t, "POST", tok, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the raw MCP session after it all: HTTP %d: %s", resp.StatusCode, b)
	}
	_, _, _, failed := s.rec.get()
	if failed["http_400"] < 2 || failed["-32601"] != 1 || failed["http_413"] != 2 || failed["http_404"] < 2 {
		t.Errorf("failures recorded %v, want at least 2 http_400, one -32601, 2 http_413, 2 http_404", failed)
	}
}

// finalScore is the gateway's score of an ended session. Right at the
// end the server may hold the session's control subject without answering
// it (the request times out): ask again then.
func finalScore(tb testing.TB, s *stack, session string) httpgw.ScoreReply {
	tb.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		score, err := s.gw.Score(context.Background(), session)
		if err == nil && score.Status == "finished" && score.Complete {
			return score
		}
		if time.Now().After(deadline) {
			tb.Fatalf("score %+v, %v", score, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// abandon sends an MCP request and goes away 100ms later, before the
// answer.
func (s *stack) abandon(tb testing.TB, header map[string]string, body string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+mcpseat.Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("the request was answered before its client went away: %v", err)
	}
}

// TestDisconnects: clients that go away in the middle of a call. An
// observe call uses nothing up. An action call waiting for the seat's turn
// on a 2025-11-25 session goes on (that revision says a disconnect is no
// cancellation) and answers the turn when it comes: the log records it,
// and the seat's next observation follows it. On 2026-07-28 the request is
// the call's whole life: the call ends with it and sends nothing. Either
// way the seat, its session and the server carry on.
func TestDisconnects(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	tok := reply.Seats["bob"].Token
	id := s.openSession(t, tok)
	legacy := map[string]string{"Authorization": "Bearer " + tok, "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	s.abandon(t, legacy, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"observe","arguments":{"wait":30}}}`)
	modern := map[string]string{"Authorization": "Bearer " + tok, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "wait"}
	s.abandon(t, modern, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"wait","arguments":{"for":"2h"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, _, failed := s.rec.get(); failed["tool_error_503"] == 1 {
			break // the 2026-07-28 call has ended, unanswered
		}
		if time.Now().After(deadline) {
			_, _, _, failed := s.rec.get()
			t.Fatalf("the abandoned 2026-07-28 call did not end: %v", failed)
		}
	}
	s.abandon(t, legacy, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{"for":"1h"}}}`)
	if _, err := s.gw.Control(context.Background(), reply.Session, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	cs := mustConnect(t, s, tok, "")
	// The abandoned call and this observe both wake when turn 1 comes: this
	// one may see turn 1 before the other has answered it.
	o := observeTurn(t, cs)
	for deadline := time.Now().Add(20 * time.Second); !o.Done && o.Turn == 1 && time.Now().Before(deadline); o = observeTurn(t, cs) {
		time.Sleep(10 * time.Millisecond)
	}
	if o.Done || o.Turn != 2 {
		t.Fatalf("after the abandoned calls: %+v, want turn 2 waiting (turn 1 answered by the abandoned 2025-11-25 call)", o)
	}
	var first []org.Action
	for ev, err := range s.log.Read(context.Background(), reply.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Actor == "bob" && ev.Type == payload.EvTurn {
			var p payload.Turn
			_ = json.Unmarshal(ev.Payload, &p)
			first = p.Actions
			break
		}
	}
	if want := []org.Action{{Type: org.ActWait, For: "1h"}}; !slices.Equal(first, want) {
		t.Fatalf("bob's first turn: %+v, want %+v", first, want)
	}
	if resp, b := s.raw(t, "POST", tok, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the MCP session after its client went away twice: HTTP %d: %s", resp.StatusCode, b)
	}
}

func TestSessionLimits(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		s := startStack(t, mcpseat.Config{IdleTimeout: 100 * time.Millisecond})
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
		tok := reply.Seats["bob"].Token
		id := s.openSession(t, tok)
		if n := s.mcp.Sessions(); n != 1 {
			t.Fatalf("%d sessions open, want 1", n)
		}
		for deadline := time.Now().Add(20 * time.Second); s.mcp.Sessions() != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("an idle MCP session was not closed within 20s")
			}
		}
		if resp, _ := s.raw(t, "POST", tok, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a request on the closed session: HTTP %d, want 404", resp.StatusCode)
		}
		opened, closed, _, _ := s.rec.get()
		if opened != 1 || closed != 1 {
			t.Errorf("recorded %d opened, %d closed; want 1 and 1", opened, closed)
		}
	})
	t.Run("per seat", func(t *testing.T) {
		s := startStack(t, mcpseat.Config{MaxSessionsPerSeat: 2})
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
		tok := reply.Seats["bob"].Token
		first := s.openSession(t, tok)
		s.openSession(t, tok)
		last := s.openSession(t, tok)
		for deadline := time.Now().Add(20 * time.Second); s.mcp.Sessions() != 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions open, want 2", s.mcp.Sessions())
			}
		}
		list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if resp, _ := s.raw(t, "POST", tok, first, "2025-11-25", list); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the seat's oldest session: HTTP %d, want 404 (closed)", resp.StatusCode)
		}
		if resp, _ := s.raw(t, "POST", tok, last, "2025-11-25", list); resp.StatusCode != http.StatusOK {
			t.Fatalf("the seat's newest session: HTTP %d, want 200", resp.StatusCode)
		}
	})
	t.Run("capacity", func(t *testing.T) {
		s := startStack(t, mcpseat.Config{MaxSessions: 1})
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,alice=remote,bob=remote", Wait: true})
		s.openSession(t, reply.Seats["alice"].Token)
		resp, b := s.raw(t, "POST", reply.Seats["bob"].Token, "", "", []byte(initialize))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a session past the limit: HTTP %d (Retry-After %q): %s; want 503", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		// 2026-07-28 has no sessions: it is served at capacity too.
		cs := mustConnect(t, s, reply.Seats["bob"].Token, "")
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestClose: Close ends a waiting observe call and the open sessions; then
// requests are refused with 503.
func TestClose(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	cs := mustConnect(t, s, reply.Seats["bob"].Token, "2025-11-25")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpseat.ObserveTool, Arguments: map[string]any{"wait": 120}})
		done <- res
	}()
	time.Sleep(100 * time.Millisecond) // the call is waiting (the session is not started: no turn comes)
	closed := make(chan struct{})
	go func() { s.mcp.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30s")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting observe call did not end")
	}
	if n := s.mcp.Sessions(); n != 0 {
		t.Errorf("%d sessions open after Close", n)
	}
	if resp, _ := s.raw(t, "POST", reply.Seats["bob"].Token, "", "", []byte(initialize)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: HTTP %d, want 503", resp.StatusCode)
	}
}

// TestProxy: the stdio proxy offers the server's tools and resource and
// forwards calls, over an in-memory transport; a refused token fails it.
func TestProxy(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote"})
	if err := mcpseat.Proxy(context.Background(), nil, mcpseat.ProxyConfig{URL: s.url, Token: natsserver.NewToken()}); err == nil ||
		!strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("an unknown token: %v, want a refusal", err)
	}
	local, remote := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxied := make(chan error, 1)
	go func() {
		proxied <- mcpseat.Proxy(ctx, local, mcpseat.ProxyConfig{URL: s.url + "/", Token: reply.Seats["bob"].Token, Logger: testLogger(t)})
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "local", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, remote, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools through the proxy: %v", err)
	}
	startup, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(agents.ToolDefsFor(startup)) + 1; len(tools.Tools) != want {
		t.Fatalf("tools through the proxy: %d, %v; want startup's %d", len(tools.Tools), err, want)
	}
	o := observeTurn(t, cs)
	if o.Member != "bob" || o.Turn == 0 {
		t.Fatalf("observation through the proxy: %+v", o)
	}
	res := call(t, cs, org.ActWait, map[string]any{"for": "1h"})
	r := structuredAs[struct {
		Turn      uint64 `json:"turn"`
		Forwarded bool   `json:"forwarded"`
	}](t, res)
	if res.IsError || !r.Forwarded || r.Turn != o.Turn {
		t.Fatalf("wait through the proxy: %+v (%s)", r, textOf(res))
	}
	if res := call(t, cs, org.ActClaim, map[string]any{}); !res.IsError {
		t.Fatal("a bad call through the proxy was not a tool error")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fire_everyone"}); err == nil {
		t.Fatal("an unknown tool through the proxy was answered")
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpseat.ObservationURI})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"member":"bob"`) {
		t.Fatalf("the resource through the proxy: %+v, %v", rr, err)
	}
	_ = cs.Close()
	select {
	case err := <-proxied:
		if err != nil {
			t.Fatalf("the proxy ended with %v after its client closed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not end when its client closed")
	}
}

// TestProxyCancelLeavesOtherCalls: a call the local client cancels
// through `corpsim mcp` ends alone: the proxy does not take the
// cancellation for a broken connection (it had, warning that the server
// could not be reached and closing its upstream session under every other
// call), and another call in flight at that moment is answered by the
// server.
func TestProxyCancelLeavesOtherCalls(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	// Held for its start: bob's observe waits its whole wait.
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	local, remote := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logged simtest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})
	go func() {
		_ = mcpseat.Proxy(ctx, local, mcpseat.ProxyConfig{URL: s.url, Token: reply.Seats["bob"].Token, Logger: logger})
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "local", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	other := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "observe", Arguments: map[string]any{"wait": 2}})
		other <- result{res, err}
	}()
	cctx, stop := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "observe", Arguments: map[string]any{"wait": 30}})
		cancelled <- err
	}()
	time.Sleep(300 * time.Millisecond) // both in flight
	stop()
	if err := <-cancelled; err == nil {
		t.Fatal("the cancelled call was answered")
	}
	r := <-other
	if r.err != nil || r.res.IsError {
		t.Fatalf("the other call in flight: %v, %s; want the server's answer", r.err, textOf(r.res))
	}
	if strings.Contains(logged.String(), "could not be reached") {
		t.Errorf("the proxy took the cancellation for a broken connection:\n%s", logged.String())
	}
}
