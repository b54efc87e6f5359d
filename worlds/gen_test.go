package worlds

import (
	"bytes"
	"testing"
)

func TestGenerateLoads(t *testing.T) {
	tests := []GenOptions{
		{},
		{Seed: 7, Teams: 3, Members: 30, Projects: 6, Tasks: 40, Chains: 5},
		{Seed: 1, Teams: 1, Members: 3, Projects: 1, Tasks: 1, Chains: 4},
		{Seed: 2, Teams: 10, Members: 200, Projects: 20, Tasks: 100, Chains: 1},
	}
	for _, o := range tests {
		src := Generate(o)
		w, err := Load("gen.yaml", src)
		if err != nil {
			t.Fatalf("Generate(%+v) does not load: %v", o, err)
		}
		tasks := 0
		for _, p := range w.Projects {
			tasks += len(p.Tasks)
		}
		wantTasks := max(o.Projects, 1) * o.Tasks
		if o.Tasks == 0 {
			wantTasks = 12
		}
		if tasks != wantTasks {
			t.Errorf("Generate(%+v): got %d tasks, want %d", o, tasks, wantTasks)
		}
		if !bytes.Equal(src, Generate(o)) {
			t.Errorf("Generate(%+v) is not deterministic", o)
		}
	}
	if bytes.Equal(Generate(GenOptions{Seed: 1, Tasks: 50}), Generate(GenOptions{Seed: 2, Tasks: 50})) {
		t.Error("seeds 1 and 2 generate the same world")
	}
}
