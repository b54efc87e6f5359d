package payload

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload/fastjson"
)

// sameDecoding checks that DecodePayload gives exactly what json.Unmarshal
// gives into the event type's value type, and, when wantFast, that the
// fast decoder (not the fallback) read it.
func sameDecoding(t *testing.T, typ string, data []byte, wantFast bool) {
	t.Helper()
	want, err := decoders[typ](data)
	got := Decode(&events.Event{Type: typ, Payload: data})
	if err != nil {
		if got != nil {
			t.Fatalf("%s %s: json.Unmarshal fails (%v) but DecodePayload gave %#v", typ, data, err, got)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %s:\n got %#v\nwant %#v", typ, data, got, want)
	}
	if _, fast := fastDecode(typ, data, nil); wantFast && !fast {
		t.Fatalf("%s %s: the fast decoder did not read what AppendPayload wrote", typ, data)
	}
	// The same through one Reuse for every call: a slot holds the last
	// payload of its type, so what a payload lacks must not be left over.
	reused := DecodeReuse(&events.Event{Type: typ, Payload: data}, &testReuse)
	if v := reflect.ValueOf(reused); v.Kind() == reflect.Pointer {
		reused = v.Elem().Interface()
	} else if wantFast {
		t.Fatalf("%s %s: DecodeReuse gave a %T, not a pointer into its Reuse", typ, data, reused)
	}
	if !reflect.DeepEqual(reused, want) {
		t.Fatalf("%s %s: DecodeReuse:\n got %#v\nwant %#v", typ, data, reused, want)
	}
}

// testReuse is the Reuse of every sameDecoding.
var testReuse Reuse

func TestFastDecodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	enc := func(v any) []byte {
		b, err := Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for range 3000 {
		task := randSpec(r)
		if !fastjson.Finite(task.Value) {
			task.Value = 1
		}
		tc := TaskCreated{Task: task, Queue: randString(r), Team: randString(r), Interruption: r.IntN(5) - 1}
		if r.IntN(2) == 0 {
			tc.Deadline, tc.NextAt, tc.Arrival = clock.Time(r.Int64N(1<<40)), clock.Time(r.Int64N(1<<40)), randString(r)
			if r.IntN(4) == 0 {
				tc.SetNext(0, true) // a next ticket at time 0: "next_at_zero"
			}
		}
		sameDecoding(t, EvTaskCreated, enc(tc), true)
		turn := Turn{Turn: r.Uint64(), Seen: r.Uint64N(1 << 30), BusyUntil: clock.Time(r.Int64N(1 << 40)), InboxRead: r.IntN(3) * r.IntN(9)}
		if r.IntN(4) > 0 {
			turn.Actions = []Action{}
			for range r.IntN(4) {
				turn.Actions = append(turn.Actions, randAction(r))
			}
		}
		// The fast decoder reads a turn's plain actions; one with the case,
		// record or meeting tools' fields goes to the fallback.
		plain := true
		for _, a := range turn.Actions {
			plain = plain && a.Template == "" && a.Attributes.IsZero() && a.Record == "" && a.ID == "" && a.Fields.IsZero() &&
				a.Page == 0 && a.Option == "" && a.Case == "" && a.Attendees.IsZero() && a.Start == ""
		}
		sameDecoding(t, EvTurn, enc(turn), plain)
		sameDecoding(t, EvTaskClaimed, enc(TaskClaimed{Task: randString(r), BusyUntil: clock.Time(r.Int64N(1<<40) - 1<<39)}), true)
		sameDecoding(t, EvTaskCompleted, enc(TaskCompleted{Task: randString(r), BusyUntil: clock.Time(r.Int64N(1 << 40))}), true)
		sameDecoding(t, EvWorkFinished, enc(WorkFinished{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40))}), true)
		sameDecoding(t, EvWorkStarted, enc(WorkStarted{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Until: clock.Time(r.Int64N(1 << 40))}), true)
		sameDecoding(t, EvMemberWaiting, enc(MemberWaiting{Until: clock.Time(r.Int64N(3))}), true)
		sameDecoding(t, EvMemberWaiting, enc(MemberWaiting{Until: clock.Time(r.Int64N(3)), Seen: r.Uint64N(3)}), true)
		sameDecoding(t, EvTicketServed, enc(TicketServed{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Until: clock.Time(r.Int64N(1 << 40)), Seen: r.Uint64()}), true)
		sameDecoding(t, EvTicketResolved, enc(TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40))}), true)
		sameDecoding(t, EvTicketResolved, enc(TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Next: randString(r), NextWork: clock.Duration(r.Int64N(1 << 40)), NextUntil: clock.Time(r.Int64N(1 << 40))}), true)
		sameDecoding(t, EvTicketResolved, enc(TicketResolved{Task: randString(r), Work: clock.Duration(r.Int64N(1 << 40)), Waits: r.IntN(2) == 0, NextUntil: clock.Time(r.Int64N(3))}), true)
	}
	// What the fast decoders refuse still decodes as encoding/json decodes it.
	for _, c := range []struct{ typ, data string }{
		{EvTurn, `{"Turn":3,"seen":1,"actions":[],"busy_until":5}`},                      // case-folded key
		{EvTurn, `{"turn":3,"turn":4,"seen":1,"actions":null,"busy_until":5}`},           // repeated key
		{EvTurn, `{"turn":3,"seen":1,"actions":[{"type":"wait","x":1}],"busy_until":5}`}, // unknown key
		{EvTaskClaimed, `{"task":"a\u0062","busy_until":1e3}`},
		{EvTaskCreated, `{"task":{"ID":"t","Info":{"From":"x","Topic":"y"}},"queue":"q","team":"t","interruption":-1}`}, // format 1's keys
		{EvTaskCreated, `{"task":{"id":"t","info":{"from":"x","topic":"y","extra":1}},"queue":"q","team":"t","interruption":-1}`},
		{EvTaskCreated, `{"task":{"id":"t","deps":[],"info":null},"queue":"q","team":"t","interruption":-1}`},
		{EvMemberWaiting, `{}`},
		{EvWorkStarted, `{"task":"t","work":"oops"}`},
		{EvTurn, `not json`},
	} {
		sameDecoding(t, c.typ, []byte(c.data), false)
	}
}

