package app

import (
	"encoding/json"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// sameActions agrees with comparing the two lists as json.Marshal writes
// them, which is what "decided as the log recorded" means.
func TestSameActionsIsEqualAsWritten(t *testing.T) {
	claim := org.Action{Type: org.ActClaim, Task: "t-1"}
	work := org.Action{Type: org.ActWork, Task: "t-1", For: "2h"}
	meet := org.Action{Type: org.ActScheduleMeeting, Attendees: payload.NewNames("dana", "eli"), Start: "2026-02-02T10:00:00Z"}
	open := org.Action{Type: org.ActOpenCase, Template: "refund", Attributes: payload.NewActionAttrs(payload.Attrs{"amount": 5})}
	for _, tc := range []struct {
		name              string
		decided, recorded []org.Action
	}{
		{"both empty", nil, []org.Action{}},
		{"the same", []org.Action{claim, work, meet, open}, []org.Action{claim, work, meet, open}},
		{"one more", []org.Action{claim, work}, []org.Action{claim}},
		{"another task", []org.Action{claim}, []org.Action{{Type: org.ActClaim, Task: "t-2"}}},
		{"another stint", []org.Action{work}, []org.Action{{Type: org.ActWork, Task: "t-1", For: "1h"}}},
		{"other attendees", []org.Action{meet}, []org.Action{{Type: org.ActScheduleMeeting, Attendees: payload.NewNames("dana"), Start: meet.Start}}},
		{"other attributes", []org.Action{open}, []org.Action{{Type: org.ActOpenCase, Template: "refund", Attributes: payload.NewActionAttrs(payload.Attrs{"amount": 6})}}},
		{"in another order", []org.Action{work, claim}, []org.Action{claim, work}},
	} {
		a, _ := json.Marshal(tc.decided)
		b, _ := json.Marshal(tc.recorded)
		want := len(tc.decided) == len(tc.recorded) && (len(tc.decided) == 0 || string(a) == string(b))
		if got := sameActions(tc.decided, tc.recorded); got != want {
			t.Errorf("%s: sameActions = %v; want %v (%s and %s)", tc.name, got, want, a, b)
		}
	}
}
