package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
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
