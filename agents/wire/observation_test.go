package wire_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustRunObservations returns the JSON of the observations random agents saw on the
// shipped worlds (their mistakes fill every list).
func mustRunObservations(tb testing.TB) [][]byte { return simtest.RandomObservations(tb, 9, 300) }

// fill sets every field reachable from v to a value that is not zero, so
// that a field added to Observation without a decoder fails the test.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> é \"q\"", seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed*7 - 3))
	case reflect.Uint64:
		v.SetUint(uint64(seed) + 1)
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), seed*3+i)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if caseField(v.Type(), v.Type().Field(i).Name) {
				continue
			}
			fill(v.Field(i), seed+i)
		}
	default:
		panic("view_codec_test: fill " + v.Kind().String())
	}
}

// caseField reports whether a field is one only worlds with cases (format
// 2) fill in: the fast decoder leaves those observations to encoding/json
// (TestDecodeObservationLeavesCasesToJSON).
func caseField(t reflect.Type, name string) bool {
	switch t {
	case reflect.TypeFor[org.Observation]():
		return name == "Cases" || name == "Ask" || name == "Open" || name == "Systems" || name == "Results" || name == "Policy"
	case reflect.TypeFor[org.TaskView]():
		return name == "Case" || name == "Step" || name == "Amount" || name == "NPC" || name == "Outcome" || name == "Meeting"
	case reflect.TypeFor[org.RequestView]():
		return name == "TaskAmount"
	case reflect.TypeFor[org.Action]():
		return name == "Template" || name == "Attributes" || name == "Record" || name == "ID" || name == "Fields" || name == "Page" || name == "Option" || name == "Case" || name == "Attendees" || name == "Start"
	}
	return false
}

// TestDecodeObservationLeavesCasesToJSON checks that an observation of a
// world with cases is refused by the fast decoder, so that its callers
// decode it with encoding/json, which reads every field.
func TestDecodeObservationLeavesCasesToJSON(t *testing.T) {
	for _, data := range []string{
		`{"member":"a","cases":[{"id":"c1","template":"claim","title":"t","value":1,"opened":0,"attributes":{"amount":5},"steps":["c1.a"]}]}`,
		`{"member":"a","available":[{"id":"c1.a","case":"c1","step":"a"}]}`,
		`{"member":"a","open":[{"template":"claim"}]}`,
	} {
		var o org.Observation
		if wire.DecodeObservation([]byte(data), &o) {
			t.Errorf("the fast decoder read %s; it must leave case fields to encoding/json", data)
		}
		if err := json.Unmarshal([]byte(data), &o); err != nil {
			t.Errorf("encoding/json: %v", err)
		}
	}
}

