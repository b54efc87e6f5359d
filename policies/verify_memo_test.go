package policies_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// memoWorlds are the worlds the remembered verifications are tested on:
// every shipped one but the 200,000-ticket bench, and generated ones like
// the scale world (chains of dependencies, purchases with approvals,
// dispatch one), one with interruptions that change the effort of tasks
// done by then, reprioritize them and send members on leave with
// delegates.
func memoWorlds(t *testing.T) map[string]*worlds.World {
	t.Helper()
	ws := simtest.Shipped(t)
	scale := worlds.Generate(worlds.GenOptions{Name: "scale", Seed: 1, Teams: 3, Members: 30, Projects: 3, Tasks: 60,
		Chains: 4, Stagger: 1, Dispatch: worlds.DispatchOne})
	changed := append(worlds.Generate(worlds.GenOptions{Name: "changed", Seed: 2, Teams: 2, Members: 8, Projects: 2, Tasks: 30,
		Chains: 3, Tickets: 2}), `interruptions:
  - {at: 3d, kind: change, task: p1-t1, effort: +4h}
  - {at: 4d, kind: change, task: p1-t2, effort: +1d}
  - {at: 5d, kind: change, task: p2-t1, effort: +2h}
  - {at: 2d, kind: leave, member: m00001, for: 3d, delegate: m00003}
  - {at: 6d, kind: change, task: p1-t5, effort: +1h}
  - {at: 8d, kind: change, task: p2-t4, effort: +1d}
`...)
	for name, src := range map[string][]byte{"generated-scale": scale, "generated-changed": changed} {
		w, err := worlds.Load(name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		ws[name] = w
	}
	return ws
}

// Every verification the state remembers must be the one a fresh
// verification (nothing remembered) gives, at every point of a session:
// play every test world with greedy, planner, random and cheater agents
// over three seeds and, after every batch (every tenth after the 300th),
// verify every done task both ways. Random and cheating agents complete tasks without their
// information, approvals or effort, so failures (final and not) are
// remembered too; the changed world adds effort to tasks already done,
// after which the state must forget what it remembered. The test also
// fails when greedy agents in a world without cases (whose steps are
// never remembered) leave nothing remembered (the memo not used), or when no
// change hit a done task (the case it exists for not reached).
func TestRememberedVerdictsMatchFresh(t *testing.T) {
	ws := memoWorlds(t)
	changedDone := 0
	for _, name := range slices.Sorted(maps.Keys(ws)) {
		w := ws[name]
		for _, agent := range []string{"greedy", "planner", "random", "cheater"} {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("%s/%s/%d", name, agent, seed), func(t *testing.T) {
					e, err := sim.New(sim.Config{World: w, Seed: seed, Session: "s"})
					if err != nil {
						t.Fatal(err)
					}
					e.Start()
					seats := map[string]agents.Agent{}
					compared, remembered, batches := 0, 0, 0
					err = sim.Play(e, func(b []events.Event) bool {
						st := e.State()
						for i := range b {
							if b[i].Type != payload.EvTaskChanged {
								continue
							}
							p, err := payload.As[payload.TaskChanged](&b[i], nil)
							if err == nil && st.Task(p.Task) != nil && st.Task(p.Task).Status == org.StatusDone {
								changedDone++
							}
						}
						batches++
						// Every batch at first, then every tenth: a stale
						// verdict stays stale until it is forgotten, so it
						// is still caught, and long sessions stay short.
						if batches <= 300 || batches%10 == 0 {
							c, r := mustSameVerdicts(t, st, fmt.Sprintf("batch %d", batches))
							compared += c
							remembered = max(remembered, r)
						}
						return batches < 3000
					}, func(tu sim.Turn) (sim.Answer, bool) {
						a := seats[tu.Member]
						if a == nil {
							a, err = agents.New(agent, agents.Options{Seed: seed, Member: tu.Member, World: w})
							if err != nil {
								t.Fatal(err)
							}
							seats[tu.Member] = a
						}
						acts, _ := a.Decide(context.Background(), tu.Observation)
						return sim.Answer{Member: tu.Member, Turn: tu.Observation.Turn, Actions: acts}, true
					}, 0)
					if err != nil && !errors.Is(err, sim.ErrStopped) {
						t.Fatal(err)
					}
					c, r := mustSameVerdicts(t, e.State(), "the end")
					compared += c
					remembered = max(remembered, r)
					// Score verifies every task with what is remembered;
					// it must agree with the fresh verifications too.
					got := policies.Score(e.State())
					var want []string
					for _, tk := range e.State().Tasks() {
						// A step its requester reopened is replaced by the
						// task that redoes it: Score counts only the latter.
						if c := e.State().CaseOf(tk); c != nil && !slices.Contains(c.Steps, tk.ID) {
							continue
						}
						if tk.Status == org.StatusDone {
							if why := policies.VerifyFresh(e.State(), tk); why != "" {
								want = append(want, tk.ID+": "+why)
							}
						}
					}
					if r := e.State().Retired(); r != nil { // retired tickets: their verdicts as they retired
						want = append(want, r.Unverified...)
					}
					if !sameSet(got.Unverified, want) {
						t.Fatalf("Score's unverified %q, fresh verification %q", got.Unverified, want)
					}
					if compared > 0 && remembered == 0 && agent == "greedy" && len(w.Cases) == 0 {
						t.Fatalf("%d verifications compared, none remembered", compared)
					}
				})
			}
		}
	}
	if changedDone == 0 {
		t.Fatal("no change interruption hit a task already done")
	}
}