func FuzzFastDecoders(f *testing.F) {
	f.Add(EvTurn, []byte(`{"turn":1,"seen":2,"actions":[{"type":"claim","task":"t"}],"busy_until":3}`))
	f.Add(EvTaskCreated, []byte(`{"task":{"id":"t","title":"T","role":"r","effort":1,"value":1.5,"info":{"from":"a","topic":"b"}},"queue":"q","team":"t","interruption":-1}`))
	f.Add(EvWorkStarted, []byte(`{"task":"t","work":1,"until":2}`))
	f.Add(EvTicketServed, []byte(`{"task":"t","work":1,"until":2,"seen":3}`))
	f.Add(EvTicketResolved, []byte(`{"task":"t","work":1}`))
	f.Add(EvTicketResolved, []byte(`{"task":"t","work":1,"next":"u","next_work":2,"next_until":3}`))
	f.Add(EvTicketResolved, []byte(`{"task":"t","work":1,"waits":true,"next_until":3}`))
	f.Add(EvMemberWaiting, []byte(`{"until":1,"seen":2}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		if fastDecoders[typ] == nil {
			return
		}
		if !json.Valid(data) {
			if v := Decode(&events.Event{Type: typ, Payload: data}); v != nil {
				t.Fatalf("invalid JSON %q decoded to %#v", data, v)
			}
			return
		}
		sameDecoding(t, typ, data, false)
	})
}

// TeamReward reads a reward event's team delta, 0 from any other event,
// and reports a reward that does not decode.
func TestTeamReward(t *testing.T) {
	for _, tc := range []struct {
		ev      events.Event
		want    float64
		wantErr bool
	}{
		{events.Event{Type: EvReward, Payload: json.RawMessage(`{"team":2.5,"members":{"a":1},"rubric":"rubric/2"}`)}, 2.5, false},
		{events.Event{Type: EvTaskCreated, Payload: json.RawMessage(`{"team":9}`)}, 0, false},
		{events.Event{Type: EvReward, Seq: 7, Payload: json.RawMessage(`{"team":"x"}`)}, 0, true},
	} {
		got, err := TeamReward(&tc.ev)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s %s: %v, %v; want %v (error: %v)", tc.ev.Type, tc.ev.Payload, got, err, tc.want, tc.wantErr)
		}
	}
}
