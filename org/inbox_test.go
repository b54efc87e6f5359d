package org_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// TestInboxAndPendingAreTheScan plays every shipped world with greedy and
// random agents, who message colleagues and ask for approvals, and holds
// what a simulated colleague decides from — each member's messages with
// no reply (Unanswered) and the pending requests (PendingRequests) — to a
// scan of every message and request of the session, state after state:
// the same ones in the same order.
func TestInboxAndPendingAreTheScan(t *testing.T) {
	messages, requests := 0, 0
	for _, name := range worlds.Names() {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "support-desk-bench" {
			continue // no messages, 200,000 tickets
		}
		e, err := sim.New(sim.Config{World: w, Seed: 5, Session: "s", Load: 4})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		batches := 0
		err = sim.Play(e, func([]events.Event) bool {
			if batches++; batches%5 == 0 {
				st := e.State()
				var want []*org.Request
				for _, r := range st.Requests {
					if r.Status == org.RequestPending {
						want = append(want, r)
					}
				}
				if got := st.PendingRequests(); !slices.Equal(got, want) {
					t.Fatalf("%s at seq %d: %d requests pending by the list, %d by the scan", name, st.LastSeq, len(got), len(want))
				}
				requests += len(want)
				for _, m := range st.Members {
					var want []*org.Message
					for _, msg := range st.Messages {
						if msg.To == m.ID && !msg.Answered {
							want = append(want, msg)
						}
					}
					if got := st.Unanswered(m.ID); !slices.Equal(got, want) {
						t.Fatalf("%s at seq %d: %s has %d messages with no reply by the inbox, %d by the scan", name, st.LastSeq, m.ID, len(got), len(want))
					}
					messages += len(want)
				}
			}
			return batches < 20000
		}, simtest.Mixed(3, 11), 0)
		if err != nil && err != sim.ErrStopped {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages with no reply and %d pending requests compared", messages, requests)
	if messages < 1000 || requests < 100 {
		t.Fatalf("%d messages and %d requests compared: too few to hold the lists to anything", messages, requests)
	}
}
