package openenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/sim/simtest"
)

// fakeOps plays the gateway: sessions s1, s2, … each with the remote seats
// of seats, whose steps answer from script (then a done reply).
type fakeOps struct {
	mu        sync.Mutex
	seats     []string
	script    []httpgw.StepReply
	creates   []wire.CreateRequest
	controls  []string // "session op"
	steps     []httpgw.StepRequest
	createErr []error // returned by the next creates, in order
	stepErr   error
	n         int
	cursor    map[string]int
	stopped   chan string // gets each stopped session, if not nil
	stepBlock chan struct{}
	stopWaits chan struct{} // a stop waits for it to close, if not nil
	onCreate  func()        // called by each Create, if not nil
	stopsDone int           // stops that returned
	tools     string        // the sessions' tools, if not fakeTools
}

// fakeTools are the tools of every session fakeOps makes.
const fakeTools = `[{"type":"function","function":{"name":"wait"}}]`

func newFake(seats ...string) *fakeOps {
	return &fakeOps{seats: seats, cursor: map[string]int{}}
}

func (f *fakeOps) IsOperator(tok string) bool { return tok == "op" }

func (f *fakeOps) SeatOf(tok string) (string, string, bool) {
	if tok == "seat" {
		return "s1", "bob", true
	}
	return "", "", false
}

func (f *fakeOps) Create(_ context.Context, req wire.CreateRequest) (wire.CreateReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onCreate != nil {
		f.onCreate()
	}
	f.creates = append(f.creates, req)
	if len(f.createErr) > 0 {
		err := f.createErr[0]
		f.createErr = f.createErr[1:]
		if err != nil {
			return wire.CreateReply{}, err
		}
	}
	f.n++
	id := fmt.Sprintf("s%d", f.n)
	r := wire.CreateReply{Session: id, Seats: map[string]wire.Seat{}, Tools: json.RawMessage(fakeTools)}
	if f.tools != "" {
		r.Tools = json.RawMessage(f.tools)
	}
	for _, m := range f.seats {
		r.Seats[m] = wire.Seat{Session: id, Member: m, Token: "tok-" + m}
	}
	return r, nil
}

func (f *fakeOps) Step(ctx context.Context, id string, req httpgw.StepRequest, _ time.Duration) (httpgw.StepReply, error) {
	f.mu.Lock()
	block := f.stepBlock
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done(): // as the gateway's step wait ends
			return httpgw.StepReply{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, req)
	if f.stepErr != nil {
		return httpgw.StepReply{}, f.stepErr
	}
	i := f.cursor[id]
	f.cursor[id] = i + 1
	if i < len(f.script) {
		r := f.script[i]
		r.Session = id
		return r, nil
	}
	score := 0.0
	return httpgw.StepReply{Session: id, Observations: map[string]json.RawMessage{}, Done: true, Status: "finished", Score: &score}, nil
}

func (f *fakeOps) Control(_ context.Context, id string, op wire.ControlOp) (wire.ControlReply, error) {
	f.mu.Lock()
	f.controls = append(f.controls, id+" "+string(op))
	ch, wait := f.stopped, f.stopWaits
	f.mu.Unlock()
	if ch != nil && op == wire.OpStop {
		ch <- id
	}
	if wait != nil && op == wire.OpStop {
		<-wait
	}
	if op == wire.OpStop {
		f.mu.Lock()
		f.stopsDone++
		f.mu.Unlock()
	}
	return wire.ControlReply{Session: id, Status: "interrupted"}, nil
}

func (f *fakeOps) snapshot() (creates []wire.CreateRequest, controls []string, steps []httpgw.StepRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.CreateRequest(nil), f.creates...), append([]string(nil), f.controls...), append([]httpgw.StepRequest(nil), f.steps...)
}

var _ Ops = (*fakeOps)(nil)

func obsOf(members ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for _, x := range members {
		m[x] = json.RawMessage(`{"member":"` + x + `","turn":1}`)
	}
	return m
}

