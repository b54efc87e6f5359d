package sim_test

import (
	"math"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// changeLateSrc: bob finishes spec (2h) and then api (3h, after spec) on
// the first day; a requirement change adds 4h to spec on the third.
const changeLateSrc = `version: 1
name: change-late
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}]
teams: [{id: t}]
members: [{id: bob, role: eng, team: t}]
queues: [{id: q, served_by: [eng]}]
projects:
  - id: p
    team: t
    queue: q
    deadline: 4d
    value: 10
    tasks:
      - {id: spec, role: eng, effort: 2h, value: 20}
      - {id: api, role: eng, effort: 3h, deps: [spec], value: 30}
interruptions:
  - {at: 2d, kind: change, task: spec, effort: +4h, note: "more to specify"}
`

// TestChangeAfterDone: from log format 9 a requirement change that lands
// on a task already done leaves it as delivered: verified, its dependent
// too, and the rewards add up to the team score. Format 8 and before took
// the effort back from done work that nothing could redo, and no reward
// said so (kept as it was: a format-7 session goes on in its format).
func TestChangeAfterDone(t *testing.T) {
	w, err := worlds.Load("change-late.yaml", []byte(changeLateSrc))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format   int
		verified bool
	}{{payload.LogFormat, true}, {7, false}} {
		e, err := sim.New(sim.Config{World: w, Source: []byte(changeLateSrc), Seed: 1, Session: "s", LogFormat: c.format})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		evs := simtest.Events(t, e)
		changed, rewards := false, 0.0
		for i := range evs {
			switch evs[i].Type {
			case payload.EvTaskChanged:
				if spec := e.State().Task("spec"); spec.DoneAt == 0 || spec.DoneAt >= clock.Time(evs[i].Time) {
					t.Fatalf("format %d: the change came before spec was done: the world does not test a late change", c.format)
				}
				changed = true
			case payload.EvReward:
				r, _ := payload.TeamReward(&evs[i])
				rewards += r
			}
		}
		st := e.State()
		card := policies.Score(st)
		spec, api := st.Task("spec"), st.Task("api")
		verified := policies.Verify(st, spec) == "" && policies.Verify(st, api) == ""
		if !changed || verified != c.verified {
			t.Errorf("format %d: changed %v, spec and api verified %v (%q, %q); want %v", c.format, changed, verified, policies.Verify(st, spec), policies.Verify(st, api), c.verified)
		}
		if c.verified && (math.Abs(rewards-card.TeamScore) > 1e-9 || spec.Effort != 2*clock.Hour) {
			t.Errorf("format %d: rewards %v, team score %v, spec's effort %d; want them equal, effort 2h", c.format, rewards, card.TeamScore, spec.Effort)
		}
		t.Logf("format %d: rewards %.2f, team score %.2f", c.format, rewards, card.TeamScore)
	}
}
