package org_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// A long inbox is paged: each observation delivers at most the session's
// inbox limit, oldest first, says how many are left, and the turn consumes
// exactly what was shown; every message is delivered once.
func TestInboxIsPagedNotCut(t *testing.T) {
	const sent, limit = 7, 3
	evs := []payload.SessionStarted{{Format: payload.LogFormat, World: "startup", Seed: 1, Limits: org.Limits{Inbox: limit}}}
	st := mustState(t, ev(t, 1, 0, payload.EvSessionStarted, "", evs[0]))
	seq := uint64(2)
	for i := range sent {
		id := fmt.Sprintf("m%d", i)
		mustApply(t, st, ev(t, seq, 0, payload.EvMessageSent, "alice", payload.MessageSent{Message: id, To: "bob", Text: id, DeliverAt: clock.Time(hour)}))
		seq++
	}
	for i := range sent {
		mustApply(t, st, ev(t, seq, hour, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: fmt.Sprintf("m%d", i)}))
		seq++
	}
	var got []string
	for turn := uint64(1); ; turn++ {
		o := st.View("bob")
		left := sent - len(got)
		if want := min(left, limit); len(o.Inbox) != want || o.InboxMore != left-want {
			t.Fatalf("turn %d: inbox of %d with %d more, want %d with %d more", turn, len(o.Inbox), o.InboxMore, want, left-want)
		}
		for _, m := range o.Inbox {
			got = append(got, m.ID)
		}
		read := 0
		if o.InboxMore > 0 {
			read = len(o.Inbox)
		}
		mustApply(t, st, ev(t, seq, hour, payload.EvTurn, "bob", payload.Turn{Turn: turn, Seen: seq - 1, Actions: []org.Action{}, BusyUntil: clock.Time(hour), InboxRead: read}))
		seq++
		if o.InboxMore == 0 {
			break
		}
	}
	want := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6"}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want each message once in order %v", got, want)
	}
	if o := st.View("bob"); len(o.Inbox) != 0 {
		t.Fatalf("inbox not empty after the last page: %v", o.Inbox)
	}
	// The limits survive a checkpoint.
	back, err := org.Restore(st.World, st.Snapshot())
	if err != nil || back.Limits != st.Limits || back.Hash() != st.Hash() {
		t.Fatalf("Restore: limits %+v (want %+v), err %v", back.Limits, st.Limits, err)
	}
}

func TestLimitsDefaultsAndValidation(t *testing.T) {
	st := mustState(t, started(t))
	if st.Limits != (org.Limits{Listed: org.DefaultListed, Inbox: org.DefaultInbox, MessageBytes: org.DefaultMessageBytes}) {
		t.Fatalf("default limits: %+v", st.Limits)
	}
	bad := org.New(mustWorld(t))
	if err := bad.Apply(ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "startup", Limits: org.Limits{Inbox: -1}})); err == nil {
		t.Fatal("a negative limit was accepted")
	}
}

func TestLimitsCompact(t *testing.T) {
	spelled := org.Limits{Listed: org.DefaultListed, Inbox: 5, MessageBytes: org.DefaultMessageBytes}
	if got := spelled.Compact(); got != (org.Limits{Inbox: 5}) {
		t.Fatalf("Compact(%+v) = %+v, want only the non-default inbox", spelled, got)
	}
	if got := (org.Limits{}).WithDefaults().Compact(); got != (org.Limits{}) {
		t.Fatalf("the defaults compact to %+v, want zero", got)
	}
}
