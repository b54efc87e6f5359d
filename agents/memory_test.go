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
		remembers, keeps bool // keeps: says what it remembers (a Keeper)
		omit             org.Omit
	}{
		"idle": {}, "random": {}, "greedy": {}, "oracle": {},
		"planner":  {remembers: true, keeps: true},
		"cheater":  {remembers: true, keeps: true},
		"diligent": {remembers: true, keeps: true, omit: greedyOmits},
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
		k, keeps := a.(agents.Keeper)
		if keeps = keeps && w.remembers; keeps != w.keeps {
			t.Errorf("%s: a Keeper that remembers: %v, want %v", name, keeps, w.keeps)
		}
		if !keeps {
			continue
		}
		// What a fresh agent has in memory, it takes back as it was; what
		// is not its memory, it refuses.
		mem, err := k.KeepMemory()
		if err != nil {
			t.Fatal(err)
		}
		if err := k.TakeMemory(mem); err != nil {
			t.Errorf("%s: TakeMemory(%s): %v", name, mem, err)
		}
		if again, _ := k.KeepMemory(); string(again) != string(mem) {
			t.Errorf("%s: remembers %s after taking %s", name, again, mem)
		}
		if err := k.TakeMemory([]byte(`{"seen":[1]}`)); err == nil && name == "planner" {
			t.Errorf("%s took a memory that is not one", name)
		}
	}
}
