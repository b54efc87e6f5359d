package httpgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/worlds"
)

// stack is a corpsim server (embedded NATS with per-seat auth, the session
// service on an in-memory log) with the gateway in front of it.
type stack struct {
	base     string // the gateway's URL
	natsURL  string
	operator string
	log      events.Log
	svc      *server.Service
	gw       *httpgw.Gateway
}

// testLogger logs to tb at Warn and above; for a fuzz test, nowhere (an
// F's Log may not be called while its fuzz target runs, and the service
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

func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func startStack(tb testing.TB, cfg httpgw.Config) *stack {
	tb.Helper()
	return startStackWith(tb, cfg, nil)
}

// startStackWith is startStack with the session service's configuration
// changed by tweak (nil: none).
func startStackWith(tb testing.TB, cfg httpgw.Config, tweak func(*server.Config)) *stack {
	tb.Helper()
	op := natsserver.NewToken()
	auth := natsserver.NewAuth(op)
	bus, err := natsserver.Start(natsserver.Options{Listen: freeAddr(tb), Auth: auth})
	if err != nil {
		tb.Fatal(err)
	}
	l := memlog.New()
	scfg := server.Config{Log: l, Bus: bus, Auth: auth, Logger: testLogger(tb), CheckpointEvery: -1, TurnTimeout: 20 * time.Second}
	if tweak != nil {
		tweak(&scfg)
	}
	svc, err := server.New(scfg)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.NATSURL, cfg.OperatorToken, cfg.Logger = bus.ClientURL(), op, testLogger(tb)
	if cfg.TurnWait == 0 {
		cfg.TurnWait = 20 * time.Second
	}
	gw, err := httpgw.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	tb.Cleanup(func() {
		gw.Close()
		srv.Close()
		svc.Close()
		bus.Shutdown()
	})
	return &stack{base: srv.URL, natsURL: bus.ClientURL(), operator: op, log: l, svc: svc, gw: gw}
}

// call makes an HTTP request; body is sent as is when it is []byte, else as JSON.
func (s *stack) call(tb testing.TB, method, path, token string, body any) (int, []byte) {
	tb.Helper()
	code, b, err := s.try(context.Background(), method, path, token, body)
	if err != nil {
		tb.Fatal(err)
	}
	return code, b
}

