package sim_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
)

// TestATurnSeesItsOwnInstant: an observation's time is the instant its
// member is asked, the time of its turn event, also when a timer that
// records nothing woke the member (the end of its wait, of its last turn's
// cost) after the last event: the state is the one that event left, seen
// later. It said the last event's time, so a member that waited an hour
// was shown the instant it began to wait, and an agent waiting "until" a
// time computed from it asked for a time already past.
func TestATurnSeesItsOwnInstant(t *testing.T) {
	w, src := costsWorld(t, "")
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	type shown struct{ time, wall string }
	seen := map[string]shown{} // by member/turn
	key := func(member string, turn uint64) string { return fmt.Sprintf("%s/%d", member, turn) }
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		seen[key(o.Member, o.Turn)] = shown{clock.Duration(o.Time).String(), o.Wall}
		if o.Turn > 6 {
			return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		}
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait, For: "1h"}}}
	}, false, 0)
	mustReplay(t, evs)
	timeOf := map[uint64]int64{}
	later := 0
	for _, ev := range evs {
		timeOf[ev.Seq] = ev.Time
		if ev.Type != payload.EvTurn {
			continue
		}
		var p payload.Turn
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		got, ok := seen[key(ev.Actor, p.Turn)]
		if !ok {
			t.Fatalf("no observation for %s's turn %d", ev.Actor, p.Turn)
		}
		want := shown{clock.Duration(ev.Time).String(), w.Calendar.Wall(clock.Time(ev.Time)).Format("2006-01-02T15:04:05Z07:00")}
		if got != want {
			t.Errorf("%s's turn %d at seq %d was shown %v; want its turn's %v", ev.Actor, p.Turn, ev.Seq, got, want)
		}
		if ev.Time > timeOf[p.Seen] {
			later++
		}
	}
	if later == 0 {
		t.Fatal("no turn came later than the event it saw: the test shows nothing")
	}
	t.Logf("%d turns later than the event they saw", later)
}
