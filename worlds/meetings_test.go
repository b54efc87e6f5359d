package worlds

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// The meetings world's calendars: busy blocks drawn per seed into records
// of type busy (the same for one seed, different for another), each
// within working hours on a working day and not overlapping its member's
// other blocks; one constraint drawn per member; a step's meeting read.
func TestMeetingsAvailability(t *testing.T) {
	w := mustLoadFile(t, "shipped/meetings.yaml")
	a := w.Availability
	if a == nil || a.Record != "busy" || len(a.Members) != 5 || a.PerMin != 0 || a.PerMax != 2 || a.LenMax != 2*clock.Hour {
		t.Fatalf("availability = %+v", a)
	}
	one, again, other := w.BusyBlocks(NewDraws(1, nil)), w.BusyBlocks(NewDraws(1, nil)), w.BusyBlocks(NewDraws(2, nil))
	if len(one) == 0 || len(one) != len(again) {
		t.Fatalf("seed 1 drew %d blocks, then %d", len(one), len(again))
	}
	same := len(one) == len(other)
	type span struct{ s, e time.Time }
	byMember := map[string][]span{}
	for i, r := range one {
		if r.Fields["start"] != again[i].Fields["start"] {
			t.Fatalf("block %d differs between two draws of seed 1", i)
		}
		if same && r.Fields["start"] != other[i].Fields["start"] {
			same = false
		}
		s, err1 := time.Parse(time.RFC3339, r.Fields["start"].(string))
		e, err2 := time.Parse(time.RFC3339, r.Fields["end"].(string))
		if err1 != nil || err2 != nil || r.Type != "busy" || r.Fields["meeting"] != "" {
			t.Fatalf("block %+v", r)
		}
		if s.Hour() < 9 || e.Hour() > 17 || e.Hour() == 17 && e.Minute() > 0 || s.YearDay() != e.YearDay() ||
			s.Weekday() == time.Saturday || s.Weekday() == time.Sunday || e.Sub(s) < 30*time.Minute || e.Sub(s) > 2*time.Hour {
			t.Errorf("block %s %s-%s is outside working hours or its lengths", r.ID, s, e)
		}
		m := r.Fields["member"].(string)
		for _, o := range byMember[m] {
			if s.Before(o.e) && o.s.Before(e) {
				t.Errorf("block %s overlaps another of %s", r.ID, m)
			}
		}
		byMember[m] = append(byMember[m], span{s, e})
	}
	if same {
		t.Error("seeds 1 and 2 drew the same calendars")
	}
	if len(byMember) != 5 {
		t.Errorf("calendars of %d members, want 5", len(byMember))
	}
	recs := w.SeedRecords(NewDraws(1, nil))
	if n := len(recs); n != len(one) {
		t.Errorf("SeedRecords has %d records, want the %d busy blocks", n, len(one))
	}
	// One constraint per member per seed, said in words.
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		c := a.Constraint(NewDraws(seed, nil), "dev")
		if c == nil {
			t.Fatal("dev has no constraint")
		}
		seen[c.Render("Dev")] = true
	}
	if len(seen) != 4 || !seen["No meetings before 13:00 on Mondays, Wednesdays and Fridays."] || !seen["Tuesdays and Thursdays I start at 13:00."] {
		t.Errorf("dev's constraints over 20 seeds: %v, want all four", seen)
	}
	said := map[string]bool{} // lou's rules, the third a template over its max
	for seed := uint64(1); seed <= 30; seed++ {
		said[a.Constraint(NewDraws(seed, nil), "lou").Render("Lou")] = true
	}
	if !said["Nothing longer than 1h, please."] || !said["Not on Fridays: I am in court."] || len(said) != 3 {
		t.Errorf("lou's constraints over 30 seeds: %v, want the three, {{.max}} rendered", said)
	}
	if a.Constraint(NewDraws(1, nil), "cara") != nil || a.Answer(NewDraws(1, nil), "cara", "Cara") != NoConstraint {
		t.Error("cara has a constraint")
	}
	c, _ := w.CaseTemplate("design-review")
	m := c.Steps[0].Meeting
	if m == nil || len(m.Attendees) != 1 || m.Attendees[0] != "lou" || len(m.Attrs) != 2 || m.Length != clock.Hour || m.To != 4*8*clock.Hour {
		t.Fatalf("meeting = %+v", m)
	}
	x := w.Expect(m, "book", 0, map[string]any{"designer": "dana", "engineer": "eli"}, NewDraws(1, nil))
	if strings.Join(x.Attendees, ",") != "lou,dana,eli" || x.From != 0 || x.To != w.Calendar.AddWork(0, 32*clock.Hour) || len(x.Rules) != 3 {
		t.Errorf("expected meeting %+v", x)
	}
}

