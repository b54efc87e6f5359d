package sim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// refundScript plays billing-support's first case (requests-1) with Ana
// alone: she asks Max for the case's refund reason (and asks him once
// without naming a case), then does both steps. Closed wrongly the first
// time (no writes, a reply without the amount), the case is reopened by
// its requester; with fix she then does it right.
func refundScript(t *testing.T, fix bool) (*sim.Engine, []events.Event, []org.CaseView) {
	t.Helper()
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := worlds.Source("billing-support")
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	const id = "requests-1"
	asked := false
	var views []org.CaseView
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		wait := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		for _, cv := range o.Cases {
			if o.Member == "ana" && cv.ID == id {
				views = append(views, cv)
			}
		}
		st := e.State()
		c := st.Case(id)
		if o.Member != "ana" || c == nil || c.Done() {
			return wait
		}
		for _, tid := range c.Steps {
			tk := st.Task(tid)
			switch {
			case tk.Status == org.StatusDone:
				continue
			case !st.DepsDone(tk):
				return wait
			case tk.Assignee == "":
				wait.Actions = []org.Action{{Type: org.ActClaim, Task: tid}, {Type: org.ActWork, Task: tid, For: "1d"}}
				return wait
			case tk.Status == org.StatusInProgress || tk.Spent < tk.Effort:
				return wait
			}
			good := fix && c.Reopens == 1
			var x org.CaseOutcome
			for _, o := range c.Outcomes {
				if o.Step == tk.Spec.Step {
					x = o
				}
			}
			switch tk.Spec.Step {
			case "refund":
				if !asked {
					asked = true
					wait.Actions = []org.Action{
						{Type: org.ActMessage, To: "max", Text: "What is the reason for case " + id + "?"},
						{Type: org.ActMessage, To: "max", Text: "What is the reason, please?"},
						{Type: org.ActWait}}
					return wait
				}
				if !st.Member("ana").KnowsTopic(org.FactTopic(id, "reason")) {
					return wait
				}
				wait.Actions = nil
				if good {
					wait.Actions = append(wait.Actions, org.Action{Type: org.ActUpdate, Record: "invoice", ID: x.ID, Fields: payload.NewActionAttrs(x.Fields)})
				}
			case "note":
				wait.Actions = nil
				if good {
					wait.Actions = []org.Action{{Type: org.ActUpdate, Record: "invoice", ID: x.ID, Fields: payload.NewActionAttrs(x.Fields)}}
				}
			case "confirm":
				text := "Case " + id + " is refunded."
				if good {
					text = fmt.Sprintf("Case %s: we refunded %v.", id, x.Fields["carries"])
				}
				wait.Actions = []org.Action{{Type: org.ActMessage, To: "cara", Text: text}}
			}
			wait.Actions = append(wait.Actions, org.Action{Type: org.ActComplete, Task: tid}, org.Action{Type: org.ActWait})
			return wait
		}
		return wait
	}, false, 0)
	mustReplayLive(t, e, evs)
	return e, evs, views
}

// An NPC tells a fact it holds only when asked, and only for the case the
// message names: Max's reply carries requests-1's reason (its topic
// teaches Ana that fact and no other), and a question naming no case gets
// no fact.
func TestFactToldOnlyForTheCaseAsked(t *testing.T) {
	e, evs, views := refundScript(t, true)
	st := e.State()
	c := st.Case("requests-1")
	reason, _ := c.Facts["reason"].(string)
	// What Ana sees of the case: who to ask, the document while she holds
	// a step, and the reason only once Max told it.
	var before, after, doc bool
	for _, cv := range views {
		if cv.Ask["reason"] != "max" || cv.Requester != "cara" {
			t.Fatalf("case view asks %v, requester %q", cv.Ask, cv.Requester)
		}
		if _, ok := cv.Attributes["reason"]; ok {
			t.Fatalf("the reason is shown as an attribute: %v", cv.Attributes)
		}
		switch cv.Told["reason"] {
		case nil:
			before = true
		case reason:
			after = true
		default:
			t.Errorf("told %v, want %q", cv.Told, reason)
		}
		doc = doc || strings.Contains(cv.Document, "Please refund invoice")
	}
	if !before || !after || !doc {
		t.Errorf("views: untold %v, told %v, document %v; want all", before, after, doc)
	}
	var told, refused int
	for _, ev := range evs {
		if ev.Type != payload.EvMessageSent || ev.Actor != "max" {
			continue
		}
		p := decode[payload.MessageSent](t, ev)
		switch {
		case p.Topic == "requests-1/reason" && strings.Contains(p.Text, reason) && strings.Contains(p.Text, "requests-1"):
			told++
		case p.Topic == "" && strings.HasPrefix(p.Text, "Sorry"):
			refused++
		default:
			t.Errorf("max sent %+v", p)
		}
	}
	if told != 1 || refused != 1 {
		t.Errorf("max told the reason %d times and refused %d; want 1 and 1", told, refused)
	}
	ana := st.Member("ana")
	for _, k := range ana.Knows {
		if k != "requests-1/reason" {
			t.Errorf("ana knows %q; she asked only about requests-1", k)
		}
	}
	for _, cs := range st.Cases {
		if cs.ID != "requests-1" && st.Member("ana").KnowsTopic(org.FactTopic(cs.ID, "reason")) {
			t.Errorf("ana was told %s's reason", cs.ID)
		}
	}
}

