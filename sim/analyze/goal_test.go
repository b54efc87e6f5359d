package analyze_test

import (
	"testing"

	"github.com/corpsim/corpsim/worlds"
)

// TestGoalAcrossProjects: product-launch's projects depend on each other's
// tasks (the web app on the design team's UI kit, the press briefings on
// the engineering freeze). A goal's path as it happened passes through
// them, as its planned path does, instead of failing on a task it does
// not list.
func TestGoalAcrossProjects(t *testing.T) {
	src, err := worlds.Source("product-launch")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("product-launch.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	s := playLoaded(t, w, src, 3)
	crossed := false
	for _, p := range w.Projects {
		g, err := s.Goal(p.ID)
		if err != nil {
			t.Fatalf("goal %s: %v", p.ID, err)
		}
		own := map[string]bool{}
		for _, spec := range p.Tasks {
			own[spec.ID] = true
		}
		if len(g.CriticalPath) == 0 || !own[g.CriticalPath[len(g.CriticalPath)-1].Task] {
			t.Fatalf("goal %s: critical path %v does not end at one of its tasks", p.ID, g.CriticalPath)
		}
		for i, r := range g.CriticalPath {
			if r.Task == "" || r.Status == "" {
				t.Fatalf("goal %s: row %d of its critical path is empty: %+v", p.ID, i, r)
			}
			crossed = crossed || !own[r.Task]
		}
	}
	if !crossed {
		t.Fatal("no goal's critical path crossed into another project: the test no longer covers the case")
	}
}
