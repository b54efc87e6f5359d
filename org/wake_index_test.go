package org_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustSameServers fails unless, for every open task of st, the members
// the wake index finds to wake are those a look at every member finds, in
// the same order, one colleague or all of them.
func mustSameServers(tb testing.TB, st *org.State, where string) int {
	tb.Helper()
	n := 0
	for _, tk := range st.Tasks() {
		if tk.Status != org.StatusOpen {
			continue
		}
		for _, one := range []bool{true, false} {
			got, want := st.Servers(tk, one, true), st.Servers(tk, one, false)
			if !reflect.DeepEqual(got, want) {
				tb.Fatalf("%s at seq %d, task %s (queue %q), one colleague %v: the index wakes %v, the scan %v", where, st.LastSeq, tk.ID, tk.Queue, one, got, want)
			}
			n += len(want)
		}
	}
	return n
}

// TestWakeIndexFindsWhomTheScanFinds plays every shipped world and a desk
// of 150 serving colleagues in two queues, with agent seats among them
// (more than a word of the index's sets, seats between colleagues in
// member order) and leaves, and compares whom wakeServers wakes by its
// index with a look at every member: at every call (CheckWakeIndex), and
// for every open task in states along the way.
func TestWakeIndexFindsWhomTheScanFinds(t *testing.T) {
	defer org.CheckWakeIndex()()
	type world struct {
		name string
		w    *worlds.World
	}
	var ws []world
	shipped := simtest.Shipped(t)
	for _, name := range simtest.ShippedWorlds {
		ws = append(ws, world{name, shipped[name]})
	}
	var b strings.Builder
	b.WriteString(`version: 1
name: wide-desk
start: 2026-01-05T00:00:00Z
horizon: 3d
calendar: {hours: "00:00-24:00", workdays: [mon, tue, wed, thu, fri, sat, sun]}
roles: [{id: server}, {id: lead}]
teams: [{id: desk}]
members:
`)
	for i := 1; i <= 150; i++ {
		serves := "[front]"
		switch i % 3 {
		case 1:
			serves = "[back]"
		case 2:
			serves = "[front, back]"
		}
		fmt.Fprintf(&b, "  - {id: m%03d, role: server, team: desk, npc: {reply: {min: 0s, max: 0s}, serves: %s}}\n", i, serves)
		if i%40 == 0 {
			fmt.Fprintf(&b, "  - {id: m%03da, role: server, team: desk}\n", i)
		}
	}
	b.WriteString(`  - {id: lead, role: lead, team: desk}
queues:
  - {id: front, served_by: [server], order: priority}
  - {id: back, served_by: [server], order: fifo}
arrivals:
  - {id: f, queue: front, process: poisson, every: 20s, count: 3000, ticket: {title: F, role: server, effort: {mean: 40m}, value: 1, priority: {"1": 7, "3": 3}}}
  - {id: b, queue: back, process: poisson, every: 40s, count: 1500, ticket: {title: B, role: server, effort: {mean: 30m}, value: 1}}
interruptions:
  - {at: 2h, kind: leave, member: m002, for: 6h}
  - {at: 3h, kind: leave, member: m070, for: 2h}
  - {at: 4h, kind: leave, member: m080a, for: 3h}
`)
	w, err := worlds.Load("wide-desk.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, world{"wide-desk", w})
	checks := map[string]int{}
	for _, wd := range ws {
		t.Run(wd.name, func(t *testing.T) {
			e, err := sim.New(sim.Config{World: wd.w, Seed: 5, Session: "s", Load: 2})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			batches, woken := 0, 0
			err = sim.Play(e, func([]events.Event) bool {
				if batches++; batches%10 == 0 {
					woken += mustSameServers(t, e.State(), fmt.Sprintf("batch %d", batches))
				}
				return batches < 20000
			}, simtest.Greedy, 0)
			if err != nil && err != sim.ErrStopped {
				t.Fatal(err)
			}
			checks[wd.name] = e.State().WakeChecks()
			t.Logf("%d batches, %d calls checked, %d members found in states along the way", batches, e.State().WakeChecks(), woken)
		})
	}
	if checks["wide-desk"] < 1000 || checks["support-desk"] < 100 || checks["portfolio"] < 100 {
		t.Fatalf("calls checked by world: %v; too few to hold the index to anything", checks)
	}
}
