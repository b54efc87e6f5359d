package sim_test

import (
	"encoding/json"
	"github.com/corpsim/corpsim/clock"

	"github.com/corpsim/corpsim/events"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// On the meetings world over five seeds the oracle (which reads the
// attendees' constraints from the world) books every meeting right on
// every seed, the diligent baseline (which asks each attendee) comes
// within 10% of it, and greedy and planner (which book the first free
// slot of the calendars without asking) score at least 25% below
// diligent. Sessions replay to their recorded state.
func TestMeetingsBaselines(t *testing.T) {
	total := map[string]float64{}
	for seed := uint64(1); seed <= 5; seed++ {
		for _, agent := range []string{"oracle", "diligent", "greedy", "planner"} {
			e, evs := playWorld(t, "meetings", agent, seed)
			sc := policies.Score(e.State())
			if sc.OutcomeMax == 0 {
				t.Fatalf("seed %d: no meetings to score", seed)
			}
			booked, asked := 0, 0
			for _, ev := range evs {
				switch {
				case ev.Type == payload.EvMeetingScheduled:
					booked++
				case ev.Type == payload.EvMessageSent && strings.Contains(string(ev.Payload), "availability"):
					asked++
				}
			}
			switch agent {
			case "oracle":
				if sc.Outcome != sc.OutcomeMax || sc.WrongOutcomes != 0 {
					t.Errorf("seed %d: oracle outcome %v of %v (wrong %d), want the maximum", seed, sc.Outcome, sc.OutcomeMax, sc.WrongOutcomes)
				}
			case "diligent":
				if asked == 0 {
					t.Errorf("seed %d: diligent asked nobody", seed)
				}
			default:
				if asked != 0 || booked == 0 {
					t.Errorf("seed %d: %s asked %d times and booked %d meetings; want no question and some bookings", seed, agent, asked, booked)
				}
			}
			if seed == 1 {
				mustReplayLive(t, e, evs)
			}
			total[agent] += sc.Outcome
		}
	}
	t.Logf("meetings outcome over 5 seeds: %v", total)
	if total["diligent"] < 0.9*total["oracle"] {
		t.Errorf("diligent %.1f is not within 10%% of oracle %.1f", total["diligent"], total["oracle"])
	}
	for _, a := range []string{"greedy", "planner"} {
		if total[a] > 0.75*total["diligent"] {
			t.Errorf("%s %.1f is not 25%% below diligent %.1f", a, total[a], total["diligent"])
		}
	}
}

// freeSlots are the starts (half hours, 09:00-17:00 UTC on weekdays, an
// hour from now on) of a meeting of the view's length in its window that
// overlaps none of its attendees' busy blocks.
func freeSlots(tb testing.TB, o org.Observation, mv *org.MeetingView) []time.Time {
	tb.Helper()
	from, _ := time.Parse(time.RFC3339, mv.From)
	to, _ := time.Parse(time.RFC3339, mv.To)
	now, _ := time.Parse(time.RFC3339, o.Wall)
	length, err := time.ParseDuration(mv.Length)
	if err != nil || mv.Hours != "09:00-17:00" || mv.Zone != "UTC" {
		tb.Fatalf("meeting view %+v", mv)
	}
	var out []time.Time
	for s := from.Truncate(30 * time.Minute); !s.Add(length).After(to); s = s.Add(30 * time.Minute) {
		e := s.Add(length)
		if s.Before(from) || s.Before(now.Add(time.Hour)) || s.Hour() < 9 || e.Hour() > 17 || e.Hour() == 17 && e.Minute() > 0 ||
			s.YearDay() != e.YearDay() || s.Weekday() == time.Saturday || s.Weekday() == time.Sunday {
			continue
		}
		free := true
		for _, id := range mv.Attendees {
			for _, b := range mv.Busy[id] {
				bs, _ := time.Parse(time.RFC3339, b.Start)
				be, _ := time.Parse(time.RFC3339, b.End)
				free = free && !(s.Before(be) && bs.Before(e))
			}
		}
		if free {
			out = append(out, s)
		}
	}
	return out
}

// A scripted coordinator on the meetings world: it asks an attendee about
// their availability and gets their hidden constraint in words (in no
// record); malformed bookings are refused with reasons and the session
// goes on; a booking books every attendee, a second one for the step is
// refused, and a meeting overlapping it for a shared attendee is refused
// as a double booking. The rubric checks the first meeting on every
// criterion and counts the second (an attendee missing, the wrong length)
// as a wrong outcome that does not verify.
func TestMeetingBookAskAndVerify(t *testing.T) {
	w, err := worlds.Shipped("meetings")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := worlds.Source("meetings")
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	phase := 0
	var first, second, asked, reply string
	var firstStart time.Time
	var firstLen string
	wait := []org.Action{{Type: org.ActWait}}
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: wait}
		if o.Member != "cara" || phase == 5 {
			return ans
		}
		var held *org.TaskView
		for i := range o.Assigned {
			if o.Assigned[i].Meeting != nil {
				held = &o.Assigned[i]
			}
		}
		for _, m := range o.Inbox {
			if phase == 1 && m.From == asked {
				reply, phase = m.Text, 2
			}
		}
		switch {
		case held == nil && (phase == 0 || phase == 3) && len(o.Available) > 0:
			id := o.Available[0].ID
			ans.Actions = []org.Action{{Type: org.ActClaim, Task: id}, {Type: org.ActWork, Task: id, For: "1d"}}
		case held == nil || held.Spent < held.Effort:
		case phase == 0:
			mv := held.Meeting
			first, asked = held.ID, mv.Attendees[0]
			who := payload.NewNames(mv.Attendees...)
			start := freeSlots(t, o, mv)[0].Format(time.RFC3339)
			ans.Actions = []org.Action{
				{Type: org.ActMessage, To: asked, Text: "Hi, what is your availability for a meeting?"},
				{Type: org.ActScheduleMeeting, Task: first, Attendees: who, Start: "tomorrow at ten", For: mv.Length},
				{Type: org.ActScheduleMeeting, Task: first, Attendees: who, Start: start, For: "9h"},
				{Type: org.ActScheduleMeeting, Task: first, Attendees: payload.NewNames("nobody"), Start: start, For: mv.Length},
				{Type: org.ActScheduleMeeting, Task: first, Attendees: who, Start: "2026-02-02T08:00:00Z", For: mv.Length},
				{Type: org.ActScheduleMeeting, Task: first, Attendees: who, Start: start},
				{Type: org.ActWait},
			}
			phase = 1
		case phase == 2 && held.Meeting.Booked == nil:
			mv := held.Meeting
			slots := freeSlots(t, o, mv)
			firstStart, firstLen = slots[len(slots)-1], mv.Length // the latest: still ahead when the next case comes
			a := org.Action{Type: org.ActScheduleMeeting, Task: first, Attendees: payload.NewNames(mv.Attendees...), Start: firstStart.Format(time.RFC3339), For: mv.Length}
			ans.Actions = []org.Action{a, a, {Type: org.ActWait}}
		case phase == 2:
			ans.Actions = []org.Action{{Type: org.ActComplete, Task: first}}
			phase = 3
		case phase == 3:
			mv := held.Meeting
			second = held.ID
			d, _ := time.ParseDuration(mv.Length)
			ans.Actions = []org.Action{
				{Type: org.ActScheduleMeeting, Task: second, Attendees: payload.NewNames(mv.Attendees...), Start: firstStart.Format(time.RFC3339), For: firstLen},
				{Type: org.ActScheduleMeeting, Task: second, Attendees: payload.NewNames(mv.Attendees[1:]...), Start: freeSlots(t, o, mv)[0].Format(time.RFC3339), For: (2 * d).String()},
				{Type: org.ActWait},
			}
			phase = 4
		case phase == 4 && held.Meeting.Booked != nil:
			ans.Actions = []org.Action{{Type: org.ActComplete, Task: second}}
			phase = 5
		}
		return ans
	}, false, 0)
	if phase != 5 {
		t.Fatalf("the script stopped at phase %d", phase)
	}
	mustReplayLive(t, e, evs)
	st := e.State()
	// The answer is the attendee's constraint in words, and in no record.
	name := asked
	if m, ok := w.Member(asked); ok {
		name = m.Name
	}
	if want := w.Availability.Answer(worlds.NewDraws(1, nil), asked, name); reply != want || reply == "" {
		t.Errorf("%s answered %q, want %q", asked, reply, want)
	}
	for _, r := range st.Records {
		for k, x := range r.Fields {
			if s, ok := x.(string); ok && s == reply {
				t.Errorf("the constraint is in record %s %s field %s", r.Type, r.ID, k)
			}
		}
	}
	var refused []string
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected {
			if p := decode[payload.ActionRejected](t, ev); p.Action.Type == org.ActScheduleMeeting {
				refused = append(refused, p.Reason)
			}
		}
	}
	for i, want := range []string{"is not an RFC 3339 time", "at most 8h", `no member "nobody"`, "is in the past", "needs its length",
		"meeting is already booked (mtg-1)", "is in meeting mtg-1"} {
		if i >= len(refused) || !strings.Contains(refused[i], want) {
			t.Errorf("refusal %d: got %q, want %q (all: %q)", i, refused[min(i, len(refused)-1)], want, refused)
		}
	}
	if len(refused) != 7 {
		t.Errorf("%d refusals, want 7: %q", len(refused), refused)
	}
	// Every attendee of the first meeting is booked.
	c1 := st.CaseOf(st.Task(first))
	m1 := &c1.Meetings[0]
	if m1.Booked == nil || m1.Booked.Meeting != "mtg-1" || !m1.Done || !m1.AtDone {
		t.Fatalf("first meeting %+v", m1)
	}
	for _, id := range m1.Attendees {
		r := st.Record("busy", "mtg-1-"+id)
		if r == nil || r.Fields["member"] != id || r.Fields["meeting"] != "mtg-1" || r.Fields["start"] != firstStart.Format(time.RFC3339) {
			t.Errorf("%s's calendar has no block for mtg-1: %+v", id, r)
		}
	}
	kept := true
	for _, r := range m1.Rules {
		kept = kept && r.Allows(st.World.Calendar.Wall(m1.Booked.Start), st.World.Calendar.Wall(m1.Booked.End))
	}
	if got, want := policies.MeetingChecks(st, m1), []bool{true, true, true, true, kept}; !equalBools(got, want) {
		t.Errorf("first meeting's criteria %v, want %v", got, want)
	}
	c2 := st.CaseOf(st.Task(second))
	m2 := &c2.Meetings[0]
	got2 := policies.MeetingChecks(st, m2)
	if len(got2) != 5 || got2[0] || got2[2] {
		t.Errorf("second meeting's criteria %v: want attendees and length failed", got2)
	}
	sc := policies.Score(st)
	want := 0.0
	if kept {
		want = 1
	}
	if got2[3] && got2[4] {
		n := 0
		for _, ok := range got2 {
			if ok {
				n++
			}
		}
		want += float64(n) / 5
	}
	wrong := 1
	if !kept {
		wrong = 2
	}
	if sc.Outcome != want || sc.WrongOutcomes != wrong {
		t.Errorf("outcome %v (wrong %d), want %v (wrong %d)", sc.Outcome, sc.WrongOutcomes, want, wrong)
	}
	unverified := strings.Join(sc.Unverified, "\n")
	if !strings.Contains(unverified, second+": wrong outcome: meeting mtg-2 fails attendees") {
		t.Errorf("unverified %q: want %s's meeting", unverified, second)
	}
	if kept == strings.Contains(unverified, first+":") {
		t.Errorf("unverified %q: the first step verifies exactly when its meeting keeps the constraints (%v)", unverified, kept)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A meeting.scheduled that does not match the state is refused on
// replay: one naming an unknown attendee, one whose id or span does not
// match its action, one for a step already booked, one by a member who
// does not hold the step.
func TestMeetingScheduledTampered(t *testing.T) {
	_, evs := playWorld(t, "meetings", "diligent", 1)
	at := -1
	for i, ev := range evs {
		if ev.Type == payload.EvMeetingScheduled {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("no meeting booked")
	}
	orig := decode[payload.MeetingScheduled](t, evs[at])
	for _, tc := range []struct {
		name   string
		change func(p *payload.MeetingScheduled, ev *events.Event)
	}{
		{"unknown attendee", func(p *payload.MeetingScheduled, _ *events.Event) { p.Attendees = append(p.Attendees, "nobody") }},
		{"wrong id", func(p *payload.MeetingScheduled, _ *events.Event) { p.Meeting = "mtg-9" }},
		{"no length", func(p *payload.MeetingScheduled, _ *events.Event) { p.End = p.Start }},
		{"not the holder", func(_ *payload.MeetingScheduled, ev *events.Event) {
			ev.Actor = "colm" + map[bool]string{true: "x"}[ev.Actor == "colm"]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := orig
			p.Attendees = append([]string(nil), orig.Attendees...)
			ev := evs[at]
			tc.change(&p, &ev)
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			ev.Payload = b
			bad := append(append(append([]events.Event(nil), evs[:at]...), ev), evs[at+1:]...)
			_, err = sim.Rebuild(seqOf(bad), "s", sim.Config{})
			if err == nil || !strings.Contains(err.Error(), "meeting.scheduled") {
				t.Fatalf("the tampered log: %v, want a refused meeting.scheduled", err)
			}
		})
	}
	// Booked twice: the same event again.
	twice := append(append(append([]events.Event(nil), evs[:at+1]...), evs[at]), evs[at+1:]...)
	for i := at + 1; i < len(twice); i++ {
		twice[i].Seq = twice[i-1].Seq + 1
	}
	twice[at+1].ID = events.NewID([32]byte{1}, 0, twice[at+1].Time, twice[at+1].Seq)
	if _, err := sim.Rebuild(seqOf(twice[:at+2]), "s", sim.Config{}); err == nil || !strings.Contains(err.Error(), "already booked") {
		t.Fatalf("a step's meeting booked twice on replay: %v, want it refused as already booked", err)
	}
}

// A session restored from a snapshot taken halfway through and replayed
// on ends in the state of the session played through: meetings and the
// calendars' blocks are in the snapshot.
func TestMeetingsRestore(t *testing.T) {
	e, evs := playWorld(t, "meetings", "oracle", 2)
	w := e.State().World
	src, _ := worlds.Source("meetings")
	cfg := sim.Config{World: w, Source: src, Seed: 2, Session: "s"}
	half := len(evs) / 2
	re, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[:half] {
		if err := re.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	r, err := sim.Restore(cfg, re.Snapshot(), re.StateHash())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[half:] {
		if err := r.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.StateHash(), e.StateHash(); got != want {
		t.Fatalf("restored and replayed: hash %s, live %s", got, want)
	}
	booked := 0
	for _, c := range r.State().Cases {
		for _, m := range c.Meetings {
			if m.Booked != nil {
				booked++
			}
		}
	}
	if booked == 0 {
		t.Fatal("no meeting booked after the restore")
	}
}

// Each criterion of a booked meeting fails on its own: the rubric is
// given a right meeting (the oracle's) changed in one way at a time.
func TestMeetingCriteria(t *testing.T) {
	e, _ := playWorld(t, "meetings", "oracle", 1)
	st := e.State()
	var cm *org.CaseMeeting
	for _, c := range st.Cases {
		if len(c.Meetings) > 0 && c.Meetings[0].Booked != nil {
			cm = &c.Meetings[0]
			break
		}
	}
	if cm == nil {
		t.Fatal("the oracle booked nothing")
	}
	if got := policies.MeetingChecks(st, cm); !equalBools(got, []bool{true, true, true, true, true}) {
		t.Fatalf("the oracle's meeting: %v", got)
	}
	b := *cm.Booked
	a := cm.Attendees[0]
	busy := st.Busy(a, 0, st.World.Horizon*2)
	var block clock.Time
	for _, x := range busy {
		if x.Meeting == "" {
			block, _ = st.Instant(x.Start)
			break
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m *payload.MeetingScheduled, x *org.CaseMeeting)
		failed int
	}{
		{"an attendee missing", func(m *payload.MeetingScheduled, _ *org.CaseMeeting) { m.Attendees = m.Attendees[1:] }, 0},
		{"an attendee more", func(m *payload.MeetingScheduled, _ *org.CaseMeeting) { m.Attendees = append(m.Attendees, "cara") }, 0},
		{"after the window", func(m *payload.MeetingScheduled, x *org.CaseMeeting) {
			m.Start, m.End = x.To, x.To+clock.Time(x.Length)
		}, 1},
		{"at night", func(m *payload.MeetingScheduled, _ *org.CaseMeeting) {
			m.Start -= 12 * 3_600_000
			m.End -= 12 * 3_600_000
		}, 1},
		{"too short", func(m *payload.MeetingScheduled, _ *org.CaseMeeting) { m.End = m.Start + 60_000 }, 2},
		{"over a busy block", func(m *payload.MeetingScheduled, x *org.CaseMeeting) {
			m.Start, m.End = block, block+clock.Time(x.Length)
		}, 3},
		{"a constraint broken", func(m *payload.MeetingScheduled, x *org.CaseMeeting) {
			x.Rules = append(x.Rules, payload.MeetingRule{Member: a, Max: 60_000})
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := b
			m.Attendees = append([]string(nil), b.Attendees...)
			x := *cm
			x.Rules = append([]payload.MeetingRule(nil), cm.Rules...)
			tc.change(&m, &x)
			x.Booked = &m
			got := policies.MeetingChecks(st, &x)
			if len(got) != 5 || got[tc.failed] {
				t.Errorf("criteria %v: want %s failed", got, policies.MeetingCriteria[tc.failed])
			}
		})
	}
}

// The same seed gives a byte-identical log on the meetings world, with
// the baselines that ask (diligent) and that do not (greedy).
func TestMeetingsDeterministic(t *testing.T) {
	for _, agent := range []string{"diligent", "greedy"} {
		_, a := playWorld(t, "meetings", agent, 3)
		_, b := playWorld(t, "meetings", agent, 3)
		if len(a) != len(b) {
			t.Fatalf("%s: %d events, then %d", agent, len(a), len(b))
		}
		for i := range a {
			ja, _ := json.Marshal(a[i])
			jb, _ := json.Marshal(b[i])
			if string(ja) != string(jb) {
				t.Fatalf("%s: event %d differs:\n%s\n%s", agent, i, ja, jb)
			}
		}
	}
}

// mustBookOnce plays cara on world src (the meetings world, changed):
// she claims the first meeting step, works it, does what book returns
// (once), and completes the step in her next turn; every other seat
// waits. It returns the session's events.
func mustBookOnce(tb testing.TB, src string, book func(o org.Observation, held *org.TaskView) []org.Action) (*sim.Engine, []events.Event) {
	tb.Helper()
	e, _ := simtest.Started(tb, "m.yaml", []byte(src), 1)
	phase := 0
	evs := drive(tb, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		if o.Member != "cara" || phase == 2 {
			return ans
		}
		var held *org.TaskView
		for i := range o.Assigned {
			if o.Assigned[i].Meeting != nil {
				held = &o.Assigned[i]
			}
		}
		switch {
		case held == nil && phase == 0 && len(o.Available) > 0:
			id := o.Available[0].ID
			ans.Actions = []org.Action{{Type: org.ActClaim, Task: id}, {Type: org.ActWork, Task: id, For: "1d"}}
		case held == nil || held.Spent < held.Effort:
		case phase == 0:
			ans.Actions = append(book(o, held), org.Action{Type: org.ActWait})
			phase = 1
		default:
			ans.Actions = []org.Action{{Type: org.ActComplete, Task: held.ID}}
			phase = 2
		}
		return ans
	}, false, 0)
	return e, evs
}

// meetingRefusals are the reasons schedule_meetings were refused.
func meetingRefusals(tb testing.TB, evs []events.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected {
			if p := decode[payload.ActionRejected](tb, ev); p.Action.Type == org.ActScheduleMeeting {
				out = append(out, p.Reason)
			}
		}
	}
	return out
}

// A meeting starts and ends on a whole second, as the calendar's records
// (RFC 3339 without a fraction) and the replay's check read it: a start or
// a length with a fraction of a second is refused, and a whole one booked.
// The engine panicked on the fraction: its own event did not apply.
func TestMeetingWholeSeconds(t *testing.T) {
	src, _ := worlds.Source("meetings")
	e, evs := mustBookOnce(t, string(src), func(o org.Observation, held *org.TaskView) []org.Action {
		mv := held.Meeting
		s := freeSlots(t, o, mv)[0]
		who := payload.NewNames(mv.Attendees...)
		return []org.Action{
			{Type: org.ActScheduleMeeting, Task: held.ID, Attendees: who, Start: s.Add(500 * time.Millisecond).Format(time.RFC3339Nano), For: mv.Length},
			{Type: org.ActScheduleMeeting, Task: held.ID, Attendees: who, Start: s.Format(time.RFC3339), For: mv.Length + "250ms"},
			{Type: org.ActScheduleMeeting, Task: held.ID, Attendees: who, Start: s.Add(time.Second).Format(time.RFC3339), For: mv.Length},
		}
	})
	got := meetingRefusals(t, evs)
	if len(got) != 2 || !strings.Contains(got[0], "whole second") || !strings.Contains(got[1], "whole second") {
		t.Errorf("refusals %q, want the start and the length with fractions of a second", got)
	}
	booked := 0
	for _, ev := range evs {
		if ev.Type == payload.EvMeetingScheduled {
			booked++
		}
	}
	if booked != 1 {
		t.Errorf("%d meetings booked, want 1", booked)
	}
	mustReplayLive(t, e, evs)
}

// A meeting's calendar records (mtg-<n>-<attendee>) take ids no record
// has: where coordinators may create busy records, one created with the
// id the next meeting would take moves the meeting to the next free id.
// The engine panicked: its meeting.scheduled did not apply, the record
// existing.
func TestMeetingIDTaken(t *testing.T) {
	src, _ := worlds.Source("meetings")
	s := strings.Replace(string(src), "    read: [coordinator]\n", "    read: [coordinator]\n    create: [coordinator]\n", 1)
	e, evs := mustBookOnce(t, s, func(o org.Observation, held *org.TaskView) []org.Action {
		mv := held.Meeting
		at := freeSlots(t, o, mv)[0].Format(time.RFC3339)
		return []org.Action{
			{Type: org.ActCreate, Record: "busy", ID: "mtg-1-" + mv.Attendees[0], Fields: payload.NewActionAttrs(payload.Attrs{"member": "cara", "start": at, "end": at})},
			{Type: org.ActScheduleMeeting, Task: held.ID, Attendees: payload.NewNames(mv.Attendees...), Start: at, For: mv.Length},
		}
	})
	if got := meetingRefusals(t, evs); len(got) != 0 {
		t.Errorf("refused %q", got)
	}
	st := e.State()
	var cm *org.CaseMeeting
	for _, c := range st.Cases {
		if len(c.Meetings) > 0 && c.Meetings[0].Booked != nil {
			cm = &c.Meetings[0]
		}
	}
	if cm == nil || cm.Booked.Meeting != "mtg-2" {
		t.Fatalf("booked %+v, want mtg-2", cm)
	}
	if got := policies.MeetingChecks(st, cm); !got[3] {
		t.Errorf("criteria %v: the meeting is free", got)
	}
	mustReplayLive(t, e, evs)
}