// reply is a decoded reply frame.
type reply struct {
	Type string `json:"type"`
	Data struct {
		Observation *struct {
			Seats     map[string]json.RawMessage `json:"seats"`
			EpisodeID string                     `json:"episode_id"`
			Status    string                     `json:"status"`
			Score     *float64                   `json:"score"`
			Tools     json.RawMessage            `json:"tools"`
		} `json:"observation"`
		Reward    *float64 `json:"reward"`
		Done      bool     `json:"done"`
		Code      string   `json:"code"`
		Message   string   `json:"message"`
		EpisodeID *string  `json:"episode_id"`
		StepCount int      `json:"step_count"`
		Seats     []string `json:"seats"`
		Seed      uint64   `json:"seed"`
		World     string   `json:"world"`
	} `json:"data"`
}

type recorder struct {
	mu                      sync.Mutex
	opened, closed, stepped int
	failed                  map[string]int
}

func (r *recorder) Opened() { r.mu.Lock(); r.opened++; r.mu.Unlock() }
func (r *recorder) Closed() { r.mu.Lock(); r.closed++; r.mu.Unlock() }
func (r *recorder) Stepped() {
	r.mu.Lock()
	r.stepped++
	r.mu.Unlock()
}
func (r *recorder) Failed(code string) {
	r.mu.Lock()
	if r.failed == nil {
		r.failed = map[string]int{}
	}
	r.failed[code]++
	r.mu.Unlock()
}
func (r *recorder) counts() (int, int, int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := map[string]int{}
	for k, v := range r.failed { // order: a copy
		f[k] = v
	}
	return r.opened, r.closed, r.stepped, f
}

func newTestServer(t *testing.T, ops Ops, cfg Config) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: tWriter{t}, Level: hclog.Debug})
	}
	s := New(ops, cfg)
	t.Cleanup(s.Close)
	return s
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// send hands one frame to e and decodes its reply.
func send(t *testing.T, e *episode, frame string) (reply, bool) {
	t.Helper()
	out, quit := e.handle(context.Background(), []byte(frame))
	var r reply
	if out == nil {
		return r, quit
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reply %s is not JSON: %v", out, err)
	}
	return r, quit
}

func wantCode(t *testing.T, r reply, code string) {
	t.Helper()
	if r.Type != "error" || r.Data.Code != code {
		t.Fatalf("got %+v, want an error %s", r, code)
	}
	if r.Data.Message == "" {
		t.Fatalf("error %s has no message", code)
	}
}

func TestMalformedFrames(t *testing.T) {
	for _, tc := range []struct {
		name, frame, code string
	}{
		{"not JSON", `{"type":`, CodeInvalidJSON},
		{"not JSON at all", `hello`, CodeInvalidJSON},
		{"empty", ``, CodeInvalidJSON},
		{"an array", `[1,2]`, CodeValidation},
		{"a string", `"reset"`, CodeValidation},
		{"no type", `{"data":{}}`, CodeUnknownType},
		{"a number type", `{"type":5}`, CodeUnknownType},
		{"an unknown type", `{"type":"jump"}`, CodeUnknownType},
		{"an unknown field", `{"type":"state","extra":1}`, CodeValidation},
		{"reset with an unknown field", `{"type":"reset","data":{"world":"startup","speed":2}}`, CodeValidation},
		{"reset without a world", `{"type":"reset","data":{"seed":3}}`, CodeValidation},
		{"reset with data not an object", `{"type":"reset","data":[1]}`, CodeValidation},
		{"reset with a create field it may not set", `{"type":"reset","data":{"world":"startup","wait":true}}`, CodeValidation},
		{"reset with load 0", `{"type":"reset","data":{"world":"startup","load":0}}`, CodeValidation},
		{"reset with a negative seed", `{"type":"reset","data":{"world":"startup","seed":-1}}`, CodeValidation},
		{"reset with a long episode_id", `{"type":"reset","data":{"world":"startup","episode_id":"` + strings.Repeat("x", 256) + `"}}`, CodeValidation},
		{"step before reset", `{"type":"step","data":{"actions":{}}}`, CodeSession},
		{"step without data", `{"type":"step"}`, CodeValidation},
		{"step with an unknown field", `{"type":"step","data":{"acts":{}}}`, CodeValidation},
		{"step with an unknown action field", `{"type":"step","data":{"actions":{"bob":[{"type":"claim","tsk":"a"}]}}}`, CodeValidation},
		{"step with trailing data", `{"type":"step","data":{"actions":{}}} {}`, CodeInvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("bob")
			rec := &recorder{}
			s := newTestServer(t, f, Config{Recorder: rec})
			e := &episode{srv: s}
			r, quit := send(t, e, tc.frame)
			wantCode(t, r, tc.code)
			if quit {
				t.Fatal("an error ended the connection")
			}
			if _, _, _, failed := rec.counts(); failed[tc.code] != 1 {
				t.Fatalf("recorded failures %v, want one %s", failed, tc.code)
			}
			if creates, _, _ := f.snapshot(); len(creates) != 0 {
				t.Fatalf("a refused frame created %d sessions", len(creates))
			}
			// The connection goes on: a reset works after it.
			r, _ = send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
			if r.Type != "observation" {
				t.Fatalf("reset after %s: %+v", tc.name, r)
			}
		})
	}
}

