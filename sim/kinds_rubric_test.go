package sim_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// kindsPlay plays testdata/kinds.yaml's one case (a decision, a created
// note, a reply to the requester) with Ana doing each step as given; a
// step whose action is nil is left unfinished.
func kindsPlay(t *testing.T, decide []org.Action, note payload.Attrs, reply string) (*sim.Engine, []payload.ActionRejected) {
	e, rej, _ := kindsPlayLog(t, decide, note, reply)
	return e, rej
}

func kindsPlayLog(t *testing.T, decide []org.Action, note payload.Attrs, reply string) (*sim.Engine, []payload.ActionRejected, []events.Event) {
	t.Helper()
	src, err := os.ReadFile("testdata/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := startedEngine(t, "kinds.yaml", src)
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		st := e.State()
		c := st.Case("a-1")
		if o.Member != "ana" || c == nil || c.Done() {
			return ans
		}
		for _, tid := range c.Steps {
			tk := st.Task(tid)
			switch {
			case tk.Status == org.StatusDone:
				continue
			case !st.DepsDone(tk):
				return ans
			case tk.Assignee == "":
				ans.Actions = []org.Action{{Type: org.ActClaim, Task: tid}, {Type: org.ActWork, Task: tid, For: "1d"}}
				return ans
			case tk.Status == org.StatusInProgress:
				return ans
			}
			var acts []org.Action
			switch tk.Spec.Step {
			case "decide":
				if decide == nil {
					return ans
				}
				for _, a := range decide {
					a.Task = tid
					acts = append(acts, a)
				}
			case "note":
				if note == nil {
					return ans
				}
				acts = []org.Action{{Type: org.ActCreate, Record: "note", ID: "n-" + tid, Fields: payload.NewActionAttrs(note)}}
			case "tell":
				if reply == "" {
					return ans
				}
				acts = []org.Action{{Type: org.ActMessage, To: "cara", Text: reply}}
			}
			ans.Actions = append(acts, org.Action{Type: org.ActComplete, Task: tid}, org.Action{Type: org.ActWait})
			return ans
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	var rej []payload.ActionRejected
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected {
			rej = append(rej, decode[payload.ActionRejected](t, ev))
		}
	}
	return e, rej, evs
}

// Each outcome kind is verified from the state: right earns it, partly
// right (a created record with some fields right) earns the share, wrong
// earns nothing and counts as a wrong outcome, unmet (never completed)
// earns nothing and is not wrong. A wrong close is reopened once.
func TestOutcomeKindsRubric(t *testing.T) {
	approve := []org.Action{{Type: org.ActDecide, Option: "approve"}}
	right := payload.Attrs{"invoice": "inv-1", "amount": int64(300), "plan": "annual"}
	for _, tc := range []struct {
		name     string
		decide   []org.Action
		note     payload.Attrs
		reply    string
		outcome  float64
		wrong    int
		reopened bool // a wrong close is reopened, and this script redoes it wrongly: two wrong outcomes
	}{
		{"right", approve, right, "Case a-1: approved, 300 refunded.", 3, 0, false},
		{"a later decision counts", []org.Action{{Type: org.ActDecide, Option: "deny"}, {Type: org.ActDecide, Option: "approve"}}, right, "a-1: 300", 3, 0, false},
		{"partly right record", approve, payload.Attrs{"invoice": "inv-1", "amount": int64(30), "plan": "annual"}, "Case a-1: 300.", 2.666667, 2, true},
		{"wrong decision", []org.Action{{Type: org.ActDecide, Option: "deny"}}, right, "Case a-1: 300.", 2, 2, true},
		{"no decision", []org.Action{}, right, "Case a-1: 300.", 2, 2, true},
		{"reply without the value", approve, right, "Case a-1 is done.", 2, 2, true},
		{"reply with the value inside another number", approve, right, "Case a-1: 3000.", 2, 2, true},
		{"reply naming no case", approve, right, "Done: 300.", 2, 2, true},
		{"unmet: the decision never completed", nil, nil, "", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := kindsPlay(t, tc.decide, tc.note, tc.reply)
			st := e.State()
			sc := policies.Score(st)
			if sc.Outcome != tc.outcome || sc.WrongOutcomes != tc.wrong || sc.OutcomeMax != 3 || sc.Collateral != 0 {
				t.Errorf("outcome %v of %v, wrong %d, collateral %d; want %v of 3, %d, 0", sc.Outcome, sc.OutcomeMax, sc.WrongOutcomes, sc.Collateral, tc.outcome, tc.wrong)
			}
			c := st.Case("a-1")
			if (c.Reopens == 1) != tc.reopened {
				t.Errorf("reopens %d, want reopened %v", c.Reopens, tc.reopened)
			}
			// Closed in time (every play here closes it before its SLA), a
			// case reopened past its SLA breaches it; one never closed too.
			if c.Breached != (c.DoneAt == 0 || tc.reopened && c.Due < c.DoneAt) {
				t.Errorf("breached %v; reopened %v, due %d, done %d", c.Breached, tc.reopened, c.Due, c.DoneAt)
			}
		})
	}
}