// A case closed with its outcomes unmet is reopened by its requester
// after its reply latency: the unmet steps become new tasks, the case is
// open again, and done right it earns its outcomes and its value; the
// first tasks earn nothing.
func TestRequesterReopens(t *testing.T) {
	e, evs, views := refundScript(t, true)
	// A view kept from before the reopening shows the steps it showed
	// then: the case's list of steps is a new one, not the old one changed
	// (an export rendered kept views with the reopened steps' IDs).
	if len(views) == 0 || slices.ContainsFunc(views[0].Steps, func(id string) bool { return strings.HasSuffix(id, "-r1") }) {
		t.Fatalf("Ana's first view of requests-1 lists steps %v; want those before the reopening", views[0].Steps)
	}
	st := e.State()
	c := st.Case("requests-1")
	var reopened []payload.CaseReopened
	var closedAt, reopenAt clock.Time
	for _, ev := range evs {
		if ev.Type == payload.EvTaskCompleted && decode[payload.TaskCompleted](t, ev).Task == "requests-1.confirm" {
			closedAt = clock.Time(ev.Time)
		}
		if ev.Type == payload.EvCaseReopened {
			if ev.Actor != "cara" {
				t.Errorf("reopened by %s, want the requester cara", ev.Actor)
			}
			reopened = append(reopened, decode[payload.CaseReopened](t, ev))
			reopenAt = clock.Time(ev.Time)
		}
	}
	// Every step of the case has an outcome, and none was met the first time.
	var steps, tasks []string
	for _, id := range c.Steps {
		steps = append(steps, st.Task(id).Spec.Step)
		tasks = append(tasks, "requests-1."+st.Task(id).Spec.Step+"-r1")
	}
	if len(reopened) != 1 || reopened[0].Case != "requests-1" || !slices.Equal(reopened[0].Steps, steps) || reopened[0].N != 1 {
		t.Fatalf("reopened %+v; want requests-1's %v once", reopened, steps)
	}
	if min := st.World.Calendar.AddWork(closedAt, 30*clock.Minute); reopenAt < min {
		t.Errorf("reopened at %d, before the requester's least reply latency after closing (%d)", reopenAt, min)
	}
	if !c.Done() || !slices.Equal(c.Steps, tasks) || c.Reopens != 1 {
		t.Fatalf("case done %v, steps %v, reopens %d", c.Done(), c.Steps, c.Reopens)
	}
	if u := c.Unmet(); len(u) != 0 {
		t.Errorf("unmet %v after the fix", u)
	}
	sc := policies.Score(st)
	// The fixed steps earn their outcomes; their first completions, which
	// the requester reopened, stay wrong outcomes (each card's Redone).
	if sc.Outcome != float64(len(steps)) || sc.WrongOutcomes != len(steps) {
		t.Errorf("outcome %v, wrong %d; want %d (every step of requests-1), %d (the reopened completions)", sc.Outcome, sc.WrongOutcomes, len(steps), len(steps))
	}
	if !policies.CaseDone(st, c) || policies.CaseValue(st, c) == 0 {
		t.Errorf("the fixed case does not verify or earns nothing")
	}
	if got, want := sc.TeamScore, st.Reward; got != want {
		t.Errorf("team score %v, dense rewards sum to %v", got, want)
	}
	// The replaced tasks stay done; they are no longer the case's steps.
	for _, step := range steps {
		id := "requests-1." + step
		if tk := st.Task(id); tk == nil || tk.Status != org.StatusDone {
			t.Fatalf("task %s: %+v", id, tk)
		}
	}
}

