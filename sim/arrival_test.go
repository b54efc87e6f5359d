package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// arrivalWorld is a world of one agent seat serving one queue, whose only
// arrival process is spec (YAML lines of the arrival, indented by four).
const arrivalWorld = `version: 1
name: arrivals
start: 2026-01-05T09:00:00Z
horizon: %s
calendar:
  hours: "09:00-17:00"
  workdays: [mon, tue, wed, thu, fri]
roles:
  - {id: server, title: Server}
teams:
  - {id: desk, name: Desk, budget: 1000}
members:
  - {id: bob, name: Bob, role: server, team: desk}
queues:
  - {id: desk, served_by: [server], order: fifo}
arrivals:
  - id: a
    queue: desk
%s
    ticket: {title: T, role: server, effort: 30m, value: 1}
`

func mustArrivalWorld(tb testing.TB, horizon, spec string) (*worlds.World, []byte) {
	tb.Helper()
	src := []byte(fmt.Sprintf(arrivalWorld, horizon, spec))
	w, err := worlds.Load("arrivals.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// waiter answers every turn with a wait: the tickets pile up.
func waiter(t sim.Turn) (sim.Answer, bool) {
	return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: []org.Action{{Type: org.ActWait}}}, true
}

// arrivalsOf plays the world at load with a waiting agent and returns
// when each ticket arrived, the session's end reason and its events. It
// checks that the log replays to the recorded state hash.
func arrivalsOf(tb testing.TB, w *worlds.World, src []byte, load float64) ([]clock.Time, string, []events.Event) {
	tb.Helper()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s", Load: load})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	var evs []events.Event
	if err := sim.Play(e, func(b []events.Event) bool { evs = append(evs, slices.Clone(b)...); return true }, waiter, 0); err != nil {
		tb.Fatal(err)
	}
	var at []clock.Time
	for _, ev := range evs {
		if ev.Type == payload.EvTaskCreated {
			at = append(at, clock.Time(ev.Time))
		}
	}
	r, err := sim.Rebuild(seqOf(evs), "s", sim.Config{})
	if err != nil {
		tb.Fatalf("the log does not replay: %v", err)
	}
	if r.StateHash() != e.StateHash() {
		tb.Fatalf("replayed state hash %s, live %s", r.StateHash(), e.StateHash())
	}
	return at, e.State().EndReason, evs
}

func TestArrivalBoundaries(t *testing.T) {
	// Times below are computed from the loaded world's calendar: day(n)
	// is the offset "nd" as the world file's offsets are read.
	type want func(w *worlds.World) []clock.Time
	day := func(w *worlds.World, n float64) clock.Time {
		cal := &w.Calendar
		return cal.AddWork(cal.NextWorking(0), clock.Duration(n*float64(cal.DayLength())))
	}
	every := func(first clock.Time, gap clock.Duration, n int) want {
		return func(w *worlds.World) []clock.Time {
			out := []clock.Time{first}
			for len(out) < n {
				out = append(out, w.Calendar.AddWork(out[len(out)-1], gap))
			}
			return out
		}
	}
	days := func(ds ...float64) want {
		return func(w *worlds.World) []clock.Time {
			var out []clock.Time
			for _, d := range ds {
				out = append(out, day(w, d))
			}
			return out
		}
	}
	tests := []struct {
		name    string
		horizon string
		spec    string
		load    float64
		want    want
	}{
		{"scheduled at, first at 0", "3d", "    process: scheduled\n    at: [0d, 1d, 2d]", 1, days(0, 1, 2)},
		{"scheduled at, one at the horizon", "2d", "    process: scheduled\n    at: [0d, 1d, 2d]", 1, days(0, 1, 2)},
		{"scheduled at, until 1d", "3d", "    process: scheduled\n    at: [0d, 1d, 2d]\n    until: 1d", 1, days(0, 1)},
		{"scheduled at, count 2", "3d", "    process: scheduled\n    at: [0d, 1d, 2d]\n    count: 2", 1, days(0, 1)},
		{"scheduled at, load 2 brings each twice", "3d", "    process: scheduled\n    at: [0d, 1d]", 2, days(0, 0, 1, 1)},
		{"scheduled at, load 0.5 every other one", "3d", "    process: scheduled\n    at: [0d, 1d, 2d]", 0.5, days(0, 2)},
		{"scheduled every, first at 0", "1d", "    process: scheduled\n    every: 2h", 1, every(0, 2*clock.Hour, 5)},
		{"scheduled every, count 3", "1d", "    process: scheduled\n    every: 2h\n    count: 3", 1, every(0, 2*clock.Hour, 3)},
		{"scheduled every, load 2 halves the gap", "1d", "    process: scheduled\n    every: 2h", 2, every(0, clock.Hour, 9)},
		{"scheduled every, from the start offset", "1d", "    process: scheduled\n    every: 3h\n    start: 1h", 1,
			func(w *worlds.World) []clock.Time { return every(day(w, 1.0/8), 3*clock.Hour, 3)(w) }},
		{"scheduled every, until 4h", "1d", "    process: scheduled\n    every: 2h\n    until: 4h", 1, every(0, 2*clock.Hour, 3)},
		{"bursty, first burst at 0", "2d", "    process: bursty\n    every: 1d\n    burst: 3", 1, days(0, 0, 0, 1, 1, 1, 2, 2, 2)},
		{"bursty, load 2 doubles the burst at 0", "1d", "    process: bursty\n    every: 1d\n    burst: 2", 2, days(0, 0, 0, 0, 1, 1, 1, 1)},
		{"bursty, count 4 cuts a burst", "2d", "    process: bursty\n    every: 1d\n    burst: 3\n    count: 4", 1, days(0, 0, 0, 1)},
		{"bursty, from the start offset", "2d", "    process: bursty\n    every: 1d\n    burst: 2\n    start: 0.5d", 1, days(0.5, 0.5, 1.5, 1.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, src := mustArrivalWorld(t, tt.horizon, tt.spec)
			got, _, evs := arrivalsOf(t, w, src, tt.load)
			if want := tt.want(w); !slices.Equal(got, want) {
				t.Fatalf("tickets arrived at %v, want %v", got, want)
			}
			// session.started says a first ticket at 0 comes, and only then.
			var p payload.SessionStarted
			if err := json.Unmarshal(evs[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			zero := bytes.Contains(evs[0].Payload, []byte(`"at_zero":true`))
			if wantZero := got[0] == 0; zero != wantZero {
				t.Errorf("session.started %v: at_zero %v, want %v", p.Arrivals, zero, wantZero)
			}
		})
	}
}

func TestPoissonArrivalBoundaries(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		w, src := mustArrivalWorld(t, "20d", "    process: poisson\n    every: 1h\n    count: 7")
		got, _, _ := arrivalsOf(t, w, src, 1)
		if len(got) != 7 {
			t.Fatalf("%d tickets arrived, want 7 (the count)", len(got))
		}
		got2, _, _ := arrivalsOf(t, w, src, 2)
		if len(got2) != 14 {
			t.Fatalf("at load 2, %d tickets arrived, want 14 (twice the count)", len(got2))
		}
	})
	t.Run("until and horizon", func(t *testing.T) {
		w, src := mustArrivalWorld(t, "3d", "    process: poisson\n    every: 30m\n    until: 1d\n    start: 2h")
		got, _, _ := arrivalsOf(t, w, src, 1)
		cal := &w.Calendar
		start, until := cal.AddWork(0, 2*clock.Hour), w.Arrivals[0].Until
		if len(got) < 5 {
			t.Fatalf("only %d tickets arrived between 2h and 1d with a mean gap of 30m", len(got))
		}
		if got[0] <= start || got[len(got)-1] > until {
			t.Fatalf("tickets arrived from %d to %d, want after the start %d and up to until %d", got[0], got[len(got)-1], start, until)
		}
		w, src = mustArrivalWorld(t, "1d", "    process: poisson\n    every: 30m")
		got, _, _ = arrivalsOf(t, w, src, 1)
		if len(got) < 5 || got[len(got)-1] > w.Horizon {
			t.Fatalf("%d tickets, the last at %d; want several up to the horizon %d", len(got), got[len(got)-1], w.Horizon)
		}
	})
}

// A world whose only work is a ticket at time 0 does not end "complete"
// before that ticket came.
func TestArrivalAtZeroKeepsTheSessionOpen(t *testing.T) {
	w, src := mustArrivalWorld(t, "1d", "    process: scheduled\n    at: [0d]")
	got, reason, evs := arrivalsOf(t, w, src, 1)
	if !slices.Equal(got, []clock.Time{0}) {
		t.Fatalf("tickets arrived at %v, want one at 0", got)
	}
	for _, ev := range evs {
		if ev.Type == payload.EvTaskCreated && bytes.Contains(ev.Payload, []byte("next_at")) {
			t.Errorf("the last ticket says its arrival brings another: %s", ev.Payload)
		}
	}
	if reason == "complete" {
		t.Fatalf("ended %q with the ticket open", reason)
	}
}

// Logs written before time 0 could be told apart record "at": 0 for an
// arrival that brings nothing: replayed, it still brings nothing.
func TestArrivalAtZeroOldLogMeansNever(t *testing.T) {
	w, _ := mustArrivalWorld(t, "1d", "    process: scheduled\n    at: [0d]")
	st := org.New(w)
	p := payload.SessionStarted{Format: payload.LogFormat, World: w.Name, Arrivals: []payload.ArrivalNext{{Arrival: "a"}}}
	b, err := payload.Append(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(events.Event{Seq: 1, Type: payload.EvSessionStarted, Payload: b}); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Arrival("a").Next(); ok || !st.AllDone() {
		t.Fatalf("\"at\": 0 without at_zero: the arrival brings more (%v) or the state is not done (%v)", ok, st.AllDone())
	}
	bad := payload.SessionStarted{Format: payload.LogFormat, World: w.Name, Arrivals: []payload.ArrivalNext{{Arrival: "a", At: 5, AtZero: true}}}
	b, _ = payload.Append(nil, bad)
	if err := org.New(w).Apply(events.Event{Seq: 1, Type: payload.EvSessionStarted, Payload: b}); err == nil {
		t.Fatal("at_zero with at 5 applies; want an error")
	}
}

// TestVanishingLoad plays arrival processes at loads so small that their
// gaps, divided by the load, leave the range of a time: no ticket comes
// after such a gap. Overflowed, a gap was negative, which working time
// takes for none, and every ticket came at one instant without end (a
// stranger's load of 1e-300 held a server's memory until it was killed;
// CheckLoad now refuses loads below worlds.MinLoad, and this is the
// engine's own guard).
func TestVanishingLoad(t *testing.T) {
	for _, spec := range []string{
		"    process: poisson\n    every: 12m",
		"    process: scheduled\n    every: 2h",
		"    process: scheduled\n    at: [0d, 1d]",
	} {
		for _, load := range []float64{1e-300, 1e-15} {
			w, src := mustArrivalWorld(t, "3d", spec)
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s", Load: load})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.SetMaxEvents(10_000); err != nil {
				t.Fatal(err)
			}
			e.Start()
			tickets := 0
			if err := sim.Play(e, func(b []events.Event) bool {
				for _, ev := range b {
					if ev.Type == payload.EvTaskCreated {
						tickets++
					}
				}
				return true
			}, waiter, 0); err != nil {
				t.Fatal(err)
			}
			if reason := e.State().EndReason; reason == sim.EndEventLimit || tickets > 1 {
				t.Fatalf("%q at load %g: %d tickets, ended %s; want at most the first and an end before the budget", spec, load, tickets, reason)
			}
		}
	}
	// A new session is refused such a load; one recorded at it is read
	// again at it (resume, fork, a worker adopting it).
	if err := worlds.CheckNewLoad(worlds.MinLoad/2, 0); err == nil {
		t.Fatalf("CheckNewLoad(%g) passed; want a load below the least refused", worlds.MinLoad/2)
	}
	if err := worlds.CheckNewLoad(worlds.MinLoad, 0); err != nil {
		t.Fatalf("CheckNewLoad(MinLoad): %v", err)
	}
	if err := worlds.CheckLoad(worlds.MinLoad/2, 0); err != nil {
		t.Fatalf("CheckLoad(%g), a recorded session's: %v", worlds.MinLoad/2, err)
	}
}