// decide is checked: the step must be one the member holds, with a
// decision, and the option one of its options.
func TestDecideIsChecked(t *testing.T) {
	_, rej := kindsPlay(t, []org.Action{{Type: org.ActDecide, Option: "maybe"}, {Type: org.ActDecide}, {Type: org.ActDecide, Option: "approve"}},
		payload.Attrs{"invoice": "inv-1"}, "a-1: 300")
	var kinds []string
	for _, r := range rej {
		if r.Action.Type == org.ActDecide {
			kinds = append(kinds, r.Kind)
		}
	}
	if len(kinds) != 2 || kinds[0] != org.KindMalformed || kinds[1] != org.KindMalformed {
		t.Errorf("decide refusals %v, want two malformed (an unknown option, none)", kinds)
	}
	src, _ := os.ReadFile("testdata/kinds.yaml")
	w, _ := worlds.Load("kinds.yaml", src)
	e, _ := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	e.Start()
	drive(t, e, func(o org.Observation) sim.Answer {
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
	}, false, 0)
	st := e.State()
	tk := st.Task("a-1.decide")
	if rej := st.CheckDecideStep(st.Member("ana"), tk, "approve"); rej == nil {
		t.Errorf("ana may decide a step she does not hold")
	}
	if rej := st.CheckDecideStep(st.Member("ana"), st.Task("a-1.note"), "approve"); rej == nil {
		t.Errorf("ana may decide a step without a decision")
	}
}

// A log whose decision or reopening does not hold is refused on replay:
// an option the step does not have, a reopening by someone who did not
// ask for the case, or of steps whose outcome was met.
func TestKindEventsAreChecked(t *testing.T) {
	_, _, evs := kindsPlayLog(t, []org.Action{{Type: org.ActDecide, Option: "deny"}}, payload.Attrs{"invoice": "inv-1"}, "a-1: 300")
	for _, tc := range []struct {
		name, typ string
		edit      func(ev *events.Event)
		want      string
	}{
		{"an unknown option", payload.EvCaseDecided, func(ev *events.Event) {
			ev.Payload = bytes.Replace(ev.Payload, []byte(`"deny"`), []byte(`"maybe"`), 1)
		}, "not an option"},
		{"a decision by someone else", payload.EvCaseDecided, func(ev *events.Event) { ev.Actor = "cara" }, "not yours to decide"},
		{"a reopening by a member", payload.EvCaseReopened, func(ev *events.Event) { ev.Actor = "ana" }, "did not ask for case"},
		{"an expected decision on a step that makes none", payload.EvCaseOpened, func(ev *events.Event) {
			ev.Payload = bytes.Replace(ev.Payload, []byte(`"step":"decide","record":""`), []byte(`"step":"tell","record":""`), 1)
		}, "expects an outcome"},
		{"an expected create of another type", payload.EvCaseOpened, func(ev *events.Event) {
			ev.Payload = bytes.Replace(ev.Payload, []byte(`"record":"note"`), []byte(`"record":"invoice"`), 1)
		}, "expects an outcome"},
		{"a reopening of met steps", payload.EvCaseReopened, func(ev *events.Event) {
			ev.Payload = bytes.Replace(ev.Payload, []byte(`"steps":[`), []byte(`"steps":["tell",`), 1)
		}, "reopens steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(evs)
			found := false
			for i := range bad {
				if bad[i].Type == tc.typ {
					bad[i].Payload = slices.Clone(bad[i].Payload)
					tc.edit(&bad[i])
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("no %s in the log", tc.typ)
			}
			_, err := sim.Rebuild(seqOf(bad), "s", sim.Config{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("rebuilt: %v; want an error with %q", err, tc.want)
			}
		})
	}
}
