package agents

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// shiftObs is an observation at 10:00 of a member whose shift, with
// handover required, ends at end; ann of the same role works next.
func shiftObs(end clock.Time, held ...org.TaskView) org.Observation {
	now := clock.Time(10 * clock.Hour)
	return org.Observation{Member: "bob", Role: "op", Time: now, Assigned: held,
		Shift: &org.ShiftView{Ends: end, Handover: true,
			Next: []org.ShiftMate{{ID: "ann", Role: "op", From: end, Until: end + clock.Time(8*clock.Hour)}}}}
}

func TestHandoffsReleaseUnderwayCaseSteps(t *testing.T) {
	end := clock.Time(10*clock.Hour + 20*clock.Minute)
	fresh := org.TaskView{ID: "c1.triage", Role: "op", Case: "c1", Step: "triage"}
	underway := org.TaskView{ID: "c2.verify", Role: "op", Case: "c2", Step: "verify"}
	task := org.TaskView{ID: "spec", Role: "op"}
	o := shiftObs(end, fresh, underway, task)
	o.Cases = []org.CaseView{{ID: "c1", Steps: []string{"c1.triage"}}, {ID: "c2", Steps: []string{"c2.act", "c2.verify"}, Done: []string{"c2.act"}}}
	got := handoffs(o)
	want := []org.Action{
		{Type: org.ActHandoff, Task: "c1.triage", To: "ann"},
		{Type: org.ActHandoff, Task: "c2.verify"}, // back to the queue: ann may have done c2.act
		{Type: org.ActHandoff, Task: "spec", To: "ann"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hand-off %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestApprovalFits(t *testing.T) {
	for _, tc := range []struct {
		name string
		left clock.Duration
		want bool
	}{
		{"shift ends in 3h", 3 * clock.Hour, true},
		{"shift ends in 1h", clock.Hour, false},
		{"shift ends in 1h30m", handoverReserve + approvalWindow, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := shiftObs(clock.Time(10*clock.Hour) + clock.Time(tc.left))
			if got := approvalFits(o); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !approvalFits(org.Observation{}) {
		t.Errorf("without a shift: got false, want true")
	}
}

func TestShiftWaitPolls(t *testing.T) {
	held := org.TaskView{ID: "c1.order", Role: "op", Approval: org.RequestPending}
	now := clock.Time(10 * clock.Hour)
	for _, tc := range []struct {
		name  string
		end   clock.Time
		until clock.Time
		want  clock.Time
	}{
		{"long shift: poll", now + clock.Time(6*clock.Hour), 0, now + clock.Time(shiftPoll)},
		{"earlier wake kept", now + clock.Time(6*clock.Hour), now + clock.Time(5*clock.Minute), now + clock.Time(5*clock.Minute)},
		{"reserve first", now + clock.Time(40*clock.Minute), 0, now + clock.Time(10*clock.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shiftWait(shiftObs(tc.end, held), tc.until)
			if got.Type != org.ActWait || clock.Time(got.Until) != tc.want {
				t.Errorf("got %+v, want a wait until %d", got, tc.want)
			}
		})
	}
}