func (s *stack) try(ctx context.Context, method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func mustJSON[T any](tb testing.TB, code, want int, b []byte) T {
	tb.Helper()
	if code != want {
		tb.Fatalf("got HTTP %d, want %d: %s", code, want, b)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("response %s: %v", b, err)
	}
	return v
}

func (s *stack) create(tb testing.TB, req wire.CreateRequest) wire.CreateReply {
	tb.Helper()
	code, b := s.call(tb, "POST", "/v1/sessions", s.operator, req)
	return mustJSON[wire.CreateReply](tb, code, http.StatusCreated, b)
}

func seatPath(session, member, what string) string {
	return "/v1/sessions/" + session + "/seats/" + member + "/" + what
}

// observe long-polls a seat once: an observation, done, or (nil, false) on 204.
func (s *stack) observe(ctx context.Context, seat wire.Seat, wait string) (*org.Observation, bool, error) {
	code, b, err := s.try(ctx, "GET", seatPath(seat.Session, seat.Member, "observation")+"?wait="+wait, seat.Token, nil)
	if err != nil {
		return nil, false, err
	}
	switch code {
	case http.StatusNoContent:
		return nil, false, nil
	case http.StatusOK:
	default:
		return nil, false, fmt.Errorf("observe %s: HTTP %d: %s", seat.Member, code, b)
	}
	var probe struct {
		Done bool `json:"done"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, false, err
	}
	if probe.Done {
		return nil, true, nil
	}
	var obs org.Observation
	if err := json.Unmarshal(b, &obs); err != nil {
		return nil, false, err
	}
	return &obs, false, nil
}

// nextTurn long-polls until a turn is waiting for seat (or the session ends: nil).
func (s *stack) nextTurn(tb testing.TB, seat wire.Seat) *org.Observation {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		obs, done, err := s.observe(context.Background(), seat, "5s")
		if err != nil {
			tb.Fatal(err)
		}
		if done || obs != nil {
			return obs
		}
	}
	tb.Fatalf("no turn for %s within 30s", seat.Member)
	return nil
}

func (s *stack) act(tb testing.TB, seat wire.Seat, body any) (int, httpgw.ActReply) {
	tb.Helper()
	code, b := s.call(tb, "POST", seatPath(seat.Session, seat.Member, "act"), seat.Token, body)
	var r httpgw.ActReply
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("act: HTTP %d: %s", code, b)
	}
	return code, r
}

// play answers seat's turns over HTTP with agent until the session ends.
func (s *stack) play(ctx context.Context, seat wire.Seat, agent agents.Agent) error {
	for {
		obs, done, err := s.observe(ctx, seat, "5s")
		if err != nil || done {
			return err
		}
		if obs == nil {
			continue
		}
		acts, err := agent.Decide(ctx, *obs)
		if err != nil {
			return err
		}
		code, b, err := s.try(ctx, "POST", seatPath(seat.Session, seat.Member, "act"), seat.Token, org.Reply{Turn: obs.Turn, Actions: acts})
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("act %s turn %d: HTTP %d: %s", seat.Member, obs.Turn, code, b)
		}
	}
}

// playAll plays every seat of reply with greedy over HTTP, concurrently.
func (s *stack) playAll(tb testing.TB, reply wire.CreateReply) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	errs := make(chan error, len(reply.Seats))
	for _, seat := range reply.Seats {
		go func() { errs <- s.play(ctx, seat, &agents.Greedy{}) }()
	}
	for range reply.Seats {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
}

func (s *stack) wait(tb testing.TB, session string) events.SessionMeta {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	meta, err := s.svc.Wait(ctx, session)
	if err != nil {
		tb.Fatalf("session %s: %v", session, err)
	}
	if meta.Status != events.StatusFinished {
		tb.Fatalf("session %s ended %s, want finished", session, meta.Status)
	}
	return meta
}

// reference runs the same world and seed with built-in greedy agents only.
func (s *stack) reference(tb testing.TB, req wire.CreateRequest) (events.SessionMeta, float64) {
	tb.Helper()
	req.Agents, req.Wait = "greedy", false
	reply, err := s.svc.Create(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	meta := s.wait(tb, reply.Session)
	return meta, s.svc.Status(reply.Session).Score
}

func (s *stack) countEvents(tb testing.TB, session, typ, actor string) int {
	tb.Helper()
	n := 0
	for ev, err := range s.log.Read(context.Background(), session, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Type == typ && (actor == "" || ev.Actor == actor) {
			n++
		}
	}
	return n
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6 }

// TestObserveActPlaysASession: two remote seats played over HTTP (long-poll
// observe, act) by greedy reproduce the in-process greedy run exactly.
func TestObserveActPlaysASession(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	req := wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote,carol=remote"}
	reply := s.create(t, req)
	if len(reply.Seats) != 2 || reply.Seats["bob"].Token == "" {
		t.Fatalf("got seats %v, want bob and carol with tokens", reply.Seats)
	}
	startup, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reply.Tools, agents.ToolsJSONFor(startup)) {
		t.Fatalf("POST /v1/sessions answered tools %.80s, want startup's (corpsim tools --world startup)", reply.Tools)
	}
	s.playAll(t, reply)
	meta := s.wait(t, reply.Session)
	ref, refScore := s.reference(t, req)
	if meta.StateHash != ref.StateHash {
		t.Fatalf("HTTP-played session ends in %s, in-process greedy in %s", meta.StateHash, ref.StateHash)
	}
	if n := s.countEvents(t, reply.Session, payload.EvTurnTimeout, ""); n != 0 {
		t.Fatalf("%d turns timed out", n)
	}

	// After the end: the seats learn it, and the gateway still answers for the session from its record.
	for _, seat := range reply.Seats {
		obs, done, err := s.observe(context.Background(), seat, "1s")
		if err != nil || !done || obs != nil {
			t.Fatalf("observe after the end: got %v, %v, %v; want done", obs, done, err)
		}
	}
	code, b := s.call(t, "GET", "/v1/sessions/"+reply.Session+"/score", s.operator, nil)
	sc := mustJSON[httpgw.ScoreReply](t, code, http.StatusOK, b)
	if sc.Status != "finished" || !near(sc.Score, refScore) || !sc.Complete || sc.Events != meta.LastSeq {
		t.Fatalf("score after the end: got %+v, want finished, %.6f, complete, %d events", sc, refScore, meta.LastSeq)
	}
	all := s.allEvents(t, reply.Session)
	if uint64(len(all)) != meta.LastSeq {
		t.Fatalf("events endpoint gives %d events, the log has %d", len(all), meta.LastSeq)
	}
	for i, ev := range all {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, ev.Seq)
		}
	}
}

// allEvents pages through the events endpoint.
func (s *stack) allEvents(tb testing.TB, session string) []events.Event {
	tb.Helper()
	var out []events.Event
	from := uint64(1)
	for {
		code, b := s.call(tb, "GET", fmt.Sprintf("/v1/sessions/%s/events?from=%d&limit=100", session, from), s.operator, nil)
		page := mustJSON[httpgw.EventsReply](tb, code, http.StatusOK, b)
		out = append(out, page.Events...)
		if page.Next == 0 {
			return out
		}
		from = page.Next
	}
}

// stepper drives a session through the step endpoint with greedy.
func (s *stack) stepAll(tb testing.TB, session string, agent agents.Agent) (ret float64, last httpgw.StepReply, steps int) {
	tb.Helper()
	body := httpgw.StepRequest{}
	for steps = 1; steps < 10000; steps++ {
		code, b := s.call(tb, "POST", "/v1/sessions/"+session+"/step?wait=30s", s.operator, body)
		r := mustJSON[httpgw.StepReply](tb, code, http.StatusOK, b)
		ret += r.Rewards
		sum := 0.0
		for _, ev := range r.RewardEvents {
			var p payload.Reward
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				tb.Fatal(err)
			}
			sum += p.Team
		}
		if !near(sum, r.Rewards) {
			tb.Fatalf("step %d: rewards %.6f, its reward events add up to %.6f", steps, r.Rewards, sum)
		}
		if len(r.Warnings) > 0 {
			tb.Fatalf("step %d: warnings %v", steps, r.Warnings)
		}
		if r.Done {
			return ret, r, steps
		}
		body = httpgw.StepRequest{Actions: map[string][]org.Action{}}
		for m, raw := range r.Observations {
			var obs org.Observation
			if err := json.Unmarshal(raw, &obs); err != nil {
				tb.Fatal(err)
			}
			acts, _ := agent.Decide(context.Background(), obs)
			body.Actions[m] = acts
		}
	}
	tb.Fatalf("session %s did not end within %d steps", session, steps)
	return
}

// TestStepRewardsSumToTheScore: the step API drives every seat; its rewards
// add up to the final team score; a reset replays the same episode.
func TestStepRewardsSumToTheScore(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	req := wire.CreateRequest{World: "startup", Seed: 7, Agents: "remote"}
	reply := s.create(t, req)
	if len(reply.Seats) != 5 {
		t.Fatalf("got %d remote seats, want 5", len(reply.Seats))
	}
	ret, last, steps := s.stepAll(t, reply.Session, &agents.Greedy{})
	meta := s.wait(t, reply.Session)
	score := s.svc.Status(reply.Session).Score
	if !near(ret, score) {
		t.Fatalf("rewards of %d steps add up to %.6f; the final team score is %.6f", steps, ret, score)
	}
	if last.Score == nil || !near(*last.Score, score) || last.Status != "finished" {
		t.Fatalf("last step: score %v status %q, want %.6f finished", last.Score, last.Status, score)
	}
	ref, _ := s.reference(t, req)
	if meta.StateHash != ref.StateHash {
		t.Fatalf("stepped session ends in %s, in-process greedy in %s", meta.StateHash, ref.StateHash)
	}
	if score <= 0 {
		t.Fatalf("score %.2f: greedy should deliver something", score)
	}
	t.Logf("%d steps, return %.2f = score %.2f", steps, ret, score)

	// A reset (fork at event 1) is a fresh episode: same agents, new seat tokens, same return.
	code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/reset", s.operator, nil)
	reset := mustJSON[wire.CreateReply](t, code, http.StatusCreated, b)
	if len(reset.Seats) != 5 || reset.Seats["bob"].Token == reply.Seats["bob"].Token {
		t.Fatalf("reset seats %v: want 5 new ones", reset.Seats)
	}
	ret2, last2, _ := s.stepAll(t, reset.Session, &agents.Greedy{})
	meta2 := s.wait(t, reset.Session)
	if !near(ret2, ret) || meta2.StateHash != meta.StateHash || meta2.Parent != reply.Session || meta2.ForkSeq != 1 {
		t.Fatalf("reset: return %.6f hash %s parent %s@%d; want %.6f %s %s@1", ret2, meta2.StateHash, meta2.Parent, meta2.ForkSeq, ret, meta.StateHash, reply.Session)
	}
	if last2.Score == nil || !near(*last2.Score, ret) {
		t.Fatalf("reset's final score %v, want %.6f", last2.Score, ret)
	}

	// A fork in the middle: the steps' rewards are what was earned after the fork point.
	s.forkAndStep(t, reply.Session, meta.LastSeq/2)
}

// TestForkInsideATurnIsRefused: a fork between a member's turn and the
// events its actions made would keep the turn without them (the member
// busy, its actions "accepted" in an export, none applied); it is refused
// with 400, naming the points on either side.
func TestForkInsideATurnIsRefused(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy"})
	meta := s.wait(t, reply.Session)
	var turn events.Event
	for ev, err := range s.log.Read(context.Background(), reply.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if turn.Seq != 0 && ev.Cause == turn.Seq {
			break
		}
		turn = events.Event{}
		if ev.Type == payload.EvTurn {
			turn = ev
		}
	}
	if turn.Seq == 0 || turn.Seq >= meta.LastSeq {
		t.Fatal("no turn followed by what its actions did")
	}
	code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/fork", s.operator, map[string]any{"at": turn.Seq})
	e := mustJSON[struct{ Error string }](t, code, http.StatusBadRequest, b)
	if want := fmt.Sprintf("event %d is %s's turn", turn.Seq, turn.Actor); !strings.Contains(e.Error, want) || !strings.Contains(e.Error, fmt.Sprintf("fork at %d to ask %s again", turn.Seq-1, turn.Actor)) {
		t.Fatalf("fork inside a turn: %s; want it saying %q and where to fork instead", e.Error, want)
	}
}

// forkAndStep forks session at event at, steps the fork to its end with
// greedy, and checks that its steps' rewards are what was earned after the
// fork point and its last step's score the fork's final score.
func (s *stack) forkAndStep(tb testing.TB, session string, at uint64) {
	tb.Helper()
	// Not between a turn and what its actions did, which is refused
	// (TestForkInsideATurnIsRefused): the nearest point before.
	for at > 1 && driver.CheckForkPoint(context.Background(), s.log, session, at) != nil {
		at--
	}
	code, b := s.call(tb, "POST", "/v1/sessions/"+session+"/fork", s.operator, map[string]any{"at": at})
	fork := mustJSON[wire.CreateReply](tb, code, http.StatusCreated, b)
	ret, last, _ := s.stepAll(tb, fork.Session, &agents.Greedy{})
	s.wait(tb, fork.Session)
	final := s.svc.Status(fork.Session).Score
	atFork := 0.0
	for ev, err := range s.log.Read(context.Background(), session, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Seq > at {
			break
		}
		if ev.Type == payload.EvReward {
			var p payload.Reward
			_ = json.Unmarshal(ev.Payload, &p)
			atFork += p.Team
		}
	}
	if last.Score == nil || !near(*last.Score, final) || !near(ret, final-atFork) {
		tb.Fatalf("fork at %d: score %v, return %.6f; want %.6f and %.6f (%.6f earned before the fork)", at, last.Score, ret, final, final-atFork, atFork)
	}
}

// TestManySessionsAtOnce: sessions stepped and sessions played seat by seat,
// all at the same time, each reproducing its in-process run.
func TestManySessionsAtOnce(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	type run struct {
		session string
		seed    uint64
	}
	var mu sync.Mutex
	var runs []run
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 12 {
		seed := uint64(i + 1)
		stepped := i%2 == 0
		agentsSpec := "remote"
		if !stepped {
			agentsSpec = "greedy,alice=remote,bob=remote,dave=remote"
		}
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: seed, Agents: agentsSpec})
		mu.Lock()
		runs = append(runs, run{reply.Session, seed})
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if stepped {
				errs <- s.stepNoFatal(reply.Session)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var swg sync.WaitGroup
			for _, seat := range reply.Seats {
				swg.Add(1)
				go func() {
					defer swg.Done()
					if err := s.play(ctx, seat, &agents.Greedy{}); err != nil {
						errs <- err
					}
				}()
			}
			swg.Wait()
			errs <- nil
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		meta := s.wait(t, r.session)
		ref, _ := s.reference(t, wire.CreateRequest{World: "startup", Seed: r.seed})
		if meta.StateHash != ref.StateHash {
			t.Fatalf("seed %d: session ends in %s, in-process greedy in %s", r.seed, meta.StateHash, ref.StateHash)
		}
	}
}

// stepNoFatal steps a session to its end with greedy, for use off the test goroutine.
func (s *stack) stepNoFatal(session string) error {
	ctx := context.Background()
	body := httpgw.StepRequest{}
	for range 10000 {
		code, b, err := s.try(ctx, "POST", "/v1/sessions/"+session+"/step?wait=30s", s.operator, body)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("step %s: HTTP %d: %s", session, code, b)
		}
		var r httpgw.StepReply
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.Done {
			return nil
		}
		body.Actions = map[string][]org.Action{}
		for m, raw := range r.Observations {
			var obs org.Observation
			if err := json.Unmarshal(raw, &obs); err != nil {
				return err
			}
			body.Actions[m], _ = (&agents.Greedy{}).Decide(ctx, obs)
		}
	}
	return fmt.Errorf("session %s did not end", session)
}

// TestTokensReachOnlyTheirSeat tries, with real HTTP requests, everything a
// token must not allow; nothing reaches the engine, and the session then
// plays out exactly as the in-process run.
func TestTokensReachOnlyTheirSeat(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	req := wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote,carol=remote"}
	a := s.create(t, req)
	other := s.create(t, wire.CreateRequest{World: "startup", Seed: 8, Agents: "remote", Wait: true})
	bob, carol := a.Seats["bob"], a.Seats["carol"]
	obs := s.nextTurn(t, bob)
	if obs == nil {
		t.Fatal("the session ended before bob's first turn")
	}
	good := org.Reply{Turn: obs.Turn, Actions: []org.Action{{Type: org.ActClaim, Task: "api"}}}
	id := a.Session
	bobObs, bobAct := seatPath(id, "bob", "observation")+"?wait=0", seatPath(id, "bob", "act")
	cases := []struct {
		name, method, path, token string
		body                      any
		want                      int
	}{
		{"observe without a token", "GET", bobObs, "", nil, 401},
		{"observe with a wrong token", "GET", bobObs, "not-a-token", nil, 401},
		{"observe with another seat's token", "GET", bobObs, carol.Token, nil, 403},
		{"observe with another session's seat token", "GET", bobObs, other.Seats["bob"].Token, nil, 403},
		{"observe with the operator token", "GET", bobObs, s.operator, nil, 403},
		{"act without a token", "POST", bobAct, "", good, 401},
		{"act with a wrong token", "POST", bobAct, "not-a-token", good, 401},
		{"act with another seat's token", "POST", bobAct, carol.Token, good, 403},
		{"act with another session's seat token", "POST", bobAct, other.Seats["bob"].Token, good, 403},
		{"act with the operator token", "POST", bobAct, s.operator, good, 403},
		{"act with a lower-case scheme and a wrong token", "POST", bobAct, "Bob " + bob.Token, good, 401},
		{"create with a seat token", "POST", "/v1/sessions", bob.Token, wire.CreateRequest{World: "startup", Agents: "greedy"}, 403},
		{"create without a token", "POST", "/v1/sessions", "", wire.CreateRequest{World: "startup", Agents: "greedy"}, 401},
		{"list with a seat token", "GET", "/v1/sessions", bob.Token, nil, 403},
		{"list without a token", "GET", "/v1/sessions", "", nil, 401},
		{"control with a seat token", "POST", "/v1/sessions/" + id + "/control", bob.Token, wire.ControlRequest{Op: wire.OpStop}, 403},
		{"control with a wrong token", "POST", "/v1/sessions/" + id + "/control", "x", wire.ControlRequest{Op: wire.OpStop}, 401},
		{"step with a seat token", "POST", "/v1/sessions/" + id + "/step?wait=0", bob.Token, httpgw.StepRequest{Actions: map[string][]org.Action{"bob": good.Actions}}, 403},
		{"step without a token", "POST", "/v1/sessions/" + id + "/step?wait=0", "", nil, 401},
		{"fork with a seat token", "POST", "/v1/sessions/" + id + "/fork", bob.Token, map[string]any{"at": 2}, 403},
		{"reset with a seat token", "POST", "/v1/sessions/" + id + "/reset", bob.Token, nil, 403},
		{"events with a seat token", "GET", "/v1/sessions/" + id + "/events", bob.Token, nil, 403},
		{"score with a seat token", "GET", "/v1/sessions/" + id + "/score", carol.Token, nil, 403},
		{"stale reply (an earlier turn)", "POST", bobAct, bob.Token, org.Reply{Turn: obs.Turn - 1, Actions: good.Actions}, 409},
		{"reply to a later turn", "POST", bobAct, bob.Token, org.Reply{Turn: obs.Turn + 1, Actions: good.Actions}, 409},
		{"reply without the turn", "POST", bobAct, bob.Token, map[string]any{"actions": good.Actions}, 409},
	}
	before, _ := s.log.LastSeq(context.Background(), id)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := c.token
			code, b, err := s.tryRaw(c.method, c.path, tok, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if code != c.want {
				t.Fatalf("got HTTP %d, want %d: %s", code, c.want, b)
			}
			if !bytes.Contains(b, []byte(`"error"`)) {
				t.Fatalf("response %s has no error", b)
			}
		})
	}
	// Nothing reached the engine: bob's turn still waits, the log did not move.
	again := s.nextTurn(t, bob)
	if again == nil || again.Turn != obs.Turn {
		t.Fatalf("after the attempts bob's waiting turn is %v, want %d", again, obs.Turn)
	}
	if after, _ := s.log.LastSeq(context.Background(), id); after != before {
		t.Fatalf("the log moved from %d to %d during the attempts", before, after)
	}
	// Answer the turn as greedy would, then replay the same answer: 409, unchanged.
	acts, _ := (&agents.Greedy{}).Decide(context.Background(), *obs)
	answer := org.Reply{Turn: obs.Turn, Actions: acts}
	if code, r := s.act(t, bob, answer); code != http.StatusOK || !r.Forwarded {
		t.Fatalf("act: HTTP %d %+v", code, r)
	}
	if code, r := s.act(t, bob, answer); code != http.StatusConflict || r.Forwarded {
		t.Fatalf("replayed act: got HTTP %d %+v, want 409, not forwarded", code, r)
	}
	s.playAll(t, a)
	meta := s.wait(t, id)
	ref, _ := s.reference(t, req)
	if meta.StateHash != ref.StateHash {
		t.Fatalf("the attempts changed the world: state %s, want %s", meta.StateHash, ref.StateHash)
	}
	if n, want := s.countEvents(t, id, payload.EvActionRejected, ""), s.countEvents(t, ref.ID, payload.EvActionRejected, ""); n != want {
		t.Fatalf("%d rejections recorded, the in-process run has %d", n, want)
	}
}

// tryRaw is try with the Authorization header given whole when token has a space.
func (s *stack) tryRaw(method, path, token string, body any) (int, []byte, error) {
	if !strings.Contains(token, " ") {
		return s.try(context.Background(), method, path, token, body)
	}
	j, _ := json.Marshal(body)
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(j))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestBadRepliesAreRecorded: malformed, oversized, too long and unknown
// replies get clear HTTP errors, are recorded as rejections in the log and
// in the seat's next observation, and the session goes on to its end.
func TestBadRepliesAreRecorded(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy,bob=remote"})
	bob := reply.Seats["bob"]
	type bad struct {
		name     string
		body     func(turn uint64) []byte
		code     int
		rejected string // in the next observation's rejected reason
	}
	waits := make([]org.Action, org.MaxActions+1)
	for i := range waits {
		waits[i] = org.Action{Type: org.ActWait}
	}
	cases := []bad{
		{"malformed JSON", func(n uint64) []byte { return []byte(fmt.Sprintf(`{"turn": %d, "actions": [`, n)) }, 400, "malformed reply"},
		{"unknown field", func(n uint64) []byte { return []byte(fmt.Sprintf(`{"turn": %d, "actions": [], "bonus": 100}`, n)) }, 400, "unknown field"},
		{"oversized", func(n uint64) []byte {
			return []byte(fmt.Sprintf(`{"turn": %d, "actions": [{"type": "message", "to": "alice", "text": "%s"}]}`, n, strings.Repeat("x", org.MaxReplyBytes)))
		}, 413, "the limit is"},
		{"too many actions", func(n uint64) []byte {
			b, _ := json.Marshal(org.Reply{Turn: n, Actions: waits})
			return b
		}, 400, "actions; the limit is"},
		{"unknown action type", func(n uint64) []byte {
			return []byte(fmt.Sprintf(`{"turn": %d, "actions": [{"type": "teleport"}]}`, n))
		}, 200, "unknown action type"},
	}
	obs := s.nextTurn(t, bob)
	for _, c := range cases {
		if obs == nil {
			t.Fatalf("%s: the session ended early", c.name)
		}
		code, b := s.call(t, "POST", seatPath(reply.Session, "bob", "act"), bob.Token, c.body(obs.Turn))
		var r httpgw.ActReply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %s", c.name, b)
		}
		if code != c.code || !r.Forwarded || r.Turn != obs.Turn {
			t.Fatalf("%s: got HTTP %d %+v, want %d, forwarded, turn %d", c.name, code, r, c.code, obs.Turn)
		}
		if c.code != 200 && r.Error == "" || c.code == 200 && len(r.Warnings) != 1 {
			t.Fatalf("%s: no clear error or warning in %+v", c.name, r)
		}
		next := s.nextTurn(t, bob)
		if next == nil {
			t.Fatalf("%s: the session ended instead of going on", c.name)
		}
		found := false
		for _, rej := range next.Rejected {
			found = found || strings.Contains(rej.Reason, c.rejected) && rej.Kind == "malformed"
		}
		if !found {
			t.Fatalf("%s: next observation's rejected is %+v, want a malformed one saying %q", c.name, next.Rejected, c.rejected)
		}
		obs = next
	}
	// Unchanged by a reply that did not go through: none is waiting now, only a 409.
	if code, r := s.act(t, bob, org.Reply{Turn: obs.Turn - 1}); code != http.StatusConflict || r.Forwarded {
		t.Fatalf("stale act: got HTTP %d %+v", code, r)
	}
	// A malformed reply that says it answers an earlier turn (a retry of
	// one a cut connection lost) is refused as stale, not forwarded: it
	// would use up the turn waiting now.
	for _, body := range []string{`{"turn": %d, "actions": [`, `{"turn":%d,"actions":[{"type":"wait"}`} {
		b := []byte(fmt.Sprintf(body, obs.Turn-1))
		code, out := s.call(t, "POST", seatPath(reply.Session, "bob", "act"), bob.Token, b)
		var r httpgw.ActReply
		if err := json.Unmarshal(out, &r); err != nil || code != http.StatusConflict || r.Forwarded || r.Turn != obs.Turn {
			t.Fatalf("a malformed retry of turn %d with turn %d waiting: HTTP %d %s; want 409, not forwarded", obs.Turn-1, obs.Turn, code, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	acts, _ := (&agents.Greedy{}).Decide(ctx, *obs)
	if code, r := s.act(t, bob, org.Reply{Turn: obs.Turn, Actions: acts}); code != 200 {
		t.Fatalf("act: HTTP %d %+v", code, r)
	}
	if err := s.play(ctx, bob, &agents.Greedy{}); err != nil {
		t.Fatal(err)
	}
	s.wait(t, reply.Session)
	n := 0
	for _, ev := range s.allEvents(t, reply.Session) {
		if ev.Type == payload.EvActionRejected && ev.Actor == "bob" && bytes.Contains(ev.Payload, []byte(`"malformed"`)) {
			n++
		}
	}
	if n < len(cases) {
		t.Fatalf("%d malformed rejections of bob in the log, want at least %d", n, len(cases))
	}
}

// TestControlOverHTTP: a session created to wait is started, paused,
// reported and stopped over HTTP; its seat then learns it is done.
func TestControlOverHTTP(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote", Wait: true})
	bob := reply.Seats["bob"]
	if obs, done, err := s.observe(context.Background(), bob, "200ms"); err != nil || done || obs != nil {
		t.Fatalf("before start: got %v %v %v, want nothing (204)", obs, done, err)
	}
	ctl := func(op string, want int) wire.ControlReply {
		t.Helper()
		code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/control", s.operator, map[string]string{"op": op})
		if want != http.StatusOK {
			if code != want {
				t.Fatalf("control %s: got HTTP %d, want %d: %s", op, code, want, b)
			}
			return wire.ControlReply{}
		}
		return mustJSON[wire.ControlReply](t, code, want, b)
	}
	ctl("explode", http.StatusBadRequest)
	ctl("start", http.StatusOK)
	if obs := s.nextTurn(t, bob); obs == nil {
		t.Fatal("no turn after start")
	}
	if st := ctl("pause", http.StatusOK); st.Status != "paused" {
		t.Fatalf("after pause: status %q", st.Status)
	}
	if st := ctl("status", http.StatusOK); st.Status != "paused" || st.Events == 0 {
		t.Fatalf("status: %+v", st)
	}
	ctl("stop", http.StatusOK)
	obs, done, err := s.observe(context.Background(), bob, "5s")
	if err != nil || !done || obs != nil {
		t.Fatalf("after stop: got %v %v %v, want done", obs, done, err)
	}
	if code, r := s.act(t, bob, org.Reply{Turn: 1}); code != http.StatusConflict || !strings.Contains(r.Error, "ended") {
		t.Fatalf("act after stop: HTTP %d %+v, want 409 saying the session ended", code, r)
	}
	code, b := s.call(t, "GET", "/v1/sessions/"+reply.Session+"/score", s.operator, nil)
	if sc := mustJSON[httpgw.ScoreReply](t, code, 200, b); sc.Status != "interrupted" {
		t.Fatalf("score after stop: %+v", sc)
	}
	if st := ctl("status", http.StatusOK); st.Status != "interrupted" {
		t.Fatalf("status after stop: %+v", st)
	}
	// Unknown sessions.
	code, b = s.call(t, "GET", "/v1/sessions/01NOSUCHSESSION0000000000/score", s.operator, nil)
	if code != http.StatusNotFound {
		t.Fatalf("score of an unknown session: HTTP %d %s", code, b)
	}
	code, b = s.call(t, "POST", "/v1/sessions/01NOSUCHSESSION0000000000/step", s.operator, nil)
	if code != http.StatusNotFound {
		t.Fatalf("step of an unknown session: HTTP %d %s", code, b)
	}
	code, b = s.call(t, "POST", "/v1/sessions", s.operator, wire.CreateRequest{World: "nowhere", Agents: "greedy"})
	if code != http.StatusBadRequest || !bytes.Contains(b, []byte("nowhere")) {
		t.Fatalf("create of an unknown world: HTTP %d %s", code, b)
	}
}

// TestTokensExpire: once an ended session is forgotten (Config.Retain), its seat tokens are unknown.
func TestTokensExpire(t *testing.T) {
	s := startStack(t, httpgw.Config{Retain: time.Millisecond})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
	s.playAll(t, reply)
	s.wait(t, reply.Session)
	bob := reply.Seats["bob"]
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, b, err := s.try(context.Background(), "GET", seatPath(reply.Session, "bob", "observation")+"?wait=0", bob.Token, nil)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusUnauthorized {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's token still works after the session ended and was forgotten: HTTP %d %s", code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEndedRecordsAreBounded: past Config.RetainBytes, the records of the
// sessions that ended first are forgotten (their tokens with them) before
// their Retain is up; the newest ended session's is kept.
func TestEndedRecordsAreBounded(t *testing.T) {
	s := startStack(t, httpgw.Config{RetainBytes: 1})
	var replies []wire.CreateReply
	for seed := range uint64(3) {
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: seed + 1, Agents: "greedy,bob=remote"})
		s.playAll(t, reply)
		s.wait(t, reply.Session)
		replies = append(replies, reply)
	}
	known := func(r wire.CreateReply) int {
		var code int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var err error
			if code, _, err = s.try(context.Background(), "GET", seatPath(r.Session, "bob", "observation")+"?wait=0", r.Seats["bob"].Token, nil); err != nil {
				t.Fatal(err)
			}
			if code != http.StatusOK || r.Session == replies[len(replies)-1].Session {
				break // forgotten, or the newest (kept: no wait for a change)
			}
		}
		return code
	}
	for i, r := range replies[:2] {
		if code := known(r); code != http.StatusUnauthorized {
			t.Errorf("session %d of 3, ended, over a bound of 1 byte: its seat's token answers HTTP %d; want 401 (forgotten)", i+1, code)
		}
	}
	if code := known(replies[2]); code != http.StatusOK {
		t.Errorf("the newest ended session: its seat's token answers HTTP %d; want 200 (its record kept)", code)
	}
	if n := httpgw.EndedHeld(s.gw); n != 1 {
		t.Errorf("the gateway holds %d ended sessions' records; want 1, the newest", n)
	}
}

// TestSweptRecordsAreLetGo: the records the sweep forgets (Config.Retain)
// are let go at once, not when the next session ends.
func TestSweptRecordsAreLetGo(t *testing.T) {
	s := startStack(t, httpgw.Config{Retain: time.Millisecond})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
	s.playAll(t, reply)
	s.wait(t, reply.Session)
	for deadline := time.Now().Add(10 * time.Second); httpgw.EndedHeld(s.gw) != 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway still holds %d ended sessions' records after their Retain", httpgw.EndedHeld(s.gw))
		}
		s.call(t, "GET", "/v1/sessions/"+reply.Session+"/score", s.operator, nil) // a request sweeps
	}
}

// TestCloseEndsEverything: Close returns long polls and steps at once and
// leaves none of the gateway's goroutines or connections behind.
func TestCloseEndsEverything(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	natsGoroutines := func() int {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		n := 0
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.Contains(g, []byte("nats-io/nats.go")) || bytes.Contains(g, []byte("agents/httpgw.")) {
				n++
			}
		}
		return n
	}
	// The stack's own gateway makes its first request (its NATS connection starts a reply subscription) before counting.
	s.call(t, "GET", "/v1/sessions/01NOSUCHSESSION0000000000/score", s.operator, nil)
	base := natsGoroutines()
	gw, err := httpgw.New(httpgw.Config{NATSURL: s.natsURL, OperatorToken: s.operator, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	// polls tells when each long poll has reached the gateway.
	polls := make(chan struct{}, 2)
	h := gw.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") == "60s" {
			polls <- struct{}{}
		}
		h.ServeHTTP(w, r)
	}))
	s2 := &stack{base: srv.URL, operator: s.operator}
	reply := s2.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "remote", Wait: true})
	results := make(chan int, 2)
	go func() {
		code, _, _ := s2.try(context.Background(), "GET", seatPath(reply.Session, "bob", "observation")+"?wait=60s", reply.Seats["bob"].Token, nil)
		results <- code
	}()
	go func() {
		code, _, _ := s2.try(context.Background(), "POST", "/v1/sessions/"+reply.Session+"/step?wait=60s", s.operator, nil)
		results <- code
	}()
	<-polls
	<-polls
	start := time.Now()
	gw.Close()
	for range 2 {
		select {
		case <-results:
		case <-time.After(5 * time.Second):
			t.Fatal("a long poll outlived Close")
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %s", d)
	}
	if code, _, _ := s2.try(context.Background(), "GET", "/v1/health", "", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("after Close: HTTP %d, want 503", code)
	}
	srv.Close()
	// The session itself runs on in the server (its subscriptions count as NATS goroutines): stop it.
	code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/control", s.operator, wire.ControlRequest{Op: wire.OpStop})
	if code != http.StatusOK {
		t.Fatalf("stop: HTTP %d %s", code, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for natsGoroutines() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d NATS or gateway goroutines left after Close, %d before New", natsGoroutines(), base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStoppedElsewhere: a session stopped by another operator over NATS ends
// the seats' long polls and the step (the gateway notices nobody answers
// its control subject any more).
func TestStoppedElsewhere(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote,carol=remote"})
	if s.nextTurn(t, reply.Seats["bob"]) == nil {
		t.Fatal("no turn for bob")
	}
	code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/step?wait=0", s.operator, nil)
	if r := mustJSON[httpgw.StepReply](t, code, http.StatusOK, b); r.Done || len(r.Observations) == 0 {
		t.Fatalf("first step: %+v", r)
	}
	op, err := client.Dial(s.natsURL, s.operator)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if _, err := op.Control(context.Background(), reply.Session, wire.OpStop); err != nil && !strings.Contains(err.Error(), "canceled") {
		t.Fatal(err)
	}
	start := time.Now()
	code, b = s.call(t, "POST", "/v1/sessions/"+reply.Session+"/step?wait=20s", s.operator, nil)
	r := mustJSON[httpgw.StepReply](t, code, http.StatusOK, b)
	if !r.Done || r.Status != "stopped" || r.Score == nil {
		t.Fatalf("step after a stop elsewhere: %+v, want done, stopped, with a score", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the step took %s to notice", d)
	}
	if obs, done, err := s.observe(context.Background(), reply.Seats["carol"], "20s"); err != nil || !done || obs != nil {
		t.Fatalf("observe after a stop elsewhere: %v %v %v", obs, done, err)
	}
}

// TestFastSessionEndsFinished: a session of NPCs publishes its feed faster
// than the gateway's handler records it; once it has ended on the server,
// a status asked meanwhile waits for the handler to catch up and answers
// finished with the whole score, not stopped with what had been recorded.
func TestFastSessionEndsFinished(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "support-desk-bench", Seed: 3, Agents: "greedy", Load: 0.2})
	deadline := time.Now().Add(3 * time.Minute)
	var st wire.ControlReply
	for {
		if time.Now().After(deadline) {
			t.Fatalf("still %+v after 3 minutes", st)
		}
		code, b := s.call(t, "POST", "/v1/sessions/"+reply.Session+"/control", s.operator, wire.ControlRequest{Op: wire.OpStatus})
		if code == http.StatusGatewayTimeout {
			// The server, busy publishing the feed, did not answer in
			// time (a loaded machine, -race): ask again.
			time.Sleep(20 * time.Millisecond)
			continue
		}
		st = mustJSON[wire.ControlReply](t, code, http.StatusOK, b)
		if st.Status != string(events.StatusRunning) && st.Status != "created" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m, err := s.log.Session(context.Background(), reply.Session)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %+v; the log: %s, %d events", st, m.Status, m.LastSeq)
	if st.Status != "finished" || st.Events != m.LastSeq || st.Score != 40000 {
		t.Fatalf("status %+v; want finished with the log's %d events and the score of 40,000 tickets resolved", st, m.LastSeq)
	}
}

// What a client sent wrong is said in JSON's terms, not Go's, and a
// control operation that cannot happen is refused: one on a session that
// no server runs is 404 (it was "nats: no responders available for
// request"), a start or a pause of an ended session 409 (it was 200).
func TestErrorsSayWhatWasWrong(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{[]byte(`[]`), "the body is a JSON array; expected an object"},
		{[]byte(`{"world": 5, "agents": "greedy"}`), `field "world" is a JSON number; expected a string`},
		{[]byte(`{"world": "startup", "seed": -1, "agents": "greedy"}`), `field "seed" is a JSON number -1; expected a whole number in range`},
		{[]byte(`{"world": "startup",`), "the JSON ends early"},
		{[]byte(`{"world" "startup"}`), "not JSON at byte 10"},
		{[]byte(`{"wrld": "startup"}`), `unknown field "wrld"`},
	} {
		code, b := s.call(t, "POST", "/v1/sessions", s.operator, tc.body)
		e := mustJSON[struct{ Error string }](t, code, http.StatusBadRequest, b)
		if !strings.Contains(e.Error, tc.want) || strings.Contains(e.Error, "Go value") {
			t.Errorf("create %s: %s; want it saying %q", tc.body, e.Error, tc.want)
		}
	}
	code, b := s.call(t, "POST", "/v1/sessions/01M00000000000000000000NON/control", s.operator, wire.ControlRequest{Op: wire.OpStatus})
	if e := mustJSON[struct{ Error string }](t, code, http.StatusNotFound, b); !strings.Contains(e.Error, "no running session 01M00000000000000000000NON answers status") {
		t.Errorf("control of no session: %s", e.Error)
	}
	r := s.create(t, wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy"})
	for {
		code, b := s.call(t, "POST", "/v1/sessions/"+r.Session+"/control", s.operator, wire.ControlRequest{Op: wire.OpStatus})
		if st := mustJSON[wire.ControlReply](t, code, http.StatusOK, b); st.Status == string(events.StatusFinished) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, op := range []wire.ControlOp{wire.OpStart, wire.OpPause} {
		code, b := s.call(t, "POST", "/v1/sessions/"+r.Session+"/control", s.operator, wire.ControlRequest{Op: op})
		if e := mustJSON[struct{ Error string }](t, code, http.StatusConflict, b); !strings.Contains(e.Error, "has ended (finished)") {
			t.Errorf("%s of a finished session: %s", op, e.Error)
		}
	}
	code, b = s.call(t, "POST", "/v1/sessions/"+r.Session+"/control", s.operator, wire.ControlRequest{Op: wire.OpStop})
	if st := mustJSON[wire.ControlReply](t, code, http.StatusOK, b); st.Status != string(events.StatusFinished) {
		t.Errorf("stop of a finished session: %+v; want its status, as done already", st)
	}
}

// GET /v1/sessions lists the server's sessions (what the operator's
// errors point to), all of them or those of one status; a status that is
// none is refused with the ones there are.
func TestListSessions(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	a := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy"})
	b := s.create(t, wire.CreateRequest{World: "startup", Seed: 2, Agents: "greedy,bob=remote", Wait: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.svc.Wait(ctx, a.Session); err != nil {
		t.Fatal(err)
	}
	code, body := s.call(t, "GET", "/v1/sessions", s.operator, nil)
	all := mustJSON[httpgw.ListReply](t, code, http.StatusOK, body)
	status := map[string]events.Status{}
	for _, m := range all.Sessions {
		status[m.ID] = m.Status
	}
	if status[a.Session] != events.StatusFinished || status[b.Session] != events.StatusRunning {
		t.Fatalf("GET /v1/sessions: %s; want %s finished and %s running", body, a.Session, b.Session)
	}
	code, body = s.call(t, "GET", "/v1/sessions?status=finished", s.operator, nil)
	fin := mustJSON[httpgw.ListReply](t, code, http.StatusOK, body)
	if len(fin.Sessions) != 1 || fin.Sessions[0].ID != a.Session {
		t.Fatalf("GET /v1/sessions?status=finished: %s; want %s alone", body, a.Session)
	}
	if code, body := s.call(t, "POST", "/v1/sessions/"+b.Session+"/control", s.operator, map[string]string{"op": "pause"}); code != http.StatusOK {
		t.Fatalf("pause: HTTP %d %s", code, body)
	}
	code, body = s.call(t, "GET", "/v1/sessions?status=paused", s.operator, nil)
	paused := mustJSON[httpgw.ListReply](t, code, http.StatusOK, body)
	if len(paused.Sessions) != 1 || paused.Sessions[0].ID != b.Session || paused.Sessions[0].Status != wire.StatusPaused {
		t.Fatalf("GET /v1/sessions?status=paused: %s; want %s alone, paused", body, b.Session)
	}
	code, body = s.call(t, "GET", "/v1/sessions?status=done", s.operator, nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "want running, paused, finished") {
		t.Fatalf("GET /v1/sessions?status=done: HTTP %d %s; want 400 naming the statuses", code, body)
	}
}

// An error quoting what the request sent does not send a large request
// back whole: its message is cut, saying by how much.
func TestErrorMessagesAreClipped(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	huge := strings.Repeat("é", 1<<20) // 2 MiB, two bytes a character
	code, b := s.call(t, "POST", "/v1/sessions", s.operator, wire.CreateRequest{World: huge, Agents: "greedy"})
	if code != http.StatusBadRequest || len(b) > 8<<10 || !strings.Contains(string(b), "bytes of message cut") {
		t.Fatalf("a create naming a 2 MiB world: HTTP %d, %d bytes; want 400 and a message cut short", code, len(b))
	}
	if !json.Valid(b) {
		t.Fatalf("the cut message is not valid JSON: %.200s", b)
	}
}

// TestForkOfNoSessionIs404: a fork or reset of a session no log has is
// 404, with or without its agents named (both were 400, the second
// telling the client to name the agents).
func TestForkOfNoSessionIs404(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	missing := "01M98H0000000000000000000Z"
	for _, body := range []map[string]any{{"at": 1}, {"at": 1, "agents": "greedy"}} {
		code, b := s.call(t, "POST", "/v1/sessions/"+missing+"/fork", s.operator, body)
		if code != http.StatusNotFound || !strings.Contains(string(b), "no session") && !strings.Contains(string(b), "no such session") {
			t.Errorf("fork %v of no session: %d %s; want 404 saying there is none", body, code, b)
		}
	}
	code, b := s.call(t, "POST", "/v1/sessions/"+missing+"/reset", s.operator, map[string]any{})
	if code != http.StatusNotFound || !strings.Contains(string(b), "no session") && !strings.Contains(string(b), "no such session") {
		t.Errorf("reset of no session: %d %s; want 404 saying there is none", code, b)
	}
}
