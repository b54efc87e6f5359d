package openenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/sim/simtest"
)

func startHTTP(t *testing.T, s *Server) string {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	t.Cleanup(s.Close) // before the listener closes
	return hs.URL
}

func wsURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/openenv/ws" }

func dial(t *testing.T, base, auth string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(context.Background(), wsURL(base), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {auth}}})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, code)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func roundTrip(t *testing.T, c *websocket.Conn, frame string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply %s: %v", b, err)
	}
	return r
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestCredentials(t *testing.T) {
	f := newFake("bob")
	rec := &recorder{}
	base := startHTTP(t, newTestServer(t, f, Config{Recorder: rec}))
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an unknown token", "Bearer nope", http.StatusUnauthorized},
		{"a seat's token", "Bearer seat", http.StatusForbidden},
		{"a seat's token as Basic", basic("corpsim", "seat"), http.StatusForbidden},
		{"another scheme", "Token op", http.StatusUnauthorized},
		{"bad Basic", "Basic !!!", http.StatusUnauthorized},
		{"the operator token", "Bearer op", http.StatusSwitchingProtocols},
		{"the operator token as Basic", basic("corpsim", "op"), http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.Dial(context.Background(), wsURL(base), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {tc.auth}}})
			if c != nil {
				defer c.CloseNow()
			}
			if resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("dial: %v, %+v; want status %d", err, resp, tc.want)
			}
			for _, path := range []string{"/openenv/reset", "/openenv/step"} {
				req, _ := http.NewRequest("POST", base+path, strings.NewReader(`{}`))
				req.Header.Set("Authorization", tc.auth)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				want := tc.want
				if want == http.StatusSwitchingProtocols {
					want = http.StatusUnprocessableEntity // admitted; the body lacks what it needs
				}
				if res.StatusCode != want {
					t.Fatalf("POST %s: %d, want %d", path, res.StatusCode, want)
				}
			}
		})
	}
	if creates, _, _ := f.snapshot(); len(creates) != 0 {
		t.Fatalf("%d sessions created", len(creates))
	}
	_, _, _, failed := rec.counts()
	if failed["FORBIDDEN"] != 6 || failed["UNAUTHORIZED"] != 12 {
		t.Fatalf("recorded refusals %v, want 6 FORBIDDEN and 12 UNAUTHORIZED", failed)
	}
	// The descriptive routes need no token.
	for _, path := range []string{"/openenv/health", "/openenv/schema", "/openenv/metadata"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !json.Valid(b) {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
	}
}