func TestEpisode(t *testing.T) {
	f := newFake("bob", "carol")
	score := 6.5
	f.script = []httpgw.StepReply{
		{Observations: obsOf("bob", "carol"), Rewards: 2},                                  // the reset: rewards before the first observation
		{Observations: obsOf("bob"), Rewards: 1},                                           // step 1
		{Observations: obsOf("carol"), Rewards: 0.5},                                       // step 2
		{Observations: obsOf(), Rewards: 3, Done: true, Status: "finished", Score: &score}, // step 3
	}
	rec := &recorder{}
	s := newTestServer(t, f, Config{Recorder: rec})
	e := &episode{srv: s}

	r, _ := send(t, e, `{"type":"state"}`)
	if r.Type != "state" || r.Data.EpisodeID != nil || r.Data.StepCount != 0 {
		t.Fatalf("state before reset: %+v", r)
	}
	r, _ = send(t, e, `{"type":"reset","data":{"world":"startup","seed":7,"episode_id":"mine"}}`)
	if r.Type != "observation" || r.Data.Observation.EpisodeID != "s1" || len(r.Data.Observation.Seats) != 2 || r.Data.Done {
		t.Fatalf("reset: %+v", r)
	}
	if r.Data.Reward == nil || *r.Data.Reward != 0 {
		t.Fatalf("reset's reward %v, want 0 (its rewards go with the first step)", r.Data.Reward)
	}
	if string(r.Data.Observation.Tools) != fakeTools {
		t.Fatalf("reset's tools %s, want the create reply's %s", r.Data.Observation.Tools, fakeTools)
	}
	creates, _, _ := f.snapshot()
	if len(creates) != 1 || creates[0].World != "startup" || creates[0].Seed != 7 || creates[0].Agents != "remote" {
		t.Fatalf("create requests %+v, want startup, seed 7, every seat remote", creates)
	}
	total := 0.0
	for i, frame := range []string{
		`{"type":"step","data":{"actions":{"bob":[{"type":"claim","task":"api"}],"carol":[]},"metadata":{}}}`,
		`{"type":"step","data":{"actions":{"bob":[{"type":"work","task":"api","for":"2h"}]}}}`,
		`{"type":"step","data":{}}`,
	} {
		r, _ = send(t, e, frame)
		if r.Type != "observation" || r.Data.Reward == nil || r.Data.Observation.Tools != nil {
			t.Fatalf("step %d: %+v (tools come with reset alone)", i+1, r)
		}
		total += *r.Data.Reward
		if want := i == 2; r.Data.Done != want {
			t.Fatalf("step %d: done %v, want %v", i+1, r.Data.Done, want)
		}
	}
	if total != 6.5 {
		t.Fatalf("the steps' rewards add up to %v, want 6.5 (every reward, the reset's included)", total)
	}
	if r.Data.Observation.Status != "finished" || r.Data.Observation.Score == nil || *r.Data.Observation.Score != 6.5 {
		t.Fatalf("the last observation: %+v, want status finished and score 6.5", r.Data.Observation)
	}
	_, _, steps := f.snapshot()
	if len(steps) != 4 || len(steps[0].Actions) != 0 || len(steps[1].Actions["bob"]) != 1 || steps[1].Actions["bob"][0].Task != "api" || steps[1].Actions["carol"] == nil {
		t.Fatalf("step requests %+v", steps)
	}
	wantCode(t, first(send(t, e, `{"type":"step","data":{"actions":{}}}`)), CodeSession)
	r, _ = send(t, e, `{"type":"state"}`)
	if r.Type != "state" || r.Data.EpisodeID == nil || *r.Data.EpisodeID != "s1" || r.Data.StepCount != 3 || !r.Data.Done ||
		r.Data.World != "startup" || r.Data.Seed != 7 || strings.Join(r.Data.Seats, ",") != "bob,carol" {
		t.Fatalf("state: %+v", r.Data)
	}
	if _, quit := send(t, e, `{"type":"close"}`); !quit {
		t.Fatal("close did not end the connection")
	}
	if _, _, stepped, _ := rec.counts(); stepped != 3 {
		t.Fatalf("recorded %d steps, want 3", stepped)
	}
	if _, controls, _ := f.snapshot(); len(controls) != 0 {
		t.Fatalf("a finished session was sent %v", controls)
	}
}

