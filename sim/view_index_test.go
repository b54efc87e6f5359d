package sim_test

import (
	"encoding/json"
	"testing"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// The state keeps the tasks a view must look at (those not done) and the
// projects' done counts incrementally; a state restored from a snapshot
// builds them from scratch. Every member's view must be the same either way,
// all along a session with projects, dependencies and tickets.
func TestIncrementalViewEqualsRebuilt(t *testing.T) {
	for _, name := range []string{"product-launch", "support-desk", "portfolio"} {
		t.Run(name, func(t *testing.T) {
			w, err := worlds.Shipped(name)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := worlds.Source(name)
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			compared, step := 0, 0
			for rd := range steps(t, e, greedy, false) {
				if rd.Done {
					break
				}
				if step%41 == 0 {
					st := e.State()
					back, err := org.Restore(w, st.Snapshot())
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range st.Members {
						a, _ := json.Marshal(st.View(m.ID))
						b, _ := json.Marshal(back.View(m.ID))
						if string(a) != string(b) {
							t.Fatalf("step %d, %s: incremental view\n%s\nrebuilt view\n%s", step, m.ID, a, b)
						}
						compared++
					}
				}
				step++
			}
			if compared == 0 {
				t.Fatal("compared no views")
			}
		})
	}
}