// mustSameVerdicts verifies every done task of st with what st remembers
// and afresh, and fails on any difference; it returns how many it
// compared and how many st remembers.
func mustSameVerdicts(tb testing.TB, st *org.State, where string) (compared, remembered int) {
	tb.Helper()
	for _, tk := range st.Tasks() {
		if tk.Status != org.StatusDone {
			continue
		}
		want := policies.VerifyFresh(st, tk)
		if got := policies.Verify(st, tk); got != want {
			tb.Fatalf("%s, task %s: remembered verification %q, fresh %q", where, tk.ID, got, want)
		}
		compared++
		if _, ok := st.Verdict(tk); ok {
			remembered++
		}
	}
	return compared, remembered
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, x := range a {
		n[x]++
	}
	for _, x := range b {
		if n[x]--; n[x] < 0 {
			return false
		}
	}
	return true
}

// A completion without the information its task needs does not count
// until the member learns it; then it counts, and so does the work built
// on it. Neither result may be remembered as final before that.
func TestVerdictWaitsForInformation(t *testing.T) {
	w := mustWorld(t,
		"{id: spec, title: Write the product spec, role: lead, effort: 1d, value: 8}",
		"{id: spec, title: Write the product spec, role: lead, effort: 1d, value: 8, info: {from: frank, topic: spec-notes}}",
		"      reply: {min: 1h, max: 6h}   # working time before Frank answers\n",
		"      reply: {min: 1h, max: 6h}   # working time before Frank answers\n      knows:\n        spec-notes: \"The notes.\"\n")
	sc := newScript(t, w).do("alice", "spec").do("dave", "design-ux")
	st := sc.state()
	spec, ux := st.Task("spec"), st.Task("design-ux")
	for range 2 { // the second time from what is remembered, if anything
		if got, want := policies.Verify(st, spec), `completed without "spec-notes" from frank`; got != want {
			t.Fatalf("Verify(spec) before learning = %q, want %q", got, want)
		}
		if got := policies.Verify(st, ux); got == "" {
			t.Fatal("Verify(design-ux) before spec counts = \"\", want its dependency's reason")
		}
	}
	for _, tk := range []*org.Task{spec, ux} {
		if why, ok := st.Verdict(tk); ok {
			t.Fatalf("%s: remembered %q before its member could learn the topic", tk.ID, why)
		}
	}
	ev := func(typ, actor string, v any) {
		if err := st.Apply(events.Event{Seq: st.LastSeq + 1, Time: int64(st.Now), Type: typ, Actor: actor, Payload: mustJSON(t, v)}); err != nil {
			t.Fatal(err)
		}
	}
	ev(payload.EvMessageSent, "frank", payload.MessageSent{Message: "m1", To: "alice", Text: "The notes.", Topic: "spec-notes", DeliverAt: st.Now})
	ev(payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"})
	for _, tk := range []*org.Task{spec, ux} {
		if got := policies.Verify(st, tk); got != "" {
			t.Fatalf("Verify(%s) after learning = %q, want \"\"", tk.ID, got)
		}
		if why, ok := st.Verdict(tk); !ok || why != "" {
			t.Fatalf("%s: remembered %q, %v after it counts, want \"\", true", tk.ID, why, ok)
		}
	}
}
