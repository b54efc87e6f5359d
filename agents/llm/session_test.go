package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/app"
)

// lastObservation reads the observation out of the last user message.
func lastObservation(tb testing.TB, req chatRequest) org.Observation {
	tb.Helper()
	m := req.Messages[len(req.Messages)-1]
	s := m.text()
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	var o org.Observation
	if m.Role != "user" || i < 0 || j < i {
		tb.Errorf("last message is not an observation: %s %.80q", m.Role, s)
		return o
	}
	if err := json.Unmarshal([]byte(s[i:j+1]), &o); err != nil {
		tb.Errorf("observation does not decode: %v", err)
	}
	return o
}

// sensible plays like a careful colleague would: decide requests, finish
// what it holds (asking for approval when needed), else take the first
// available task and start on it.
func sensible(tb testing.TB) func(chatRequest) (int, []call) {
	return func(req chatRequest) (int, []call) {
		o := lastObservation(tb, req)
		var calls []call
		add := func(name string, args map[string]any) {
			b, _ := json.Marshal(args)
			calls = append(calls, call{id: fmt.Sprintf("call_%d_%d", o.Turn, len(calls)), name: name, arguments: string(b)})
		}
		if o.Turn == 1 {
			// A tool that does not exist: the engine must refuse and record it, and play on.
			calls = append(calls, call{id: "call_bad", name: "take_a_nap", arguments: `{"minutes":30}`})
		}
		for _, r := range o.Approvals {
			add("approve", map[string]any{"request": r.ID})
		}
		for _, t := range o.Assigned {
			if t.Status != org.StatusClaimed {
				continue
			}
			switch {
			case t.Spent < t.Effort && len(t.Waiting) == 0:
				add("work", map[string]any{"task": t.ID})
				return http.StatusOK, calls
			case t.Spent >= t.Effort && (t.Approval == "needed" || t.Approval == org.RequestRejected):
				add("request_approval", map[string]any{"task": t.ID})
			case t.Spent >= t.Effort && (t.Approval == "" || t.Approval == org.RequestApproved):
				add("complete", map[string]any{"task": t.ID})
			}
		}
		if len(o.Available) > 0 {
			add("claim", map[string]any{"task": o.Available[0].ID})
			add("work", map[string]any{"task": o.Available[0].ID})
			return http.StatusOK, calls
		}
		add("wait", map[string]any{})
		return http.StatusOK, calls
	}
}

func TestSessionWithAnLLMSeat(t *testing.T) {
	f, srv := mustServe(t, sensible(t))
	bob := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "fake", APIKey: "k", MaxHistory: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := memlog.New()
	res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Log: log,
		TurnTimeout: 20 * time.Second, Seats: map[string]agents.Agent{"bob": bob}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	refused := 0
	for ev, err := range log.Read(ctx, res.Session, 1) {
		if err != nil {
			t.Fatalf("read the log: %v", err)
		}
		if ev.Type != payload.EvActionRejected || ev.Actor != "bob" {
			continue
		}
		var p payload.ActionRejected
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Action.Type == llm.InvalidAction {
			refused++
			if p.Kind != "malformed" || !strings.Contains(p.Action.Text, `unknown tool "take_a_nap"`) {
				t.Errorf("the malformed call was recorded as %+v, want kind malformed with the reason", p)
			}
		}
	}
	if refused != 1 {
		t.Errorf("the log records %d refused malformed calls of bob, want 1", refused)
	}
	if res.Agents["bob"] != "custom" {
		t.Errorf("bob was played by %q, want the custom seat", res.Agents["bob"])
	}
	if n := len(f.requests()); n < 5 {
		t.Errorf("the endpoint was asked %d times, want bob asked every turn", n)
	}
	var delivered float64
	for _, m := range res.Score.Members {
		if m.Member == "bob" {
			delivered = m.Delivered
		}
	}
	if delivered <= 0 {
		t.Errorf("bob delivered %g, want his work counted (score %+v)", delivered, res.Score)
	}
	if res.Score.Violations != 0 {
		t.Errorf("got %d violations, want none from a sensible player", res.Score.Violations)
	}
	if res.Ended != "complete" {
		t.Errorf("session ended %q, want complete", res.Ended)
	}
	t.Logf("team score %.2f, bob delivered %.2f over %d requests", res.Score.TeamScore, delivered, len(f.requests()))
}