func TestOversizedFrames(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	f.stopped = make(chan string, 4)
	base := startHTTP(t, newTestServer(t, f, Config{MaxMessageBytes: 1000}))
	c := dial(t, base, "Bearer op")
	if r := roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`); r.Type != "observation" {
		t.Fatalf("reset: %+v", r)
	}
	// Over the limit: dropped, answered, and the connection and the
	// session go on.
	big := `{"type":"step","data":{"actions":{"bob":[{"type":"message","to":"carol","text":"` + strings.Repeat("x", 1500) + `"}]}}}`
	r := roundTrip(t, c, big)
	wantCode(t, r, CodeValidation)
	if !strings.Contains(r.Data.Message, "limit of 1000 bytes") {
		t.Fatalf("message %q does not name the limit", r.Data.Message)
	}
	if r := roundTrip(t, c, `{"type":"step","data":{"actions":{"bob":[]}}}`); r.Type != "observation" || r.Data.Done {
		t.Fatalf("step after an oversized frame: %+v", r)
	}
	if _, controls, steps := f.snapshot(); len(controls) != 0 || len(steps) != 2 {
		t.Fatalf("after an oversized frame: controls %v, %d steps; want none, 2 (the oversized one never reached the gateway)", controls, len(steps))
	}
	// Over four times the limit: the connection is closed, the session stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("y"), 4001))
	_, _, err := c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusMessageTooBig {
		t.Fatalf("after a frame over 4× the limit: %v, want a close with status 1009", err)
	}
	waitStopped(t, f, "s1")
}

func waitStopped(t *testing.T, f *fakeOps, id string) {
	t.Helper()
	select {
	case got := <-f.stopped:
		if got != id {
			t.Fatalf("stopped %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("session %s was not stopped", id)
	}
}

func TestConnectionEndsStopTheSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c *websocket.Conn)
		cfg  Config
	}{
		{"close", func(c *websocket.Conn) {
			_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"close"}`))
			_, _, err := c.Read(context.Background())
			if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
				t.Errorf("after close: %v, want a normal closure", err)
			}
		}, Config{}},
		{"abrupt disconnect", func(c *websocket.Conn) { _ = c.CloseNow() }, Config{}},
		{"a close frame without close", func(c *websocket.Conn) { _ = c.Close(websocket.StatusNormalClosure, "") }, Config{}},
		{"idle timeout", func(c *websocket.Conn) {}, Config{IdleTimeout: 300 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("bob")
			f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
			f.stopped = make(chan string, 4)
			rec := &recorder{}
			tc.cfg.Recorder = rec
			s := newTestServer(t, f, tc.cfg)
			base := startHTTP(t, s)
			c := dial(t, base, "Bearer op")
			roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
			roundTrip(t, c, `{"type":"step","data":{"actions":{"bob":[]}}}`)
			tc.end(c)
			waitStopped(t, f, "s1")
			s.handled.Wait()
			if opened, closed, _, _ := rec.counts(); opened != 1 || closed != 1 {
				t.Fatalf("recorded %d opened, %d closed; want 1, 1", opened, closed)
			}
			if _, controls, _ := f.snapshot(); len(controls) != 1 {
				t.Fatalf("controls %v, want one stop", controls)
			}
		})
	}
}

func TestCloseEndsEveryConnection(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	f.stopped = make(chan string, 8)
	s := newTestServer(t, f, Config{})
	base := startHTTP(t, s)
	var conns []*websocket.Conn
	for range 3 {
		c := dial(t, base, "Bearer op")
		roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
		conns = append(conns, c)
	}
	// The clients read, as OpenEnv's does between its frames.
	var wg sync.WaitGroup
	statuses := make([]websocket.StatusCode, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := c.Read(context.Background())
			statuses[i] = websocket.CloseStatus(err)
		}()
	}
	s.Close()
	wg.Wait()
	for i, st := range statuses {
		if st != websocket.StatusGoingAway {
			t.Fatalf("connection %d ended with %v, want going away (1001)", i, st)
		}
	}
	stopped := map[string]bool{}
	for range 3 {
		select {
		case id := <-f.stopped:
			stopped[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("stopped %v, want s1, s2, s3", stopped)
		}
	}
	_, resp, err := websocket.Dial(context.Background(), wsURL(base), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer op"}}})
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v %+v, want 503", err, resp)
	}
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer op")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: body is not JSON: %v", url, err)
	}
	return res.StatusCode, out
}

