package payload

import (
	"encoding/json"
	"testing"
	"time"
)

// A hidden constraint allows or refuses a meeting by its day, its times
// of day and its length.
func TestMeetingRuleAllows(t *testing.T) {
	mon := func(h, m int) time.Time { return time.Date(2026, 2, 2, h, m, 0, 0, time.UTC) } // a Monday
	tue := func(h, m int) time.Time { return time.Date(2026, 2, 3, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name       string
		r          MeetingRule
		start, end time.Time
		want       bool
	}{
		{"none", MeetingRule{}, mon(9, 0), mon(10, 0), true},
		{"monday before 10", MeetingRule{Days: []string{"mon"}, Earliest: "10:00"}, mon(9, 30), mon(10, 30), false},
		{"monday at 10", MeetingRule{Days: []string{"mon"}, Earliest: "10:00"}, mon(10, 0), mon(11, 0), true},
		{"tuesday before 10", MeetingRule{Days: []string{"mon"}, Earliest: "10:00"}, tue(9, 0), tue(9, 30), true},
		{"not on mondays", MeetingRule{Days: []string{"mon"}}, mon(14, 0), mon(15, 0), false},
		{"not on mondays, tuesday", MeetingRule{Days: []string{"mon"}}, tue(14, 0), tue(15, 0), true},
		{"ends after latest", MeetingRule{Latest: "15:00"}, tue(14, 30), tue(15, 30), false},
		{"ends at latest", MeetingRule{Latest: "15:00"}, tue(14, 0), tue(15, 0), true},
		{"too long", MeetingRule{Max: 3_600_000}, tue(9, 0), tue(10, 30), false},
		{"long enough", MeetingRule{Max: 3_600_000}, tue(9, 0), tue(10, 0), true},
		{"window both sides", MeetingRule{Earliest: "10:00", Latest: "16:00"}, tue(15, 30), tue(16, 30), false},
		// A rule applies on its days only, max too, and days with a max
		// are not days alone: they bound the length on those days.
		{"too long on monday", MeetingRule{Days: []string{"mon"}, Max: 1_800_000}, mon(9, 0), mon(10, 0), false},
		{"short on monday", MeetingRule{Days: []string{"mon"}, Max: 1_800_000}, mon(9, 0), mon(9, 30), true},
		{"long on tuesday", MeetingRule{Days: []string{"mon"}, Max: 1_800_000}, tue(9, 0), tue(11, 0), true},
		// Latest is kept to the second.
		{"ends 30s after latest", MeetingRule{Latest: "15:00"}, tue(14, 0).Add(30 * time.Second), tue(15, 0).Add(30 * time.Second), false},
	} {
		if got := tc.r.Allows(tc.start, tc.end); got != tc.want {
			t.Errorf("%s: Allows = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Names encode as a JSON list and read back; an empty id is refused.
func TestNamesJSON(t *testing.T) {
	a := Action{Type: "schedule_meeting", Attendees: NewNames("dana", "eli")}
	b, err := json.Marshal(a)
	if err != nil || string(b) != `{"type":"schedule_meeting","attendees":["dana","eli"]}` {
		t.Fatalf("got %s, %v", b, err)
	}
	if got := string(AppendAction(nil, &a)); got != string(b) {
		t.Fatalf("AppendAction wrote %s, json.Marshal %s", got, b)
	}
	var back Action
	if err := json.Unmarshal(b, &back); err != nil || back != a {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"x","attendees":["a",""]}`), &back); err == nil {
		t.Fatal("an empty attendee id was read")
	}
}