// mustDecodeLikeJSON fails unless wire.DecodeObservation agrees with
// json.Unmarshal on data whenever it reads it, and reports whether it did.
func mustDecodeLikeJSON(tb testing.TB, data []byte) bool {
	tb.Helper()
	var got org.Observation
	if !wire.DecodeObservation(data, &got) {
		return false
	}
	var want org.Observation
	if err := json.Unmarshal(data, &want); err != nil {
		tb.Fatalf("DecodeObservation read %q, which json.Unmarshal refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("decoding %q:\ngot  %#v\nwant %#v", data, got, want)
	}
	return true
}

// readObservations are inputs DecodeObservation must read.
var readObservations = []string{
	`{}`,
	`null`,
	` {"member" : "bob" ,` + "\n\t\r" + `"turn":3 } `,
	`{"assigned":null,"budget":null,"queues":[null,{"id":"q"}],"inbox":[],"rejected":null,"available":[null]}`,
	`{"member":null,"turn":null,"on_leave":null,"assigned":[{"deps":[null,"a"],"value":null,"needs_info":null}]}`,
	`{"budget":{"team":"t","initial":100,"spent":5,"remaining":-95},"on_leave":false}`,
	`{"rejected":[{"action":{"type":"work","task":"t","for":"2h","until":-5},"kind":"rule","reason":"no"},{"action":null}]}`,
	`{"member":"b\u00f6b \ud83d\ude00 \n\"\\\/\t\b\f\r \u003c\u0026"}`,
	`{"member":"\ud800x\udc00\ud800"}`,
	"{\"member\":\"\xff\xfe\xc3 ok\"}",
	"{\"member\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}",
	`{"upcoming":[{"value":-0,"effort":0,"deadline":-1,"dependents":7,"priority":-0}],"available_more":3}`,
	`{"upcoming":[{"value":1.5e300},{"value":-2.25E-7},{"value":12},{"value":0.5},{"value":1E+2},{"value":123456789012345678901234567890}]}`,
	`{"time":9223372036854775807,"horizon":-9223372036854775808,"turn":18446744073709551615}`,
}

// refusedObservations are inputs it must leave to a full decoder: valid
// JSON it does not read, and invalid JSON.
var refusedObservations = []string{
	`{"MEMBER":"bob"}`,
	`{"Turn":3}`,
	`{"member":"a","member":"b"}`,
	`{"budget":{"team":"a","team":"b"}}`,
	`{"x":1}`,
	`{"assigned":[{"id":"a","extra":true}]}`,
	`{"memb\u0065r":"a"}`,
	`{"turn":-1}`,
	`{"turn":-0}`,
	`{"turn":1.5}`,
	`{"turn":1e2}`,
	`{"turn":1.0}`,
	`{"turn":18446744073709551616}`,
	`{"time":9223372036854775808}`,
	`{"time":-9223372036854775809}`,
	`{"time":"5"}`,
	`{"member":5}`,
	`{"member":true}`,
	`{"on_leave":"true"}`,
	`{"on_leave":1}`,
	`{"assigned":{}}`,
	`{"assigned":[{"deps":"x"}]}`,
	`{"budget":{"initial":1.0}}`,
	`{"budget":[]}`,
	`{"upcoming":[{"value":1e400}]}`,
	`{"upcoming":[{"value":"1"}]}`,
	``,
	`   `,
	`[]`,
	`""`,
	`nul`,
	`nullx`,
	`{"turn":01}`,
	`{"turn":+1}`,
	`{"turn":- 1}`,
	`{"upcoming":[{"value":.5}]}`,
	`{"upcoming":[{"value":1.}]}`,
	`{"upcoming":[{"value":1e}]}`,
	`{"upcoming":[{"value":-}]}`,
	`{"member":"a",}`,
	`{"member":"a"} x`,
	`{"member":"a"}{}`,
	`{"member":"a"`,
	`{"member":"a`,
	`{"member":"a\`,
	`{"member":'a'}`,
	`{member:"a"}`,
	`{"member" "a"}`,
	`{"member":"a"  "turn":1}`,
	`{"member":"a\x"}`,
	"{\"member\":\"a\nb\"}",
	"{\"member\":\"a\\\tb\"}",
	`{"member":"\ud83d\ude0"}`,
	`{"deps":[1,2,}`,
	`{"assigned":[{},]}`,
	`{"on_leave":tru}`,
	`{"on_leave":truee}`,
	"\xef\xbb\xbf{}",
}

func TestDecodeObservation(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		obs := mustRunObservations(t)
		for _, data := range obs {
			if !mustDecodeLikeJSON(t, data) {
				t.Fatalf("DecodeObservation refused %s", data)
			}
		}
		t.Logf("%d observations", len(obs))
	})
	t.Run("every field", func(t *testing.T) {
		var o org.Observation
		fill(reflect.ValueOf(&o).Elem(), 1)
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if !mustDecodeLikeJSON(t, data) {
			t.Fatalf("DecodeObservation refused %s: does it know every field?", data)
		}
	})
	t.Run("lists apart", func(t *testing.T) {
		var o org.Observation
		if !wire.DecodeObservation([]byte(`{"upcoming":[{"deps":["a"],"waiting_on":["b"]},{"deps":["c","d"]}]}`), &o) {
			t.Fatal("refused")
		}
		o.Upcoming[0].Deps = append(o.Upcoming[0].Deps, "x")
		o.Upcoming[1].Deps = append(o.Upcoming[1].Deps[:1], "y")
		if got := fmt.Sprint(o.Upcoming[0].Deps, o.Upcoming[0].Waiting, o.Upcoming[1].Deps); got != "[a x] [b] [c y]" {
			t.Fatalf("after appends got %s, want [a x] [b] [c y]", got)
		}
	})
	for i, s := range readObservations {
		t.Run(fmt.Sprintf("read%d", i), func(t *testing.T) {
			if !mustDecodeLikeJSON(t, []byte(s)) {
				t.Fatalf("DecodeObservation refused %q", s)
			}
		})
	}
	for i, s := range refusedObservations {
		t.Run(fmt.Sprintf("refused%d", i), func(t *testing.T) {
			if mustDecodeLikeJSON(t, []byte(s)) {
				t.Fatalf("DecodeObservation read %q", s)
			}
		})
	}
}

func FuzzDecodeObservation(f *testing.F) {
	for _, s := range readObservations {
		f.Add([]byte(s))
	}
	for _, s := range refusedObservations {
		f.Add([]byte(s))
	}
	for i, data := range mustRunObservations(f) {
		if i%61 == 0 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { mustDecodeLikeJSON(t, data) })
}

func BenchmarkDecodeObservation(b *testing.B) {
	w, err := worlds.Shipped("startup")
	if err != nil {
		b.Fatal(err)
	}
	data, err := json.Marshal(org.New(w).View("bob"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeObservation", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var o org.Observation
			if !wire.DecodeObservation(data, &o) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var o org.Observation
			if err := json.Unmarshal(data, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// mustEncodeLikeJSON fails unless AppendObservation writes json.Marshal's bytes
// (or fails as it does).
func mustEncodeLikeJSON(tb testing.TB, o *org.Observation) {
	tb.Helper()
	want, wantErr := json.Marshal(o)
	got, gotErr := wire.AppendObservation([]byte("x"), o)
	if (gotErr == nil) != (wantErr == nil) {
		tb.Fatalf("encoding %#v: got error %v, want %v", o, gotErr, wantErr)
	}
	if wantErr == nil && string(got) != "x"+string(want) {
		tb.Fatalf("encoding %#v:\ngot  %s\nwant x%s", o, got, want)
	}
}

func TestAppendObservation(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		for _, data := range mustRunObservations(t) {
			var o org.Observation
			if err := json.Unmarshal(data, &o); err != nil {
				t.Fatal(err)
			}
			mustEncodeLikeJSON(t, &o)
		}
	})
	t.Run("every field", func(t *testing.T) {
		var o org.Observation
		fill(reflect.ValueOf(&o).Elem(), 1)
		mustEncodeLikeJSON(t, &o)
	})
	nan := org.Observation{Upcoming: []org.TaskView{{Value: math.NaN()}}}
	tests := []struct {
		name string
		o    org.Observation
	}{
		{"zero", org.Observation{}},
		{"empty lists", org.Observation{Assigned: []org.TaskView{}, Available: []org.TaskView{{Deps: []string{}, Waiting: []string{}}},
			Awaiting: []org.MessageView{}, Rejected: []org.RejectedView{}, Queues: []*org.QueueView{}, Inbox: []org.MessageView{}}},
		{"nil queue", org.Observation{Queues: []*org.QueueView{nil, {ID: "q"}}}},
		{"floats", org.Observation{Upcoming: []org.TaskView{{Value: 1e-7}, {Value: 1e21}, {Value: -0.0}, {Value: 123456789.125}, {Value: 1e-6}, {Value: 5e-324}}}},
		{"strings", org.Observation{Member: "\u2028<a>&\"\\\x00\x1f\x7f", Team: "a\xffb", Role: "héllo 😀"}},
		{"extremes", org.Observation{Turn: math.MaxUint64, Time: math.MinInt64, Horizon: math.MaxInt64, AssignedMore: math.MaxInt, AvailableMore: -1}},
		{"nan", nan},
		{"infinity", org.Observation{Assigned: []org.TaskView{{Value: math.Inf(-1)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustEncodeLikeJSON(t, &tt.o) })
	}
}

func FuzzAppendObservation(f *testing.F) {
	f.Add("bob", "Build <the> API", 30.5, int64(7), true)
	f.Add("", "a\xff\u2028", -1e-9, int64(0), false)
	f.Fuzz(func(t *testing.T, s1, s2 string, v float64, n int64, b bool) {
		o := org.Observation{Session: s1, Member: s2, Turn: uint64(n), Time: clock.Time(n), Wall: s1 + s2, OnLeave: b,
			Available: []org.TaskView{{ID: s1, Title: s2, Project: s2, Value: v, Priority: int(n), Deps: []string{s1, s2},
				NeedsInfo: &org.InfoView{From: s1, Topic: s2, Known: b}, WorkUntil: clock.Time(n)}},
			Inbox:    []org.MessageView{{ID: s2, Text: s1 + "\n" + s2, Topic: s1, SentAt: clock.Time(-n)}},
			Rejected: []org.RejectedView{{Action: org.Action{Type: s1, Text: s2, Until: n}, Kind: s2, Rule: s1, Reason: s2}},
			Queues:   []*org.QueueView{{ID: s1, Order: s2, WIP: int(n), DownUntil: clock.Time(n)}},
			Budget:   &org.BudgetView{Team: s2, Initial: n, Spent: -n, Remaining: n / 3},
		}
		mustEncodeLikeJSON(t, &o)
	})
}

func BenchmarkAppendObservation(b *testing.B) {
	w, err := worlds.Shipped("startup")
	if err != nil {
		b.Fatal(err)
	}
	o := org.New(w).View("bob")
	b.Run("AppendObservation", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = wire.AppendObservation(buf[:0], &o)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = json.Marshal(o)
		}
		b.SetBytes(int64(len(buf)))
	})
}

// mustEncodeReplyLikeJSON fails unless AppendReply writes json.Marshal's bytes.
func mustEncodeReplyLikeJSON(tb testing.TB, r org.Reply) {
	tb.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	if got := wire.AppendReply([]byte("x"), &r); string(got) != "x"+string(want) {
		tb.Fatalf("encoding %#v:\ngot  %s\nwant x%s", r, got, want)
	}
}

func TestAppendReply(t *testing.T) {
	var every org.Action
	fill(reflect.ValueOf(&every).Elem(), 1)
	tests := []struct {
		name  string
		reply org.Reply
	}{
		{"nil actions", org.Reply{Turn: 3}},
		{"no actions", org.Reply{Actions: []org.Action{}}},
		{"greedy", org.Reply{Turn: 1, Actions: []org.Action{{Type: "claim", Task: "api"}, {Type: "work", Task: "api"}}}},
		{"every field", org.Reply{Turn: math.MaxUint64, Actions: []org.Action{every, {}, {Until: math.MinInt64}}}},
		{"strings", org.Reply{Actions: []org.Action{{Type: "message", Text: "<a href=\"x\">&</a> \u2028 \x00\x1f a\xffb héllo", Reason: "\\"}}}},
		{"error", org.Reply{Turn: 2, Actions: []org.Action{}, Error: "llm: POST <x>: 500 \u2028 a\xffb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustEncodeReplyLikeJSON(t, tt.reply) })
	}
}

func FuzzAppendReply(f *testing.F) {
	f.Add(uint64(1), "claim", "api", "hello <b>", int64(0))
	f.Add(uint64(0), "", "a\xffb\u2028", "", int64(-1))
	f.Fuzz(func(t *testing.T, turn uint64, s1, s2, s3 string, n int64) {
		mustEncodeReplyLikeJSON(t, org.Reply{Turn: turn, Actions: []org.Action{
			{Type: s1, Task: s2, Request: s3, To: s1, Text: s2, Reason: s3, For: s1, Until: n, ReplyTo: s2, Topic: s3},
			{Type: s3},
		}, Error: s1})
	})
}

func TestParseReplyError(t *testing.T) {
	tests := []struct {
		name, raw string
		want      org.Reply
		bad       string // a part of the error, "" when it parses
	}{
		{"error, no actions", `{"turn":2,"actions":[],"error":"endpoint down"}`, org.Reply{Turn: 2, Actions: []org.Action{}, Error: "endpoint down"}, ""},
		{"error, actions omitted", `{"turn":2,"error":"endpoint down"}`, org.Reply{Turn: 2, Error: "endpoint down"}, ""},
		{"empty error", `{"turn":2,"actions":[{"type":"wait"}],"error":""}`, org.Reply{Turn: 2, Actions: []org.Action{{Type: "wait"}}}, ""},
		{"error and actions", `{"turn":2,"actions":[{"type":"wait"}],"error":"x"}`, org.Reply{}, "carries none"},
		{"error not a string", `{"turn":2,"actions":[],"error":{"message":"x"}}`, org.Reply{}, "malformed reply"},
		{"unknown field beside it", `{"turn":2,"actions":[],"error":"x","code":500}`, org.Reply{}, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.ParseReply([]byte(tt.raw))
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("got %+v, %v; want an error naming %q", got, err, tt.bad)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestEncodeObservationKeepsCaseFields checks that the fields of a world
// with cases survive the wire: an approval of a case step carries the
// amount its approval reads (task_amount), though the observation lists
// no case (the approver works on none of its steps).
func TestEncodeObservationKeepsCaseFields(t *testing.T) {
	o := org.Observation{Member: "sara", Approvals: []org.RequestView{{ID: "r6", Requester: "bo", Amount: 25000, TaskAssignee: "bo", TaskAmount: 25000}}}
	b, err := wire.AppendObservation(nil, &o)
	if err != nil {
		t.Fatal(err)
	}
	var back org.Observation
	if !wire.DecodeObservation(b, &back) {
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
	}
	if got := back.Approvals[0].TaskAmount; got != 25000 {
		t.Fatalf("task_amount came back as %d from %s", got, b)
	}
}