func first(r reply, _ bool) reply { return r }

func TestDoneAtReset(t *testing.T) {
	f := newFake("bob")
	score := 4.0
	f.script = []httpgw.StepReply{{Observations: obsOf(), Rewards: 4, Done: true, Status: "finished", Score: &score}}
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	r, _ := send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	if !r.Data.Done || r.Data.Reward == nil || *r.Data.Reward != 4 {
		t.Fatalf("a session that ends before its first observation: %+v, want done with its reward 4", r.Data)
	}
}

func TestSecondResetStopsTheFirst(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	send(t, e, `{"type":"reset","data":{"world":"procurement","seed":3,"agents":"greedy,bob=remote","load":2}}`)
	send(t, e, `{"type":"step","data":{"actions":{"bob":[]}}}`)
	// A reset without a world replays the previous request, with its seed.
	r, _ := send(t, e, `{"type":"reset","data":{"seed":4}}`)
	if r.Type != "observation" || r.Data.Observation.EpisodeID != "s2" {
		t.Fatalf("second reset: %+v", r)
	}
	creates, controls, _ := f.snapshot()
	if len(controls) != 1 || controls[0] != "s1 stop" {
		t.Fatalf("controls %v, want the first session stopped", controls)
	}
	want := wire.CreateRequest{World: "procurement", Seed: 4, Agents: "greedy,bob=remote", Load: 2}
	if len(creates) != 2 || creates[1] != want {
		t.Fatalf("second create %+v, want %+v", creates[len(creates)-1], want)
	}
	r, _ = send(t, e, `{"type":"state"}`)
	if *r.Data.EpisodeID != "s2" || r.Data.StepCount != 0 || r.Data.Done {
		t.Fatalf("state after the second reset: %+v", r.Data)
	}
	// A new world replaces the old request whole.
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	creates, controls, _ = f.snapshot()
	if got := creates[2]; got != (wire.CreateRequest{World: "startup", Agents: "remote"}) {
		t.Fatalf("third create %+v", got)
	}
	if len(controls) != 2 || controls[1] != "s2 stop" {
		t.Fatalf("controls %v", controls)
	}
}

// episodeUnderWay returns an episode reset once (session s1, bob remote)
// on a fake whose sessions show bob two observations.
func episodeUnderWay(t *testing.T) (*fakeOps, *episode) {
	t.Helper()
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	return f, e
}

