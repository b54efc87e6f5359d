package worlds

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/clock"
)

func mustRota(tb testing.TB) []byte {
	tb.Helper()
	src, err := os.ReadFile("testdata/rota.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// editRota applies replacements (old, new, …) to testdata/rota.yaml; each
// old must occur exactly once.
func editRota(tb testing.TB, edits ...string) []byte {
	tb.Helper()
	src := string(mustRota(tb))
	for i := 0; i+1 < len(edits); i += 2 {
		if n := strings.Count(src, edits[i]); n != 1 {
			tb.Fatalf("editRota: %q occurs %d times, want 1", edits[i], n)
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	return []byte(src)
}

func TestLoadRota(t *testing.T) {
	w := mustLoad(t, "rota.yaml", mustRota(t))
	if _, err := load("rota.yaml", mustRota(t), 1, Limits{}, nil); err != nil {
		t.Fatalf("load in parts: %v", err)
	}
	if got := w.Calendar.Start.Location().String(); got != "Europe/Warsaw" {
		t.Errorf("company zone: got %s, want Europe/Warsaw", got)
	}
	desk, eng := w.Team("desk"), w.Team("eng")
	if len(desk.Shifts) != 3 || desk.Coverage != Coverage247 || desk.Handover != HandoverRequired {
		t.Fatalf("desk: got %d shifts, coverage %q, handover %q", len(desk.Shifts), desk.Coverage, desk.Handover)
	}
	if eng.Calendar == nil || eng.Calendar.Start.Location().String() != "Asia/Tokyo" {
		t.Fatalf("eng: calendar %+v, want one in Asia/Tokyo", eng.Calendar)
	}
	// The night shift starts at 22:00 in Warsaw: 21:00 UTC on 2026-03-23 (CET).
	cat, _ := w.Member("cat")
	if !cat.OnShift {
		t.Errorf("cat: not on a shift")
	}
	if got, want := w.MemberSchedule("cat").NextWorking(0), clock.Time(13*clock.Hour); got != want {
		t.Errorf("cat's first night starts at %d, want %d (21:00 UTC)", got, want)
	}
	// eve works 10:00-18:00 in Tokyo: 01:00 UTC; 2026-03-24 is her first day
	// (the start, 08:00 UTC, is 17:00 in Tokyo: one hour of the 23rd is left).
	if got, want := w.MemberSchedule("eve").NextWorking(0), clock.Time(0); got != want {
		t.Errorf("eve works at the start: got %d, want %d", got, want)
	}
	if got, want := w.MemberSchedule("eve").AddWork(0, 2*clock.Hour), clock.Time(18*clock.Hour); got != want {
		t.Errorf("eve's two hours end at %d, want %d (02:00 UTC the next day)", got, want)
	}
	// Her deadlines follow the team calendar; the desk's its rota, round the clock.
	if got, want := w.TeamSchedule("desk").AddWork(0, 24*clock.Hour), clock.Time(24*clock.Hour); got != want {
		t.Errorf("desk: a day of work ends at %d, want %d", got, want)
	}
	if w.TeamSchedule("eng") != clock.Schedule(eng.Calendar) {
		t.Errorf("eng's team schedule is not its calendar")
	}
	if _, err := time.LoadLocation("Asia/Tokyo"); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRotaErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{
			name:  "unknown time zone",
			edits: []string{"timezone: Europe/Warsaw", "timezone: Europe/Gdansk"},
			want:  `rota.yaml:11:13: calendar.timezone: unknown time zone "Europe/Gdansk" (expected an IANA name such as Europe/Warsaw or UTC)`,
		},
		{
			name:  "unknown team time zone",
			edits: []string{"timezone: Asia/Tokyo", "timezone: Local"},
			want:  `rota.yaml:30:17: teams[1].calendar.timezone: unknown time zone "Local" (expected an IANA name such as Europe/Warsaw or UTC)`,
		},
		{
			name:  "bad shift hours",
			edits: []string{`hours: "14:00-22:00"`, `hours: "14:00-25:00"`},
			want:  `rota.yaml:23:27: teams[0].shifts[1].hours: expected hours like "09:00-17:00" or "22:00-06:00", got "14:00-25:00"`,
		},
		{
			name:  "empty shift hours",
			edits: []string{`hours: "14:00-22:00"`, `hours: "14:00-14:00"`},
			want:  `rota.yaml:23:27: teams[0].shifts[1].hours: the hours are empty, got "14:00-14:00" ("00:00-24:00" is the whole day)`,
		},
		{
			name:  "shift member not in the team",
			edits: []string{"members: [ben]", "members: [eve]"},
			want:  `rota.yaml:23:52: teams[0].shifts[1].members[0]: eve is in team eng, not desk: only a team's members work its shifts`,
		},
		{
			name:  "shift member unknown",
			edits: []string{"members: [ben]", "members: [bob]"},
			want:  `rota.yaml:23:52: teams[0].shifts[1].members[0]: unknown member "bob"`,
		},
		{
			name:  "member on overlapping shifts",
			edits: []string{"members: [cat]", "members: [cat, ann]", `hours: "06:00-14:00"`, `hours: "05:00-14:00"`},
			want:  `rota.yaml:24:58: teams[0].shifts[2].members[1]: ann is on shifts "early" and "night", which overlap at mon 05:00`,
		},
		{
			name:  "24/7 coverage gap",
			edits: []string{`hours: "14:00-22:00"`, `hours: "14:00-21:30"`},
			want:  `rota.yaml:19:15: teams[0].coverage: 24/7 coverage leaves queue "alerts" unserved at mon 21:30: no shift has a member serving it then`,
		},
		{
			name:  "24/7 coverage gap on a weekday",
			edits: []string{`{id: night, hours: "22:00-06:00", members: [cat]}`, `{id: night, hours: "22:00-06:00", days: [mon, tue, wed, thu, fri, sat], members: [cat]}`},
			want:  `rota.yaml:19:15: teams[0].coverage: 24/7 coverage leaves queue "alerts" unserved at sun 22:00: no shift has a member serving it then`,
		},
		{
			name:  "missing shift hours",
			edits: []string{`{id: late, hours: "14:00-22:00", members: [ben]}`, `{id: late, members: [ben]}`},
			want:  `rota.yaml:23:9: teams[0].shifts[1].hours: missing shift hours, such as "22:00-06:00"`,
		},
		{
			name:  "shift without members",
			edits: []string{"members: [ben]", "members: []"},
			want:  `rota.yaml:23:51: teams[0].shifts[1].members: shift "late" has no members`,
		},
		{
			name:  "duplicate shift id",
			edits: []string{"{id: late,", "{id: early,"},
			want:  `rota.yaml:23:14: teams[0].shifts[1].id: duplicate shift id "early" (first defined at teams[0].shifts[0].id)`,
		},
		{
			name:  "coverage without shifts",
			edits: []string{"    budget: 10000\n    calendar:", "    budget: 10000\n    coverage: 24/7\n    calendar:"},
			want:  `rota.yaml:28:15: teams[1].coverage: 24/7 coverage needs shifts: the team has none`,
		},
		{
			name:  "unknown coverage",
			edits: []string{"coverage: 24/7", "coverage: always"},
			want:  `rota.yaml:19:15: teams[0].coverage: unknown coverage "always" (expected 24/7)`,
		},
		{
			name:  "unknown handover",
			edits: []string{"handover: required", "handover: maybe"},
			want:  `rota.yaml:20:15: teams[0].handover: unknown handover "maybe" (expected required or optional)`,
		},
		{
			name:  "bad shift day",
			edits: []string{`{id: early, hours: "06:00-14:00", members: [ann]}`, `{id: early, hours: "06:00-14:00", days: [monday], members: [ann]}`},
			want:  `rota.yaml:22:50: teams[0].shifts[0].days[0]: unknown weekday "monday" (expected mon, tue, wed, thu, fri, sat or sun)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("rota.yaml", editRota(t, tt.edits...))
			if err == nil {
				t.Fatalf("Load: no error, want %s", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load error:\ngot  %s\nwant %s", got, tt.want)
			}
			// Read a part at a time (as a large file is), the same errors.
			if _, err := load("rota.yaml", editRota(t, tt.edits...), 1, Limits{}, nil); err == nil || err.Error() != tt.want {
				t.Errorf("load in parts: got error %v, want %s", err, tt.want)
			}
		})
	}
}

// TestRotaNeedsVersion2 checks that each calendar construct is refused by
// name in a version 1 file.
func TestRotaNeedsVersion2(t *testing.T) {
	v1 := func(edits ...string) []byte {
		return editRota(t, append([]string{"version: 2", "version: 1"}, edits...)...)
	}
	_, err := Load("rota.yaml", v1())
	want := []string{
		`rota.yaml:11:13: calendar.timezone: a time zone needs version: 2 (this file declares version 1)`,
		`rota.yaml:19:15: teams[0].coverage: coverage needs version: 2 (this file declares version 1)`,
		`rota.yaml:20:15: teams[0].handover: handover needs version: 2 (this file declares version 1)`,
		`rota.yaml:21:5: teams[0].shifts: shifts needs version: 2 (this file declares version 1)`,
		`rota.yaml:28:5: teams[1].calendar: a team calendar needs version: 2 (this file declares version 1)`,
	}
	if err == nil {
		t.Fatalf("Load: no error, want %s", strings.Join(want, "\n"))
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("Load errors:\ngot  %s\nwant %s", got, strings.Join(want, "\n"))
	}
}

// TestLoadWeeklyRotation checks that with rotate: weekly the members of
// each shift's list move on to the next shift every Monday (Warsaw time).
func TestLoadWeeklyRotation(t *testing.T) {
	w := mustLoad(t, "rota.yaml", editRota(t, "handover: required", "handover: required\n    rotate: weekly"))
	// Time 0 is Monday 2026-03-23 08:00 UTC (09:00 CET); from the 29th, CEST.
	at := func(day, h int) clock.Time { // UTC hour h on March day
		return clock.Time(time.Date(2026, 3, day, h, 0, 0, 0, time.UTC).Sub(time.Date(2026, 3, 23, 8, 0, 0, 0, time.UTC)).Milliseconds())
	}
	tests := []struct {
		member   string
		from     clock.Time
		want     clock.Time // the next working instant
		wantEnds clock.Time
	}{
		{"ann", at(23, 8), at(23, 8), at(23, 13)},   // week 1: early, 06:00-14:00 CET
		{"ann", at(30, 0), at(30, 12), at(30, 20)},  // week 2: late, 14:00-22:00 CEST
		{"ann", at(31, 0), at(31, 12), at(31, 20)},  //
		{"ann", at(37, 0), at(37, 20), at(38, 4)},   // week 3 (from Monday April 6): nights, the first Monday 22:00 CEST
		{"ben", at(30, 0), at(30, 20), at(31, 4)},   // week 2: nights; Sunday the 29th's night began in week 1, cat's
		{"cat", at(28, 0), at(28, 0), at(28, 5)},    // week 1: Friday's night shift is on
		{"cat", at(29, 12), at(29, 20), at(30, 12)}, // Sunday's night, then early from Monday: one span
	}
	for _, tt := range tests {
		s := w.MemberSchedule(tt.member)
		if got := s.NextWorking(tt.from); got != tt.want {
			t.Errorf("%s from %s: next working %s, want %s", tt.member, w.Calendar.Wall(tt.from), w.Calendar.Wall(got), w.Calendar.Wall(tt.want))
		}
		if got := s.PeriodEnd(tt.from); got != tt.wantEnds {
			t.Errorf("%s from %s: period ends %s, want %s", tt.member, w.Calendar.Wall(tt.from), w.Calendar.Wall(got), w.Calendar.Wall(tt.wantEnds))
		}
	}
}

func TestLoadRotationErrors(t *testing.T) {
	rotating := []string{"handover: required", "handover: required\n    rotate: weekly"}
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{
			name:  "unknown rotate",
			edits: []string{"handover: required", "handover: required\n    rotate: daily"},
			want:  `rota.yaml:21:13: teams[0].rotate: unknown rotate "daily" (expected weekly)`,
		},
		{
			name:  "member on two lists",
			edits: append(rotating, "members: [cat]", "members: [cat, ann]"),
			want:  `rota.yaml:25:58: teams[0].shifts[2].members[1]: ann is also listed on shift "early": with rotate: weekly a member is on one list`,
		},
		{
			name: "coverage gap in a later week",
			edits: append(rotating, "  - {id: engineer, title: Engineer}\n", "  - {id: engineer, title: Engineer}\n  - {id: trainee}\n",
				`      - {id: night, hours: "22:00-06:00", members: [cat]}`+"\n", `      - {id: night, hours: "22:00-06:00", members: [cat]}`+"\n"+`      - {id: extra, hours: "06:00-14:00", members: [dan]}`+"\n",
				"  - {id: cat, role: operator, team: desk}\n", "  - {id: cat, role: operator, team: desk}\n  - {id: dan, role: trainee, team: desk}\n"),
			want: `rota.yaml:20:15: teams[0].coverage: 24/7 coverage leaves queue "alerts" unserved at mon 14:00 in week 3 of the rotation: no shift has a member serving it then`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("rota.yaml", editRota(t, tt.edits...))
			if err == nil {
				t.Fatalf("Load: no error, want %s", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load error:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRotateNeedsVersion2(t *testing.T) {
	_, err := Load("rota.yaml", editRota(t, "version: 2", "version: 1", "handover: required", "handover: required\n    rotate: weekly"))
	want := `rota.yaml:21:13: teams[0].rotate: rotate needs version: 2 (this file declares version 1)`
	if err == nil || !strings.Contains(err.Error()+"\n", want+"\n") {
		t.Errorf("Load: got %v, want among the errors %s", err, want)
	}
}