// closedEndpoint is the base URL of a local port nobody listens on.
func closedEndpoint(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// An llm agent whose endpoint cannot be reached, or answers 500, fails
// every turn: each is a turn.failed with the endpoint's error, the
// scorecard counts them, and the session is failed ("agents_failed"), not
// finished with a score of 0 — in process and over the bus alike.
func TestFailingEndpointFailsTheSession(t *testing.T) {
	_, srv := mustServe(t, func(chatRequest) (int, []call) { return http.StatusInternalServerError, nil })
	for _, ep := range []struct {
		name, url, reason string
	}{
		{"unreachable", closedEndpoint(t), "connection refused"},
		{"500", srv.URL + "/v1", "500 Internal Server Error: scripted failure 500"},
	} {
		for _, overBus := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/over bus %v", ep.name, overBus), func(t *testing.T) {
				agent := mustAgent(t, llm.Options{BaseURL: ep.url, Model: "m"})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				log := memlog.New()
				res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 1, Agents: "llm", LLM: agent, Log: log,
					TurnTimeout: 20 * time.Second, SeatsOverBus: overBus})
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				seats := len(res.Agents)
				if res.Ended != sim.EndAgentsFailed || res.Meta.Status != events.StatusFailed {
					t.Fatalf("ended %q with status %s; want %q, failed", res.Ended, res.Meta.Status, sim.EndAgentsFailed)
				}
				if err := res.Err(); !errors.Is(err, app.ErrAgentsFailed) || !strings.Contains(err.Error(), ep.reason) {
					t.Fatalf("Err: %v; want ErrAgentsFailed naming %q", err, ep.reason)
				}
				if res.Score.TurnErrors != seats || res.Score.Timeouts != 0 || res.Score.Turns != 0 {
					t.Fatalf("scorecard: %d turn errors, %d timeouts, %d turns; want %d, 0, 0", res.Score.TurnErrors, res.Score.Timeouts, res.Score.Turns, seats)
				}
				meta, err := log.Session(ctx, res.Session)
				if err != nil || meta.Status != events.StatusFailed {
					t.Fatalf("stored status %s (%v), want failed", meta.Status, err)
				}
				failed := 0
				for ev, err := range log.Read(ctx, res.Session, 1) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Type != payload.EvTurnFailed {
						continue
					}
					failed++
					var p payload.TurnFailed
					if err := json.Unmarshal(ev.Payload, &p); err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(p.Reason, ep.reason) {
						t.Errorf("turn.failed of %s: reason %q; want it to name %q", ev.Actor, p.Reason, ep.reason)
					}
				}
				if failed != seats {
					t.Errorf("%d turn.failed events, want %d (one per seat)", failed, seats)
				}
			})
		}
	}
}

// eval reports the seeds whose agents failed every turn as errors, not as
// scores of 0.
func TestEvalOfAFailingEndpointIsAnError(t *testing.T) {
	_, srv := mustServe(t, func(chatRequest) (int, []call) { return http.StatusInternalServerError, nil })
	agent := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := app.Eval(ctx, app.EvalOptions{World: "startup", Agents: "llm", Seeds: 2}, app.RunOptions{LLM: agent, TurnTimeout: 20 * time.Second})
	if !errors.Is(err, app.ErrNoResult) {
		t.Fatalf("eval: %v; want ErrNoResult", err)
	}
	if res == nil || len(res.Failed) != 2 || len(res.Scores) != 0 || !strings.Contains(res.Failed[0].Error, "scripted failure 500") {
		t.Fatalf("eval result %+v; want both seeds failed with the endpoint's error, and no scores", res)
	}
}

// A seat played by the llm agent is offered its world's tools
// (agents.ToolDefsFor), as `corpsim tools --world` lists them: no record
// tools in startup, which has no systems, and in billing-support the record
// tools naming its record types. The agent alone (Decide) offers every
// action.
func TestASeatIsOfferedItsWorldsTools(t *testing.T) {
	for _, world := range []string{"startup", "billing-support"} {
		t.Run(world, func(t *testing.T) {
			w, _, err := app.LoadWorld(world)
			if err != nil {
				t.Fatal(err)
			}
			var seat string
			for _, m := range w.Members {
				if m.NPC == nil {
					seat = m.ID
					break
				}
			}
			// Its first turn calls get, a tool of worlds with systems only.
			f, srv := mustServe(t, script([]call{{"g", "get", `{"record":"account","id":"a1"}`}}))
			agent := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			log := memlog.New()
			res, err := app.Run(ctx, app.RunOptions{World: world, Seed: 1, Agents: "greedy," + seat + "=llm", LLM: agent,
				Log: log, TurnTimeout: 20 * time.Second, MaxEvents: 2000})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			// Offered, get reaches the engine; not offered, it is an
			// unknown tool, and the reason lists the tools offered.
			var invalid []string
			for ev, err := range log.Read(ctx, res.Session, 1) {
				if err != nil {
					t.Fatal(err)
				}
				var p payload.ActionRejected
				if ev.Type == payload.EvActionRejected && ev.Actor == seat && json.Unmarshal(ev.Payload, &p) == nil && p.Action.Type == llm.InvalidAction {
					invalid = append(invalid, p.Action.Text)
				}
			}
			unknown := fmt.Sprintf(`unknown tool "get" (tools: %s)`, strings.Join(agents.ToolNames(agents.ToolDefsFor(w)), ", "))
			if offered := len(w.Systems) > 0; offered && len(invalid) != 0 || !offered && (len(invalid) != 1 || invalid[0] != unknown) {
				t.Errorf("the call of get was refused as invalid %q; want %q only where it is not offered", invalid, unknown)
			}
			reqs := f.requests()
			if len(reqs) == 0 {
				t.Fatalf("%s was never asked (ended %s, %d events)", seat, res.Ended, res.Meta.LastSeq)
			}
			want := agents.ToolDefsFor(w)
			for i, r := range reqs {
				if len(r.Tools) != len(want) {
					t.Fatalf("request %d offers %d tools, want the world's %d", i, len(r.Tools), len(want))
				}
				for j, tool := range r.Tools {
					got, _ := json.Marshal(tool["function"])
					exp, _ := json.Marshal(want[j].Function)
					var a, b any
					_ = json.Unmarshal(got, &a)
					_ = json.Unmarshal(exp, &b)
					if fmt.Sprint(a) != fmt.Sprint(b) {
						t.Fatalf("request %d: tool %d is\n%s\nwant\n%s", i, j, got, exp)
					}
				}
			}
			hasCreate := strings.Contains(fmt.Sprint(reqs[0].Tools), `name:create`)
			if hasCreate != (len(w.Systems) > 0) {
				t.Errorf("the record tool create offered: %v; the world has %d systems", hasCreate, len(w.Systems))
			}
			t.Logf("%s: %d requests, %d tools each", seat, len(reqs), len(want))
		})
	}
}