// A reset stops the episode it leaves while it creates the next (the two
// sessions' writes at once, not one after the other), and answers only
// once the stop has returned.
func TestResetStopsWhileItCreates(t *testing.T) {
	f, e := episodeUnderWay(t)
	// The stop of s1 returns only once s2 is being created: a reset that
	// stopped first and created after would never get there.
	release := make(chan struct{})
	var once sync.Once
	f.mu.Lock()
	f.stopWaits = release
	f.onCreate = func() { once.Do(func() { close(release) }) }
	f.mu.Unlock()
	done := make(chan reply, 1)
	go func() {
		r, _ := send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
		done <- r
	}()
	select {
	case r := <-done:
		if r.Type != "observation" || r.Data.Observation.EpisodeID != "s2" {
			t.Fatalf("second reset: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reset waited for the stop before it created the next session")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopsDone != 1 {
		t.Fatalf("the reset answered with %d stops returned, want the one of s1", f.stopsDone)
	}
}

// A reset refused for capacity while it stops the session it leaves waits
// for that stop, which frees a place, and creates again.
func TestResetAtCapacityWaitsForItsStop(t *testing.T) {
	f, e := episodeUnderWay(t)
	release := make(chan struct{})
	var stopsAtCreate []int
	f.mu.Lock()
	f.createErr = []error{&httpgw.Error{Status: http.StatusServiceUnavailable, Msg: "too many sessions (1 running)"}}
	f.stopWaits = release
	f.onCreate = func() { stopsAtCreate = append(stopsAtCreate, f.stopsDone) } // f.mu is held
	f.mu.Unlock()
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(release)
	}()
	r, _ := send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	if r.Type != "observation" || r.Data.Observation.EpisodeID != "s2" {
		t.Fatalf("reset at capacity: %+v", r)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(stopsAtCreate) != 2 || stopsAtCreate[0] != 0 || stopsAtCreate[1] != 1 {
		t.Fatalf("stops returned at each create: %v; want [0 1] (refused while stopping, created once stopped)", stopsAtCreate)
	}
}

func TestErrorCodesOfOperations(t *testing.T) {
	busy := &httpgw.Error{Status: http.StatusServiceUnavailable, Msg: "too many sessions (1000 running)"}
	for _, tc := range []struct {
		name      string
		createErr error
		stepErr   error
		frame     string
		code      string
	}{
		{"capacity", busy, nil, `{"type":"reset","data":{"world":"startup"}}`, CodeCapacityReached},
		{"a bad world", &httpgw.Error{Status: 400, Msg: `no world "nowhere"`}, nil, `{"type":"reset","data":{"world":"nowhere"}}`, CodeValidation},
		{"the server does not answer", &httpgw.Error{Status: 504, Msg: "timeout"}, nil, `{"type":"reset","data":{"world":"startup"}}`, CodeExecution},
		{"another error", fmt.Errorf("boom"), nil, `{"type":"reset","data":{"world":"startup"}}`, CodeExecution},
		{"a step for a seat that is not remote", nil, &httpgw.Error{Status: 400, Msg: "alice is not a remote seat"}, `{"type":"step","data":{"actions":{"alice":[]}}}`, CodeValidation},
		{"a step of a forgotten session", nil, &httpgw.Error{Status: 404, Msg: "unknown"}, `{"type":"step","data":{}}`, CodeSession},
		{"a step the server failed", nil, &httpgw.Error{Status: 502, Msg: "nats"}, `{"type":"step","data":{}}`, CodeExecution},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("bob")
			f.script = []httpgw.StepReply{{Observations: obsOf("bob")}}
			s := newTestServer(t, f, Config{})
			e := &episode{srv: s}
			if tc.stepErr != nil {
				send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
				f.mu.Lock()
				f.stepErr = tc.stepErr
				f.mu.Unlock()
			} else {
				f.createErr = []error{tc.createErr}
			}
			r, quit := send(t, e, tc.frame)
			wantCode(t, r, tc.code)
			if quit {
				t.Fatal("the error ended the connection")
			}
		})
	}
}