func TestStatelessRoutes(t *testing.T) {
	f := newFake("bob")
	score := 3.0
	f.script = []httpgw.StepReply{
		{Observations: obsOf("bob"), Rewards: 1},
		{Observations: obsOf(), Rewards: 2, Done: true, Status: "finished", Score: &score},
	}
	base := startHTTP(t, newTestServer(t, f, Config{MaxMessageBytes: 4096}))
	code, out := post(t, base+"/openenv/reset", `{"world":"startup","seed":5,"episode_id":null}`)
	obs, _ := out["observation"].(map[string]any)
	if code != 200 || obs["episode_id"] != "s1" || out["reward"] != 0.0 || out["done"] != false {
		t.Fatalf("reset: %d %v", code, out)
	}
	if len(out) != 3 {
		t.Fatalf("reset answered %v, want exactly observation, reward, done (OpenEnv's ResetResponse)", out)
	}
	var want any
	_ = json.Unmarshal([]byte(fakeTools), &want)
	if !reflect.DeepEqual(obs["tools"], want) {
		t.Fatalf("reset's observation has the tools %v, want the create reply's %s", obs["tools"], fakeTools)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		errCode    string
	}{
		{"no episode", `{"action":{"actions":{}}}`, 422, CodeValidation},
		{"not JSON", `{"action":`, 400, CodeInvalidJSON},
		{"an unknown field", `{"action":{"actions":{}},"episode_id":"s1","x":1}`, 422, CodeValidation},
		{"a bad action", `{"action":{"actionz":{}},"episode_id":"s1"}`, 422, CodeValidation},
		{"a bad timeout", `{"action":{"actions":{}},"episode_id":"s1","timeout_s":0}`, 422, CodeValidation},
		{"a tool action (answered on /ws)", `{"action":{"type":"list_tools"},"episode_id":"s1"}`, 422, CodeValidation},
		{"too large", `{"action":{"actions":{}},"episode_id":"s1","request_id":"` + strings.Repeat("x", 5000) + `"}`, 413, CodeValidation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := post(t, base+"/openenv/step", tc.body)
			if code != tc.code || out["code"] != tc.errCode || out["detail"] == "" {
				t.Fatalf("got %d %v, want %d with code %s and a detail", code, out, tc.code, tc.errCode)
			}
		})
	}
	code, out = post(t, base+"/openenv/step", `{"action":{"actions":{"bob":[{"type":"wait"}]}},"episode_id":"s1","timeout_s":5,"request_id":"r1"}`)
	if code != 200 || out["reward"] != 3.0 || out["done"] != true {
		t.Fatalf("step: %d %v, want reward 3 (the reset's 1 and the step's 2), done", code, out)
	}
	f.mu.Lock()
	f.stepErr = &httpgw.Error{Status: 404, Msg: "unknown session"}
	f.mu.Unlock()
	if code, out = post(t, base+"/openenv/step", `{"action":{"actions":{}},"episode_id":"s9"}`); code != 404 || out["code"] != CodeSession {
		t.Fatalf("step of an unknown session: %d %v", code, out)
	}
	f.mu.Lock()
	f.createErr = []error{&httpgw.Error{Status: 503, Msg: "too many sessions"}}
	f.mu.Unlock()
	if code, out = post(t, base+"/openenv/reset", `{"world":"startup"}`); code != 503 || out["code"] != CodeCapacityReached {
		t.Fatalf("reset at capacity: %d %v", code, out)
	}
}

func mustSchemas(t *testing.T, base string) map[string]*jsonschema.Schema {
	t.Helper()
	res, err := http.Get(base + "/openenv/schema")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var parts map[string]json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&parts); err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("schema has %d parts, want action, observation, state", len(parts))
	}
	out := map[string]*jsonschema.Schema{}
	for name, raw := range parts {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(name+".json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(name + ".json")
		if err != nil {
			t.Fatalf("the %s schema does not compile: %v", name, err)
		}
		out[name] = sch
	}
	return out
}

func validate(t *testing.T, sch *jsonschema.Schema, doc string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v)
}

