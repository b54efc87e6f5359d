package agents_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// Greedy names in Omits what it never reads, so that agents/inprocess has
// the engine leave it out; its decisions must not change for it. Play
// every shipped world (the 200,000-ticket bench aside) with greedy and its
// content modes (diligent, oracle), two agents per member: one given the
// whole observation, one the observation omitting what Greedy names; every
// turn both must decide the same actions (the first's answer plays on).
// An agent that reads an omitted part (its upcoming tasks, projects,
// queues or own requests) decides differently somewhere and fails it.
func TestGreedyOmitsWhatItNeverReads(t *testing.T) {
	ws := simtest.Shipped(t)
	for _, name := range worlds.Names() {
		w := ws[name]
		if w == nil {
			continue // the 200,000-ticket bench
		}
		for _, agent := range []string{"greedy", "diligent", "oracle"} {
			t.Run(name+"/"+agent, func(t *testing.T) {
				e, err := sim.New(sim.Config{World: w, Seed: 1, Session: "s"})
				if err != nil {
					t.Fatal(err)
				}
				e.Start()
				type pair struct{ whole, part agents.Agent }
				seats := map[string]pair{}
				turns, omitted := 0, 0
				err = sim.Play(e, func([]events.Event) bool { return true }, func(tu sim.Turn) (sim.Answer, bool) {
					p, ok := seats[tu.Member]
					if !ok {
						for _, a := range []*agents.Agent{&p.whole, &p.part} {
							if *a, err = agents.New(agent, agents.Options{Seed: 1, Member: tu.Member, World: w}); err != nil {
								t.Fatal(err)
							}
						}
						seats[tu.Member] = p
					}
					omit := p.part.(interface{ Omits() org.Omit }).Omits()
					part := e.ObserveOmitting(tu.Member, omit)
					o := tu.Observation
					if len(o.Upcoming) > 0 || len(o.Projects) > 0 || len(o.Queues) > 0 || len(o.Requests) > 0 {
						omitted++
					}
					want, _ := p.whole.Decide(context.Background(), o)
					got, _ := p.part.Decide(context.Background(), part)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("turn %d of %s: given the whole observation it decides\n%+v\ngiven the one omitting %b\n%+v", o.Turn, tu.Member, want, omit, got)
					}
					turns++
					return sim.Answer{Member: tu.Member, Turn: o.Turn, Actions: want}, true
				}, 0)
				if err != nil && !errors.Is(err, sim.ErrStopped) {
					t.Fatal(err)
				}
				if omitted == 0 {
					t.Fatal("no observation had anything to omit")
				}
				t.Logf("%d turns, %d with omitted parts", turns, omitted)
			})
		}
	}
}