// Every mistake in availability or a step's meeting is refused where it is.
func TestMeetingsErrors(t *testing.T) {
	base, err := os.ReadFile("shipped/meetings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"version 1", "version: 2", "version: 1", "availability needs version: 2"},
		{"unknown record type", "  record: busy", "  record: bsy", `availability.record: unknown record type "bsy"`},
		{"record type without its fields", "          end: {type: date-time}\n", "", "record type busy needs a date-time field end"},
		{"no meeting field", "          meeting: {type: text}   # the meeting's id; empty for a drawn block\n", "", "record type busy needs a text field meeting"},
		{"meeting field not text", "          meeting: {type: text}", "          meeting: {type: bool}", "field meeting must be text"},
		{"unknown member", "  members: [dana, dev, eli, ema, lou]", "  members: [dana, dev, eli, ema, lu]", `availability.members[4]: unknown member "lu"`},
		{"bad per_day", "{min: 0, max: 2}", "{min: 3, max: 2}", "availability.per_day: blocks per day"},
		{"length not half hours", "length: {min: 30m, max: 2h}", "length: {min: 20m, max: 2h}", "whole half hours"},
		{"length not a duration", "length: {min: 30m, max: 2h}", "length: {min: 30m, max: two}", "availability.length.max"},
		{"block longer than a day", "length: {min: 30m, max: 2h}", "length: {min: 30m, max: 9h}", "does not fit a working day"},
		{"days out of range", "  per_day: {min: 0, max: 2}", "  days: 99\n  per_day: {min: 0, max: 2}", "availability.days: draw 1 to 60"},
		{"constraint of an unknown member", "    dana:\n", "    dna:\n", `availability.constraints.dna: unknown member "dna"`},
		{"unknown day", "{days: [mon, wed, fri], latest", "{days: [monday, wed, fri], latest", `availability.constraints.dana[0].days[0]: unknown day "monday"`},
		{"bad time of day", `earliest: "13:00"`, `earliest: "13h"`, `availability.constraints.dana[1].earliest: a time of day`},
		{"earliest after latest", `{earliest: "10:00", latest: "16:00"`, `{earliest: "16:00", latest: "10:00"`, "earliest 16:00 is not before latest 10:00"},
		{"bad max", "{max: 1h,", "{max: soon,", "availability.constraints.lou[2].max"},
		{"no says", `, says: "Not before 13:00 on Mondays, Wednesdays and Fridays."}`, `}`, "availability.constraints.eli[1].says: say how eli puts"},
		{"bad says template", `says: "Nothing longer than {{.max}}, please."`, `says: "Nothing longer than {{.maxi}}, please."`, "bad text template"},
		{"unknown attendee", "attendees: [eli, ema]", "attendees: [eli, emma]", `cases[1].steps[0].meeting.attendees[1]: unknown member or attribute "emma"`},
		{"attribute not a member", "designer: {one_of: [dana, dev]}", "designer: {one_of: [dana, dave]}", `attribute "designer" may be "dave", which is not a member`},
		{"attribute not a choice", "attendees: [designer, engineer, lou]", "attendees: [designer, engineer, lou, feature2]", `unknown member or attribute "feature2"`},
		{"no attendees", "attendees: [eli, ema]", "attendees: []", "a meeting needs attendees"},
		{"no window", "          window: {from: 0h, to: 3d}\n", "", "cases[1].steps[0].meeting.window: a meeting needs its window"},
		{"window backwards", "window: {from: 0h, to: 3d}", "window: {from: 4d, to: 3d}", "the window ends (3d) before it starts (4d)"},
		{"length missing", "          length: 30m\n", "", "cases[1].steps[0].meeting.length: missing duration"},
		{"length too long", "          length: 30m\n", "          length: 9h\n", "a meeting lasts at most 8h"},
		{"length beyond the window", "window: {from: 0h, to: 3d}", "window: {from: 0h, to: 20m}", "does not fit its window"},
		{"unknown field", "          length: 30m\n", "          length: 30m\n          room: a1\n", `unknown field "room"`},
		{"meeting without availability", "availability:\n  record: busy", "unused:\n  record: busy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := string(base)
			if !strings.Contains(src, tc.old) {
				t.Fatalf("the world has no %q", tc.old)
			}
			src = strings.Replace(src, tc.old, tc.new, 1)
			if tc.want == "" {
				// Without the section the file has an unknown top-level
				// field; drop it whole and the meetings are refused.
				i := strings.Index(src, "unused:")
				j := strings.Index(src, "\ncases:")
				src = src[:i] + src[j+1:]
				tc.want = "a meeting needs the world's availability"
			}
			_, err := Load("m.yaml", []byte(src))
			if err == nil {
				t.Fatalf("loaded; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.yaml:") {
				t.Fatalf("got %v, want m.yaml:line:col … %q", err, tc.want)
			}
			for _, e := range err.(ErrorList) {
				if e.Line == 0 || e.Column == 0 {
					t.Fatalf("error %v has no position", e)
				}
			}
		})
	}
}

// A recorded world whose busy blocks' record type has no meeting field
// still loads, as it did when it was recorded (its meetings then failed
// free against their own blocks).
func TestMeetingFieldRecorded(t *testing.T) {
	base, err := os.ReadFile("shipped/meetings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(base), "          meeting: {type: text}   # the meeting's id; empty for a drawn block\n", "", 1)
	if _, err := LoadLimited("m.yaml", []byte(src), Limits{Recorded: true}); err != nil {
		t.Fatalf("recorded: %v", err)
	}
}
