package payload

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload/fastjson"
)

// The hand-written encoders must write exactly what encoding/json writes.
func sameAsJSON(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	got, err := Append([]byte("prefix"), v)
	if err != nil {
		t.Fatalf("Append(%#v): %v", v, err)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("Append(%#v)\n got %s\nwant %s", v, got, want)
	}
}

var tricky = []string{"", "t-1", "a\"b", `back\slash`, "<html>&", "tab\tnew\nline", "\x00\x1f", "é ü 日本", "\u2028\u2029", "bad\xffutf8", "emoji 🙂"}

var floats = []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, -2.5e-10, 123456789.125, math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64}

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return tricky[r.IntN(len(tricky))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(0x20 + r.IntN(0x5f))
	}
	return string(b)
}

func randFloat(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return floats[r.IntN(len(floats))]
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(50)-25))
}

// randSpec returns a ticket definition with every field set at random,
// optional ones left out at times.
func randSpec(r *rand.Rand) TaskSpec {
	task := TaskSpec{
		ID: randString(r), Title: randString(r), Role: randString(r),
		Effort: clock.Duration(r.Int64N(1 << 40)), Value: randFloat(r), Purchase: (r.Int64N(1<<20) - 1<<19) * r.Int64N(2),
		Chain: randString(r), Skill: randString(r), Priority: (r.IntN(20) - 10) * r.IntN(2),
	}
	switch r.IntN(3) {
	case 1:
		task.Deps = []string{}
	case 2:
		task.Deps = []string{randString(r), randString(r)}
	}
	if r.IntN(4) == 0 {
		task.Info = &InfoSpec{From: randString(r), Topic: randString(r)}
	}
	return task
}

func randAction(r *rand.Rand) Action {
	a := Action{Type: randString(r)}
	for _, f := range []*string{&a.Task, &a.Request, &a.To, &a.Text, &a.Reason, &a.For, &a.ReplyTo, &a.Topic} {
		if r.IntN(2) == 0 {
			*f = randString(r)
		}
	}
	if r.IntN(2) == 0 {
		a.Until = r.Int64N(1<<40) - 1<<39
	}
	// The case, record and meeting tools' fields, each at times.
	for _, f := range []*string{&a.Template, &a.Record, &a.ID, &a.Option, &a.Case, &a.Start} {
		if r.IntN(8) == 0 {
			*f = randString(r)
		}
	}
	attrs := func() ActionAttrs {
		m := Attrs{}
		for range r.IntN(3) + 1 {
			if r.IntN(2) == 0 {
				m[randString(r)] = r.Int64N(1<<40) - 1<<39
			} else {
				m[randString(r)] = randString(r)
			}
		}
		return NewActionAttrs(m)
	}
	if r.IntN(8) == 0 {
		a.Attributes = attrs()
	}
	if r.IntN(8) == 0 {
		a.Fields = attrs()
	}
	if r.IntN(8) == 0 {
		a.Page = r.IntN(100) - 10
	}
	if r.IntN(8) == 0 {
		ids := make([]string, r.IntN(3)+1)
		for i := range ids {
			ids[i] = "m-" + randString(r)
		}
		a.Attendees = NewNames(ids...)
	}
	return a
}

func TestAppendPayloadMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		task := randSpec(r)
		tc := TaskCreated{Task: task, Queue: randString(r), Team: randString(r), Interruption: r.IntN(5) - 1}
		if r.IntN(2) == 0 {
			tc.Deadline, tc.NextAt, tc.Arrival = clock.Time(r.Int64N(1<<40)), clock.Time(r.Int64N(1<<40)), randString(r)
			if r.IntN(4) == 0 {
				tc.SetNext(0, true) // a next ticket at time 0: "next_at_zero"
			}
		}
		sameAsJSON(t, tc)
		sameAsJSON(t, &tc)

		turn := Turn{Turn: r.Uint64(), Seen: r.Uint64N(1 << 30), BusyUntil: clock.Time(r.Int64N(1 << 40)), InboxRead: r.IntN(3) * r.IntN(40)}
		if r.IntN(4) > 0 {
			turn.Actions = []Action{}
			for range r.IntN(4) {
				turn.Actions = append(turn.Actions, randAction(r))
			}
		}
		sameAsJSON(t, turn)
		sameAsJSON(t, &turn)

		// The engine passes these by pointer (no boxing); both forms encode alike.
		claimed := TaskClaimed{Task: randString(r), BusyUntil: clock.Time(r.Int64N(1<<40) - 1<<39)}
		completed := TaskCompleted{Task: randString(r), BusyUntil: clock.Time(r.Int64N(1 << 40))}
		finished := WorkFinished{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40))}
		started := WorkStarted{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Until: clock.Time(r.Int64N(1 << 40))}
		waiting := MemberWaiting{Until: clock.Time(r.Int64N(1<<40)) * clock.Time(r.IntN(2)), Seen: r.Uint64N(1<<40) * r.Uint64N(2)}
		served := TicketServed{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Until: clock.Time(r.Int64N(1 << 40)), Seen: r.Uint64()}
		resolved := TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40))}
		serving := TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Next: randString(r), NextWork: clock.Duration(r.Int64N(1 << 40)), NextUntil: clock.Time(r.Int64N(1 << 40))}
		waits := TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Waits: true, NextUntil: clock.Time(r.Int64N(1<<40)) * clock.Time(r.IntN(2))}
		for _, v := range []any{claimed, &claimed, completed, &completed, finished, &finished, started, &started, waiting, &waiting, MemberWaiting{}, &MemberWaiting{},
			served, &served, resolved, &resolved, serving, &serving, waits, &waits, TicketResolved{NextWork: 1}, TicketResolved{NextUntil: -1}, MemberWaiting{Seen: 3}} {
			sameAsJSON(t, v)
		}

		rw := Reward{Team: randFloat(r), Rubric: randString(r)}
		switch r.IntN(3) {
		case 1:
			rw.Members = map[string]float64{}
		case 2:
			rw.Members = map[string]float64{}
			for range r.IntN(5) + 1 {
				rw.Members[randString(r)] = randFloat(r)
			}
		}
		sameAsJSON(t, rw)

		rej := ActionRejected{Index: r.IntN(12) - 1, Action: randAction(r), Kind: randString(r), Reason: randString(r)}
		if r.IntN(2) == 0 {
			rej.Rule = randString(r)
		}
		sameAsJSON(t, rej)
		sameAsJSON(t, &rej)
	}
	sameAsJSON(t, ActionRejected{})
	// Other payloads take encoding/json's path.
	sameAsJSON(t, QueueUp{Queue: "desk"})
}

// As takes the typed value, or a pointer to it, without decoding;
// anything else is decoded from the event's JSON.
func TestPayloadAsTypedOrPointer(t *testing.T) {
	ev := events.Event{Payload: []byte(`{"task":"from-json","busy_until":7}`)}
	v := TaskClaimed{Task: "typed", BusyUntil: 3}
	for _, c := range []struct {
		typed any
		want  string
	}{{v, "typed"}, {&v, "typed"}, {nil, "from-json"}, {(*TaskClaimed)(nil), "from-json"}, {TaskCompleted{Task: "other"}, "from-json"}} {
		got, err := As[TaskClaimed](&ev, c.typed)
		if err != nil || got.Task != c.want {
			t.Errorf("As(%#v) = %+v, %v; want task %q", c.typed, got, err, c.want)
		}
	}
}

func TestAppendPayloadRefusesWhatJSONRefuses(t *testing.T) {
	for _, v := range []any{Reward{Team: math.NaN()}, Reward{Team: 1, Members: map[string]float64{"a": math.Inf(1)}},
		TaskCreated{Task: TaskSpec{Value: math.Inf(-1)}}, &TaskCreated{Task: TaskSpec{Value: math.NaN()}}} {
		if _, err := Append(nil, v); err == nil {
			t.Errorf("Append(%#v) encoded a non-finite figure", v)
		}
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("t-1", "Ticket", 1.0, int64(5), "claim")
	f.Add("a\"<b>", "\xff", 1e-9, int64(-1), "")
	f.Fuzz(func(t *testing.T, id, title string, value float64, n int64, typ string) {
		if !fastjson.Finite(value) {
			return
		}
		sameAsJSON(t, TaskCreated{Task: TaskSpec{ID: id, Title: title, Value: value, Effort: clock.Duration(n), Deps: []string{title}, Info: &InfoSpec{From: typ}}, Queue: typ})
		sameAsJSON(t, Turn{Turn: uint64(n), Actions: []Action{{Type: typ, Task: id, Text: title, Until: n}}})
		sameAsJSON(t, Reward{Team: value, Members: map[string]float64{id: value, title: -value}, Rubric: typ})
		sameAsJSON(t, TicketResolved{Task: id, Work: clock.Duration(n), Next: title, NextWork: clock.Duration(-n), Waits: typ == "", NextUntil: clock.Time(n)})
		sameAsJSON(t, ActionRejected{Index: int(n), Action: Action{Type: typ, Task: id, Reason: title, Until: n}, Kind: typ, Rule: id, Reason: title})
	})
}
