package natshost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/simtest"
)

// mustObservations returns the JSON of the observations random agents saw on the
// shipped worlds (their mistakes fill every list).
func mustObservations(tb testing.TB) [][]byte { return simtest.RandomObservations(tb, 5, 400) }

// oddObservations are inputs encoding/json's rules decide: case folding,
// unknown keys, nulls, escapes, duplicates, and the type and syntax errors.
var oddObservations = []string{
	`{}`,
	`null`,
	` {"member" : "bob" , "turn":3 } `,
	`{"MEMBER":"bob","Turn":3,"ON_LEAVE":true,"waiting_On":["x"]}`,
	`{"assigned":[{"ID":"a","WAITING_ON":["b"],"Needs_Info":{"FROM":"c"}}]}`,
	`{"member":"a","member":"b","Member":"c"}`,
	`{"x":{"a":[1,2.5e-3,{"b":null,"c":"\u0041"}],"d":true},"member":"bob","y":[]}`,
	`{"assigned":null,"budget":null,"queues":[null,{"id":"q"}],"inbox":[],"rejected":null}`,
	`{"budget":{"team":"t","initial":100,"spent":5,"remaining":95}}`,
	`{"rejected":[{"action":{"type":"work","task":"t","for":"2h","until":-5},"kind":"rule","reason":"no"}]}`,
	`{"member":"b\u00f6b \ud83d\ude00 \n\"\\\/\t\b\f\r"}`,
	`{"member":"\ud800x\udc00\ud800"}`,
	"{\"member\":\"\xff\xfe\xc3\"}",
	"{\"member\":\"\u2028<&>\"}",
	`{"upcoming":[{"value":-0,"effort":0,"deadline":-1,"dependents":7}],"available_more":3}`,
	`{"upcoming":[{"value":1.5e300},{"value":-2.25E-7},{"value":12}]}`,
	`{"time":9223372036854775807,"turn":18446744073709551615}`,
	// Errors.
	``,
	`   `,
	`[]`,
	`""`,
	`{"turn":-1}`,
	`{"turn":1.5}`,
	`{"turn":1e2}`,
	`{"turn":18446744073709551616}`,
	`{"time":9223372036854775808}`,
	`{"time":"5"}`,
	`{"member":5}`,
	`{"member":null,"turn":null,"assigned":[null]}`,
	`{"on_leave":"true"}`,
	`{"assigned":[{"deps":"x"}]}`,
	`{"budget":{"initial":1.0}}`,
	`{"upcoming":[{"value":1e400}]}`,
	`{"turn":01}`,
	`{"turn":+1}`,
	`{"member":"a",}`,
	`{"member":"a"} x`,
	`{"member":"a"}{}`,
	`{"member":"a"`,
	`{"member":'a'}`,
	`{member:"a"}`,
	`{"member":"a\x"}`,
	"{\"member\":\"a\nb\"}",
	`{"member":"\ud83d\ude0"}`,
	`{"x":[1,2,}`,
	`{"x":tru}`,
	"\xef\xbb\xbf{}",
}

// sameDecoding fails unless decodeObservation agrees with encoding/json on
// data: both reject it, or both accept it with the same value.
func sameDecoding(tb testing.TB, data []byte) {
	tb.Helper()
	var want, got org.Observation
	wantErr := json.Unmarshal(data, &want)
	gotErr := decodeObservation(data, &got)
	switch {
	case (wantErr == nil) != (gotErr == nil):
		tb.Fatalf("decoding %q: got error %v, want %v", data, gotErr, wantErr)
	case wantErr == nil && !reflect.DeepEqual(got, want):
		tb.Fatalf("decoding %q:\ngot  %#v\nwant %#v", data, got, want)
	}
}

func TestDecodeObservationLikeEncodingJSON(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		obs := mustObservations(t)
		for _, data := range obs {
			sameDecoding(t, data)
		}
		t.Logf("%d observations", len(obs))
	})
	for i, s := range oddObservations {
		t.Run(fmt.Sprintf("odd%d", i), func(t *testing.T) { sameDecoding(t, []byte(s)) })
	}
}

func FuzzDecodeObservation(f *testing.F) {
	for _, s := range oddObservations {
		f.Add([]byte(s))
	}
	for i, data := range mustObservations(f) {
		if i%97 == 0 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameDecoding(t, data) })
}

func TestAnswer(t *testing.T) {
	s := &seat{agent: &agents.Greedy{}, timeout: time.Second, log: hclog.NewNullLogger()}
	tests := []struct {
		name, obs, want string
	}{
		{"bad observation", `{"turn":`, `{"turn":0,"actions":[]}`},
		{"nothing to do", `{"turn":4,"member":"bob"}`, `{"turn":4,"actions":[{"type":"wait"}]}`},
		{"a task", `{"turn":2,"member":"bob","available":[{"id":"api","value":3,"effort":3600000}]}`,
			`{"turn":2,"actions":[{"type":"claim","task":"api"},{"type":"work","task":"api"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := s.answer([]byte(tt.obs)); !ok || string(got) != tt.want {
				t.Fatalf("got %s (%v), want %s", got, ok, tt.want)
			}
		})
	}
}

type decider func(ctx context.Context, obs org.Observation) ([]org.Action, error)

func (d decider) Decide(ctx context.Context, obs org.Observation) ([]org.Action, error) {
	return d(ctx, obs)
}

// An agent that fails answers its error, which the driver's strict parser
// reads as a failed turn; one whose budget ran out answers nothing.
func TestAnswerOfAFailingAgent(t *testing.T) {
	tests := []struct {
		name  string
		agent decider
		want  string // "" for no reply
	}{
		{"error", func(context.Context, org.Observation) ([]org.Action, error) {
			return []org.Action{{Type: org.ActWait}}, errors.New("llm: POST http://x: 500 Internal Server Error: down")
		}, `{"turn":3,"actions":[],"error":"llm: POST http://x: 500 Internal Server Error: down"}`},
		{"empty error", func(context.Context, org.Observation) ([]org.Action, error) { return nil, errors.New("") },
			`{"turn":3,"actions":[],"error":"the agent failed"}`},
		{"panic", func(context.Context, org.Observation) ([]org.Action, error) { panic("boom") },
			`{"turn":3,"actions":[],"error":"agent panicked: boom"}`},
		{"out of time", func(ctx context.Context, _ org.Observation) ([]org.Action, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &seat{agent: tt.agent, timeout: 20 * time.Millisecond, log: hclog.NewNullLogger()}
			got, ok := s.answer([]byte(`{"turn":3,"member":"bob"}`))
			if tt.want == "" {
				if ok {
					t.Fatalf("answered %s; want no reply", got)
				}
				return
			}
			if !ok || string(got) != tt.want {
				t.Fatalf("got %s (%v), want %s", got, ok, tt.want)
			}
			r, err := wire.ParseReply(got)
			if err != nil || r.Error == "" || len(r.Actions) != 0 {
				t.Fatalf("the driver parses %s as %+v, %v; want an error and no actions", got, r, err)
			}
		})
	}
}
