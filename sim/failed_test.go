package sim_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
)

// playFailing plays the startup world where the members fails says fail
// every turn (with reason why) and the others play greedy; it returns the
// events and the engine, and checks that the log replays exactly.
func playFailing(tb testing.TB, fails func(member string) bool, why string) ([]events.Event, *sim.Engine) {
	tb.Helper()
	e := mustEngine(tb, 1)
	e.Start()
	var evs []events.Event
	decide := func(t sim.Turn) (sim.Answer, bool) {
		if fails(t.Member) {
			return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Failed: why}, true
		}
		return simtest.Greedy(t)
	}
	if err := sim.Play(e, func(b []events.Event) bool { evs = append(evs, slices.Clone(b)...); return true }, decide, 0); err != nil {
		tb.Fatal(err)
	}
	r, err := sim.Rebuild(seqOf(evs), "s", sim.Config{})
	if err != nil {
		tb.Fatalf("the log does not replay: %v", err)
	}
	if r.StateHash() != e.StateHash() || r.EndStateHash() != e.EndStateHash() {
		tb.Fatalf("replayed state hash %s, live %s", r.StateHash(), e.StateHash())
	}
	return evs, e
}

func countType(evs []events.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// Every seat's backend fails: each failed decision is a turn.failed with
// its reason, and the session ends "agents_failed" once every seat failed
// its turn, instead of running to its horizon as a score of 0.
func TestEveryAgentFailsEndsTheSession(t *testing.T) {
	why := "llm: POST http://127.0.0.1:9/chat/completions: connection refused"
	evs, e := playFailing(t, func(string) bool { return true }, why)
	st := e.State()
	agentSeats := 0
	for _, m := range st.Members {
		if !m.NPC {
			agentSeats++
		}
	}
	if got := countType(evs, payload.EvTurnFailed); got != agentSeats {
		t.Errorf("%d turn.failed events, want one per agent seat (%d)", got, agentSeats)
	}
	if got := countType(evs, payload.EvTurn) + countType(evs, payload.EvTurnTimeout); got != 0 {
		t.Errorf("%d turns or timeouts recorded; want none", got)
	}
	if st.EndReason != sim.EndAgentsFailed {
		t.Fatalf("ended %q, want %q", st.EndReason, sim.EndAgentsFailed)
	}
	for _, ev := range evs {
		if ev.Type != payload.EvTurnFailed {
			continue
		}
		var p payload.TurnFailed
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Reason != why || p.Turn != 1 || ev.Actor == "" {
			t.Errorf("turn.failed %s by %q; want turn 1 with the reason", ev.Payload, ev.Actor)
		}
		if !strings.Contains(string(ev.Payload), `"reason":`) || !strings.Contains(string(ev.Payload), `"seen":`) {
			t.Errorf("turn.failed payload %s lacks its keys", ev.Payload)
		}
	}
	sc := policies.Score(st)
	if sc.TurnErrors != agentSeats || sc.Turns != 0 {
		t.Errorf("scorecard: turn_errors %d, turns %d; want %d and 0", sc.TurnErrors, sc.Turns, agentSeats)
	}
}

// One seat's backend fails, the others work: its failures are recorded and
// counted, and the session runs to its end as usual.
func TestOneFailingSeatIsCountedAndTheSessionGoesOn(t *testing.T) {
	const failing = "erin" // startup's work does not wait on her
	evs, e := playFailing(t, func(m string) bool { return m == failing }, "endpoint answered 500")
	st := e.State()
	n := countType(evs, payload.EvTurnFailed)
	if n < 1 {
		t.Fatalf("%d turn.failed events; want the failing seat's every turn", n)
	}
	if st.EndReason == sim.EndAgentsFailed || st.EndReason == "" {
		t.Fatalf("ended %q; want the session's usual end", st.EndReason)
	}
	if sc := policies.Score(st); sc.TurnErrors != n || sc.TeamScore <= 0 {
		t.Fatalf("scorecard: turn_errors %d, team score %.2f; want %d and the others' work", sc.TurnErrors, sc.TeamScore, n)
	}
	for _, ev := range evs {
		if ev.Type == payload.EvTurnFailed && ev.Actor != failing {
			t.Fatalf("turn.failed of %s; only %s fails", ev.Actor, failing)
		}
	}
}

// A reason is recorded as valid UTF-8 of at most sim.MaxFailReason bytes.
func TestFailReasonIsBounded(t *testing.T) {
	evs, _ := playFailing(t, func(string) bool { return true }, strings.Repeat("é", 2000)+"\xff")
	for _, ev := range evs {
		if ev.Type != payload.EvTurnFailed {
			continue
		}
		var p payload.TurnFailed
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Reason) > sim.MaxFailReason || !strings.HasPrefix(p.Reason, "éé") || !strings.HasSuffix(p.Reason, "…") {
			t.Fatalf("reason of %d bytes: %.20q…; want at most %d, cut with …", len(p.Reason), p.Reason, sim.MaxFailReason)
		}
	}
}