func TestCapacityAfterAStopIsRetried(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}}
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	busy := &httpgw.Error{Status: http.StatusServiceUnavailable, Msg: "too many sessions"}
	f.mu.Lock()
	f.createErr = []error{busy, busy}
	f.mu.Unlock()
	// The stopped session's place frees as the server ends it.
	r, _ := send(t, e, `{"type":"reset","data":{}}`)
	if r.Type != "observation" || r.Data.Observation.EpisodeID != "s2" {
		t.Fatalf("reset at capacity after stopping its own session: %+v", r)
	}
	// Without a session to stop, capacity is answered at once.
	e2 := &episode{srv: s}
	f.mu.Lock()
	f.createErr = []error{busy}
	f.mu.Unlock()
	wantCode(t, first(send(t, e2, `{"type":"reset","data":{"world":"startup"}}`)), CodeCapacityReached)
	if creates, _, _ := f.snapshot(); len(creates) != 5 {
		t.Fatalf("%d creates, want 5 (1, then 2 refused and 1 retried, then 1 refused)", len(creates))
	}
}

func TestAppendObservation(t *testing.T) {
	obs := simtest.RandomObservations(t, 5, 20)
	score := 12.25
	for i, tc := range []obsFrame{
		{Type: "observation", Data: obsData{Observation: observation{Seats: map[string]json.RawMessage{}, EpisodeID: "s1"}}},
		{Type: "observation", Data: obsData{Observation: observation{Seats: map[string]json.RawMessage{"bob": obs[0], "alice": obs[1], "zed-9": obs[len(obs)-1]}, EpisodeID: "01M8RSGW47HEVVCJACN4KD1JKQ"}, Reward: 0.1 + 0.2}},
		{Type: "observation", Data: obsData{Observation: observation{Seats: map[string]json.RawMessage{"bob": obs[2]}, EpisodeID: "s1", Status: "finished", Score: &score,
			Warnings: []string{`bob: unknown action type "fly" <&>`, "ünïcode \u2028"}}, Reward: -1e-7, Done: true}},
		{Type: "observation", Data: obsData{Observation: observation{Seats: map[string]json.RawMessage{"bob": obs[3]}, EpisodeID: "s1"}, Reward: 1e21}},
		{Type: "observation", Data: obsData{Observation: observation{Seats: map[string]json.RawMessage{"bob": obs[4]}, EpisodeID: "s1", Tools: json.RawMessage(fakeTools)}}},
	} {
		want, err := json.Marshal(tc)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendObservation(nil, &tc); string(got) != string(want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestDefaultWorld: with Config.DefaultWorld (serve --openenv-world), a
// reset that names no world — reset() of OpenEnv's generic clients, with
// no arguments or a seed alone — plays it; a world named, or the
// connection's previous one, comes first. Without one such a reset is
// refused, naming the flag.
func TestDefaultWorld(t *testing.T) {
	f := newFake("bob")
	s := newTestServer(t, f, Config{DefaultWorld: "meetings"})
	e := &episode{srv: s}
	for _, frame := range []string{`{"type":"reset"}`, `{"type":"reset","data":{"seed":4}}`} {
		if r, _ := send(t, e, frame); r.Type != "observation" {
			t.Fatalf("%s with a default world: %+v", frame, r)
		}
	}
	if r, _ := send(t, e, `{"type":"reset","data":{"world":"startup"}}`); r.Type != "observation" {
		t.Fatalf("a reset naming its world: %+v", r)
	}
	if r, _ := send(t, e, `{"type":"reset","data":{"seed":5}}`); r.Type != "observation" {
		t.Fatalf("a reset after it: %+v", r)
	}
	creates, _, _ := f.snapshot()
	var got []string
	for _, c := range creates {
		got = append(got, fmt.Sprintf("%s/%d", c.World, c.Seed))
	}
	if want := []string{"meetings/0", "meetings/4", "startup/0", "startup/5"}; !slices.Equal(got, want) {
		t.Fatalf("sessions created %v; want %v (the default, then the world named and kept)", got, want)
	}

	bare := &episode{srv: newTestServer(t, newFake("bob"), Config{})}
	r, _ := send(t, bare, `{"type":"reset"}`)
	wantCode(t, r, CodeValidation)
	if !strings.Contains(r.Data.Message, "--openenv-world") {
		t.Fatalf("a reset naming no world, no default: %q; want the flag named", r.Data.Message)
	}
}
