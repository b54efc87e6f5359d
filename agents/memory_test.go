package agents_test

import (
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/org"
)

// Memory names the built-in agents that remember what they were shown
// (a resume or a fork shows them their past) and what each never reads.
func TestMemoryOfTheBuiltInAgents(t *testing.T) {
	greedyOmits := (&agents.Greedy{}).Omits()
	want := map[string]struct {
		remembers bool
		omit      org.Omit
	}{
		"idle": {}, "random": {}, "greedy": {}, "oracle": {},
		"planner":  {remembers: true},
		"cheater":  {remembers: true},
		"diligent": {remembers: true, omit: greedyOmits},
	}
	for _, name := range agents.Names() {
		a, err := agents.New(name, agents.Options{Seed: 1, Member: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		if !ok {
			t.Fatalf("no expectation for built-in agent %s", name)
		}
		if omit, remembers := agents.Memory(a); remembers != w.remembers || omit != w.omit {
			t.Errorf("%s: Memory %v, %v; want %v, %v", name, omit, remembers, w.omit, w.remembers)
		}
	}
}
