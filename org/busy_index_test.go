package org_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// TestBusyIndexIsTheScan plays every shipped world with an availability
// system, with greedy and random agents (who book meetings and write
// records), and the meetings world with a calendar its coordinators may
// write, whose busy blocks they move from one member to another; it holds
// every member's busy blocks, found by the index of availability records
// by member, to those a look at every record finds, state after state.
func TestBusyIndexIsTheScan(t *testing.T) {
	compared, windowed, writes, moved := 0, 0, 0, 0
	type world struct {
		name  string
		w     *worlds.World
		moves bool
	}
	var ws []world
	for _, name := range worlds.Names() {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.Availability != nil {
			ws = append(ws, world{name, w, false})
		}
	}
	src, err := worlds.Source("meetings")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("    read: [coordinator]\n"), []byte("    read: [coordinator]\n    write: [coordinator]\n"), 1)
	w, err := worlds.Load("meetings-writable.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Systems) == 0 || len(w.Systems[0].Write) == 0 {
		t.Fatal("the calendar did not become writable")
	}
	ws = append(ws, world{"meetings-writable", w, true})
	for _, wd := range ws {
		name, w := wd.name, wd.w
		for seed := uint64(4); seed <= 6; seed++ {
			e, err := sim.New(sim.Config{World: w, Seed: seed, Session: "s", Load: float64(seed) * 3})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			mixed := simtest.Mixed(3, 9)
			batches := 0
			err = sim.Play(e, func(evs []events.Event) bool {
				for _, ev := range evs {
					if ev.Type == payload.EvRecordWritten || ev.Type == payload.EvMeetingScheduled {
						writes++
					}
				}
				if batches++; batches%4 == 0 {
					st := e.State()
					// The whole session, and windows of a few hours that
					// cut blocks at either end, as a meeting's view asks.
					h := clock.Time(w.Horizon)
					windows := [][2]clock.Time{{0, h}}
					for from := clock.Time(batches%7) * 37 * 60_000; from < h; from += 5 * 3600_000 {
						windows = append(windows, [2]clock.Time{from, from + 3*3600_000 + 17*60_000})
					}
					for _, m := range st.Members {
						for _, win := range windows {
							got, want := st.Busy(m.ID, win[0], win[1]), st.BusyScanned(m.ID, win[0], win[1])
							if !reflect.DeepEqual(got, want) {
								t.Fatalf("%s at seq %d: %s is busy in [%d, %d) %v by the index, %v by the scan", name, st.LastSeq, m.ID, win[0], win[1], got, want)
							}
							compared += len(want)
							if len(want) > 0 && win[1]-win[0] < h {
								windowed++
							}
						}
					}
				}
				return batches < 20000
			}, func(tu sim.Turn) (sim.Answer, bool) {
				if wd.moves && tu.Observation.Turn%4 == 1 {
					if act, ok := moveBusy(e.State(), tu.Member, int(tu.Observation.Turn)); ok {
						moved++
						return sim.Answer{Member: tu.Member, Turn: tu.Observation.Turn, Actions: []org.Action{act}}, true
					}
				}
				return mixed(tu)
			}, 0)
			if err != nil && err != sim.ErrStopped {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d busy blocks compared (%d windows of a few hours with some), %d writes, %d moves asked", compared, windowed, writes, moved)
	if compared < 10000 || windowed < 1000 || writes < 100 || moved < 20 {
		t.Fatalf("%d busy blocks compared, %d writes: too few to hold the index to anything", compared, writes)
	}
}

// moveBusy is an update of a busy block of the availability to another
// member of it, for member to make: the n-th block, to the next member.
func moveBusy(st *org.State, member string, n int) (org.Action, bool) {
	a := st.World.Availability
	var blocks []*org.Record
	for _, r := range st.Records {
		if r.Type == a.Record && !r.Deleted {
			blocks = append(blocks, r)
		}
	}
	if len(blocks) == 0 || len(a.Members) < 2 {
		return org.Action{}, false
	}
	r := blocks[n%len(blocks)]
	to := a.Members[n%len(a.Members)]
	if to == r.Fields["member"] {
		to = a.Members[(n+1)%len(a.Members)]
	}
	return org.Action{Type: org.ActUpdate, Record: r.Type, ID: r.ID, Fields: payload.NewActionAttrs(payload.Attrs{"member": to})}, true
}
