package sim_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// TestBookFilesEachRuleByWhatItRefuses holds the default rules' action
// types (policies.Scoped) to what they refuse, in states of every shipped
// world played by greedy agents: every member tries every action on every
// task, request and colleague.
//   - The Book the engine checks with refuses each action as the Set does:
//     the same rule, the same reason.
//   - Each rule refuses, somewhere, an action of every type it lists. A
//     rule's Check allows the types it does not list, so a type left out
//     of its list would be refused nowhere, and this fails.
func TestBookFilesEachRuleByWhatItRefuses(t *testing.T) {
	set := policies.Default()
	book := set.Compile()
	seen := map[string]bool{} // rule + " " + type refused
	for _, name := range worlds.Names() {
		if strings.HasSuffix(name, "-bench") {
			continue // the desk again, larger
		}
		src, err := worlds.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		e := startedEngine(t, name+".yaml", src)
		n, next := 0, 50
		err = sim.Play(e, func(evs []events.Event) bool {
			if n += len(evs); n >= next {
				next *= 3
				tryEverything(t, name, e.State(), set, book, seen)
			}
			return n < 5000
		}, func(tn sim.Turn) (sim.Answer, bool) { return greedy(tn.Observation), true }, 0)
		if err != nil && err != sim.ErrStopped {
			t.Fatal(err)
		}
		tryEverything(t, name, e.State(), set, book, seen)
	}
	// What each default rule governs, spelt out here: a type left out of a
	// rule's Acts is refused nowhere (its Check allows it), and one listed
	// beyond these differs from the table.
	governs := map[string][]string{
		"role-required":        {org.ActClaim, org.ActWork, org.ActComplete},
		"skill-required":       {org.ActClaim, org.ActWork, org.ActComplete},
		"queue-order":          {org.ActClaim},
		"wip-limit":            {org.ActClaim},
		"dependencies-first":   {org.ActWork, org.ActComplete},
		"work-done":            {org.ActComplete},
		"info-required":        {org.ActComplete},
		"approval-required":    {org.ActComplete},
		"within-budget":        {org.ActComplete},
		"separation-of-duties": {org.ActApprove, org.ActReject},
		"separation":           {org.ActClaim, org.ActWork, org.ActComplete, org.ActApprove, org.ActReject, org.ActHandoff},
		"delegation-limit":     {org.ActApprove, org.ActReject},
		"approver-authority":   {org.ActApprove, org.ActReject},
	}
	var missing []string
	for _, r := range set {
		want := governs[r.Name()]
		if got := r.(policies.Scoped).Acts(); !reflect.DeepEqual(got, want) {
			t.Errorf("rule %s lists %v, want %v", r.Name(), got, want)
		}
		for _, typ := range want {
			if !seen[r.Name()+" "+typ] {
				missing = append(missing, r.Name()+" "+typ)
			}
		}
	}
	if len(missing) > 0 {
		var got []string
		for k := range seen {
			got = append(got, k)
		}
		sort.Strings(got)
		t.Errorf("refused nowhere: %v (refused: %v)", missing, got)
	}
}

// tryEverything checks every member's every action in s with both the Set
// and the Book, and notes which rule refused which type.
func tryEverything(t *testing.T, world string, s *org.State, set policies.Set, book *policies.Book, seen map[string]bool) {
	t.Helper()
	var acts []org.Action
	for _, typ := range []string{org.ActMessage, org.ActWait, org.ActOpenCase, org.ActReopen, org.ActScheduleMeeting,
		org.ActGet, org.ActSearch, org.ActUpdate, org.ActCreate, org.ActDelete} {
		acts = append(acts, org.Action{Type: typ})
	}
	for _, tk := range s.Tasks() {
		for _, typ := range []string{org.ActClaim, org.ActWork, org.ActComplete, org.ActRequestApproval, org.ActDecide, org.ActHandoff} {
			acts = append(acts, org.Action{Type: typ, Task: tk.ID})
		}
		for _, m := range s.Members {
			acts = append(acts, org.Action{Type: org.ActHandoff, Task: tk.ID, To: m.ID})
		}
	}
	for _, r := range s.Requests {
		for _, typ := range []string{org.ActApprove, org.ActReject, org.ActEscalate} {
			acts = append(acts, org.Action{Type: typ, Request: r.ID})
		}
	}
	for _, m := range s.Members {
		for i := range acts {
			a := &acts[i]
			want, got := set.Check(s, m.ID, a), book.Check(s, m.ID, a)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %s's %+v: the Book says %v, the Set %v", world, m.ID, *a, got, want)
			}
			for _, r := range set {
				if rej := r.Check(s, m.ID, a); rej != nil {
					seen[strings.SplitN(rej.Rule, "/", 2)[0]+" "+a.Type] = true
				}
			}
		}
	}
}