func TestSchemas(t *testing.T) {
	base := startHTTP(t, newTestServer(t, newFake(), Config{}))
	sch := mustSchemas(t, base)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"actions":{}}`, true},
		{`{"actions":{"bob":[{"type":"claim","task":"api"},{"type":"work","task":"api","for":"2h"}]},"metadata":{}}`, true},
		{`{"actions":{"bob":[{"type":"message","to":"carol","text":"hi"}],"carol":[{"type":"wait"}]}}`, true},
		{`{"actions":{"bob":[{"type":"fly"}]}}`, false},
		{`{"actions":{"bob":[{"type":"claim"}]}}`, false},                  // task is required
		{`{"actions":{"bob":[{"type":"claim","task":"a","x":1}]}}`, false}, // no such argument
		{`{"actionz":{}}`, false},
		{`{"actions":{"bob":{"type":"wait"}}}`, false},
	} {
		if err := validate(t, sch["action"], tc.doc); (err == nil) != tc.ok {
			t.Errorf("action %s: valid %v, want %v (%v)", tc.doc, err == nil, tc.ok, err)
		}
	}
	// Real observations, as the engine makes them, fit the observation schema.
	obs := simtest.RandomObservations(t, 3, 40)
	if len(obs) < 50 {
		t.Fatalf("only %d observations", len(obs))
	}
	for i, o := range obs {
		doc := `{"seats":{"bob":` + string(o) + `},"episode_id":"s1"}`
		if err := validate(t, sch["observation"], doc); err != nil {
			t.Fatalf("observation %d does not fit the schema: %v\n%s", i, err, o)
		}
	}
	if err := validate(t, sch["observation"], `{"seats":{"bob":{"turn":"x"}},"episode_id":"s1"}`); err == nil {
		t.Fatal("the observation schema takes a seat whose turn is a string")
	}
	e := &episode{srv: newTestServer(t, newFake("bob"), Config{})}
	st := string(encode(e.state()))
	if err := validate(t, sch["state"], st); err != nil {
		t.Fatalf("state %s does not fit its schema: %v", st, err)
	}
}

// TestConnectionsAreCheap: a connection waiting for its next frame holds
// its handler's goroutine and nothing else.
func TestConnectionsAreCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 300 connections")
	}
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	s := newTestServer(t, f, Config{})
	base := startHTTP(t, s)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	before := runtime.NumGoroutine()
	const n = 300
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = dial(t, base, "Bearer op")
		if r := roundTrip(t, conns[i], `{"type":"reset","data":{"world":"startup"}}`); r.Type != "observation" {
			t.Fatalf("reset %d: %+v", i, r)
		}
	}
	time.Sleep(100 * time.Millisecond) // let finished dials' goroutines exit
	per := float64(runtime.NumGoroutine()-before) / n
	runtime.GC()
	runtime.ReadMemStats(&m1)
	kib := float64(int64(m1.HeapInuse+m1.StackInuse)-int64(m0.HeapInuse+m0.StackInuse)) / n / 1024
	t.Logf("%.2f goroutines and %.1f KiB of heap and stacks per open connection (server and client sides together)", per, kib)
	if kib > 128 {
		t.Fatalf("%.1f KiB per open connection, want at most 128", kib)
	}
	if per > 1.5 {
		t.Fatalf("%.2f goroutines per open connection, want at most 1.5 (the server's handler; the client side has none)", per)
	}
	for _, c := range conns {
		if r := roundTrip(t, c, `{"type":"step","data":{"actions":{"bob":[]}}}`); r.Type != "observation" {
			t.Fatalf("step: %+v", r)
		}
	}
	if creates, _, steps := f.snapshot(); len(creates) != n || len(steps) != 2*n {
		t.Fatalf("%d creates, %d steps; want %d, %d", len(creates), len(steps), n, 2*n)
	}
}

// TestFrameBudget: the frames the connections hold at once are bounded
// (Config.FrameBudget). A frame that finds the budget full is read to its
// end, dropped and answered CAPACITY_REACHED, and its connection goes on;
// connections trickling large frames hold no more than the budget, and
// every byte comes back once their frames are answered.
func TestFrameBudget(t *testing.T) {
	const limit = 64 << 10
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	s := newTestServer(t, f, Config{MaxMessageBytes: limit, FrameBudget: 4 * limit})
	base := startHTTP(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitHeld := func(what string, ok func(held int64) bool) int64 {
		t.Helper()
		last, since := int64(-1), time.Now()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			held := s.frames.Held()
			if held > s.frames.Most() {
				t.Fatalf("%s: %d bytes held, over the budget of %d", what, held, s.frames.Most())
			}
			if held != last {
				last, since = held, time.Now()
			}
			if ok(held) && time.Since(since) > 100*time.Millisecond {
				return held
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d bytes held", what, held)
			}
		}
	}

	// A frame while the budget is full is dropped, and named; the
	// connection goes on, and is answered once there is room.
	c := dial(t, base, "Bearer op")
	if !s.frames.Take(s.frames.Most()) {
		t.Fatal("the budget is not free at the start")
	}
	r := roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
	wantCode(t, r, CodeCapacityReached)
	if !strings.Contains(r.Data.Message, "(0 MiB)") || !strings.Contains(r.Data.Message, "message of 43 bytes") {
		t.Errorf("message %q names neither the frame nor the budget", r.Data.Message)
	}
	s.frames.Give(s.frames.Most())
	if r := roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`); r.Type != "observation" {
		t.Fatalf("reset once there is room: %+v", r)
	}

	// Six connections trickle frames of nearly the limit, and stop in
	// their middle: about four fit the budget.
	holders := make([]*websocket.Conn, 6)
	writers := make([]io.WriteCloser, len(holders))
	for i := range holders {
		holders[i] = dial(t, base, "Bearer op")
		w, err := holders[i].Writer(ctx, websocket.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		for range (limit - 4096) / 4096 {
			if _, err := w.Write(bytes.Repeat([]byte(" "), 4096)); err != nil {
				t.Fatal(err)
			}
		}
		writers[i] = w
	}
	if held := waitHeld("frames trickled", func(held int64) bool { return held > 2*limit }); held > 4*limit {
		t.Fatalf("%d bytes held", held)
	}
	// Their ends come: the frames held are answered (all blanks, no JSON),
	// the others dropped for want of room.
	codes := map[string]int{}
	for i, w := range writers {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, b, err := holders[i].Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("reply %s: %v", b, err)
		}
		codes[r.Data.Code]++
	}
	if codes[CodeCapacityReached] == 0 || codes[CodeInvalidJSON] < 2 || codes[CodeCapacityReached]+codes[CodeInvalidJSON] != len(holders) {
		t.Errorf("the trickled frames' answers: %v; want some INVALID_JSON (held and read) and some CAPACITY_REACHED (no room)", codes)
	}
	waitHeld("every frame answered", func(held int64) bool { return held == 0 })
	// A frame cut by its connection's end gives its bytes back too.
	w, err := holders[0].Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte(" "), 32<<10)); err != nil {
		t.Fatal(err)
	}
	waitHeld("a frame begun", func(held int64) bool { return held > 16<<10 })
	_ = holders[0].CloseNow()
	waitHeld("its connection closed", func(held int64) bool { return held == 0 })

	// A frame of the limit holds the limit and a byte (read to tell it is
	// not over), not the twice the limit a doubling buffer would.
	w, err = holders[1].Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	for range limit / 4096 {
		if _, err := w.Write(bytes.Repeat([]byte(" "), 4096)); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = holders[1].Ping(ctx) }() // a control frame flushes what the writer buffers
	if held := waitHeld("a frame of the limit", func(held int64) bool { return held > limit }); held > limit+1 {
		t.Errorf("a frame of %d bytes holds %d of the budget; want at most %d", limit, held, limit+1)
	}
}

// A connection that ends while its step waits for the session stops the
// session at once: the wait went on (30 s by default) before the stop.
func TestConnectionEndsDuringAStepStopTheSession(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}}
	f.stopped = make(chan string, 4)
	s := newTestServer(t, f, Config{StepWait: time.Hour})
	base := startHTTP(t, s)
	c := dial(t, base, "Bearer op")
	roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
	f.mu.Lock()
	f.stepBlock = make(chan struct{}) // the next step waits until its context ends
	f.mu.Unlock()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"step","data":{"actions":{"bob":[]}}}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the step is waiting
	_ = c.CloseNow()
	waitStopped(t, f, "s1")
}