// A requester reopens a case at most MaxReopens times: closed wrongly
// again, it stays closed with its outcomes unmet, counted wrong.
func TestReopenIsBounded(t *testing.T) {
	e, evs, _ := refundScript(t, false)
	n := 0
	for _, ev := range evs {
		if ev.Type == payload.EvCaseReopened {
			n++
		}
	}
	st := e.State()
	c := st.Case("requests-1")
	if n != org.MaxReopens || !c.Done() || len(c.Unmet()) != len(c.Steps) {
		t.Fatalf("%d reopenings, done %v, unmet %v; want %d, true, both steps", n, c.Done(), c.Unmet(), org.MaxReopens)
	}
	// Each step was completed wrongly twice: once before the reopening
	// (counted in its card's Redone), once after.
	sc := policies.Score(st)
	if sc.Outcome != 0 || sc.WrongOutcomes != 2*len(c.Steps) || policies.CaseDone(st, c) {
		t.Errorf("outcome %v, wrong %d, case verifies %v; want 0, %d, false", sc.Outcome, sc.WrongOutcomes, policies.CaseDone(st, c), 2*len(c.Steps))
	}
	// The requester refuses to reopen it again.
	if rej := st.CheckReopen(st.Member("cara"), "requests-1"); rej == nil {
		t.Errorf("a third reopening was allowed")
	}
	if rej := st.CheckReopen(st.Member("ana"), "requests-1"); rej == nil {
		t.Errorf("ana, who did not ask for the case, may reopen it")
	}
}

// Played by greedy, whose refunds and replies are often wrong, billing-
// support's requester reopens cases; the dense rewards still add up to
// the final score, and the session replays to its recorded state.
func TestReopenedRewardsAddUp(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		e, evs := playWorld(t, "billing-support", "greedy", seed)
		n := 0
		for _, ev := range evs {
			if ev.Type == payload.EvCaseReopened {
				n++
			}
		}
		st := e.State()
		sc := policies.Score(st)
		if n == 0 || sc.WrongOutcomes == 0 {
			t.Errorf("seed %d: %d reopenings, %d wrong outcomes; want some of both", seed, n, sc.WrongOutcomes)
		}
		if d := sc.TeamScore - st.Reward; d > 1e-6 || d < -1e-6 {
			t.Errorf("seed %d: team score %v, dense rewards sum to %v", seed, sc.TeamScore, st.Reward)
		}
		mustReplayLive(t, e, evs)
	}
}

// A session restored from a snapshot taken after reopenings and
// decisions, and played on with the same events, ends in the state of the
// session played through: reopened tasks, decisions and reopen counts are
// part of the snapshot.
func TestKindsRestore(t *testing.T) {
	for _, world := range []string{"billing-support", "access-requests"} {
		e, evs := playWorld(t, world, "greedy", 1)
		cut := 0
		for i, ev := range evs {
			if ev.Type == payload.EvCaseReopened || ev.Type == payload.EvCaseDecided {
				cut = i + 1
				if i > len(evs)/2 {
					break
				}
			}
		}
		if cut == 0 {
			t.Fatalf("%s: no reopening or decision to cut after", world)
		}
		w := e.State().World
		src, _ := worlds.Source(world)
		cfg := sim.Config{World: w, Source: src, Seed: 1, Session: "s"}
		re, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:cut] {
			if err := re.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		r, err := sim.Restore(cfg, re.Snapshot(), re.StateHash())
		if err != nil {
			t.Fatalf("%s: restore after seq %d: %v", world, evs[cut-1].Seq, err)
		}
		for _, ev := range evs[cut:] {
			if err := r.Apply(ev); err != nil {
				t.Fatalf("%s: %v", world, err)
			}
		}
		if got, want := r.StateHash(), e.StateHash(); got != want {
			t.Fatalf("%s: restored and replayed: hash %s, live %s", world, got, want)
		}
	}
}
