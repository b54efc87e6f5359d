package inprocess

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
)

// overBus is the answer the NATS path gives for acts: the reply natshost
// encodes, parsed as the driver parses it.
func overBus(turn uint64, acts []org.Action) sim.Answer {
	if acts == nil {
		acts = []org.Action{}
	}
	b, err := json.Marshal(org.Reply{Turn: turn, Actions: acts})
	if err != nil {
		panic(err)
	}
	r, err := wire.ParseReply(b)
	if err != nil {
		return sim.Answer{Malformed: err.Error()}
	}
	return sim.Answer{Turn: r.Turn, Actions: r.Actions}
}

func TestAnswerIsWhatTheBusWouldCarry(t *testing.T) {
	many := make([]org.Action, org.MaxActions+1)
	for i := range many {
		many[i] = org.Action{Type: org.ActClaim, Task: "t"}
	}
	tests := []struct {
		name string
		acts []org.Action
	}{
		{"none", nil},
		{"empty", []org.Action{}},
		{"claim and work", []org.Action{{Type: org.ActClaim, Task: "api"}, {Type: org.ActWork, Task: "api", For: "2h"}}},
		{"every field", []org.Action{{Type: "message", Task: "a", Request: "r", To: "bob", Text: "hi <&> \u2028", Reason: "x", For: "1h", Until: -5, ReplyTo: "m1", Topic: "q"}}},
		{"invalid UTF-8", []org.Action{{Type: "message", To: "bob", Text: "a\xffb\xc3(\xe2\x82", Topic: "\xed\xa0\x80"}}},
		{"the most actions", many[:org.MaxActions]},
		{"too many actions", many},
		{"just under the size limit", []org.Action{{Type: "message", To: "bob", Text: strings.Repeat("x", org.MaxReplyBytes-80)}}},
		{"over the size limit", []org.Action{{Type: "message", To: "bob", Text: strings.Repeat("x", org.MaxReplyBytes)}}},
		{"over it by escapes", []org.Action{{Type: "message", To: "bob", Text: strings.Repeat("\x01", org.MaxReplyBytes/5)}}},
		{"too big and too many", append([]org.Action{{Type: "message", Text: strings.Repeat("y", org.MaxReplyBytes)}}, many...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := answer(7, tt.acts), overBus(7, tt.acts)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v,\nwant %+v", abbrev(got), abbrev(want))
			}
		})
	}
}

func abbrev(a sim.Answer) sim.Answer {
	a.Actions = append([]org.Action(nil), a.Actions...)
	for i := range a.Actions {
		if len(a.Actions[i].Text) > 40 {
			a.Actions[i].Text = a.Actions[i].Text[:40] + "…"
		}
	}
	return a
}

// decider is an agent made of a function.
type decider func(ctx context.Context, obs org.Observation) ([]org.Action, error)

func (d decider) Decide(ctx context.Context, obs org.Observation) ([]org.Action, error) {
	return d(ctx, obs)
}

func TestAsk(t *testing.T) {
	s := New(map[string]agents.Agent{"bob": &agents.Greedy{}}, Options{})
	ctx := context.Background()
	obs := org.Observation{Member: "bob", Turn: 3, Available: []org.TaskView{{ID: "api", Value: 3, Effort: clock.Hour}}}
	got, err := s.Ask(ctx, "s", "bob", obs)
	want := sim.Answer{Turn: 3, Actions: []org.Action{{Type: org.ActClaim, Task: "api"}, {Type: org.ActWork, Task: "api"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if _, err := s.Ask(ctx, "s", "alice", obs); !errors.Is(err, ErrNotPlayed) {
		t.Fatalf("a member not played: got %v, want ErrNotPlayed", err)
	}
}

// An agent that fails gives a failed answer saying why (the engine records
// turn.failed), as agents/natshost replies for it; one that fails because
// its budget ran out times out.
func TestAgentThatFailsGivesAFailedAnswer(t *testing.T) {
	failing := map[string]decider{
		"err": func(context.Context, org.Observation) ([]org.Action, error) {
			return []org.Action{{Type: "wait"}}, errors.New("no")
		},
		"empty": func(context.Context, org.Observation) ([]org.Action, error) { return nil, errors.New("") },
		"panic": func(context.Context, org.Observation) ([]org.Action, error) { panic("boom") },
	}
	seats := map[string]agents.Agent{}
	for m, d := range failing {
		seats[m] = d
		seats[m+"-at-once"] = immediate{d} // asked on this goroutine: the same answers
	}
	s := New(seats, Options{})
	for m, why := range map[string]string{"err": "no", "empty": "the agent failed", "panic": "agent panicked: boom"} {
		for _, m := range []string{m, m + "-at-once"} {
			got, err := s.Ask(context.Background(), "s", m, org.Observation{Turn: 2})
			if want := (sim.Answer{Turn: 2, Failed: why}); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %+v, %v; want %+v", m, got, err, want)
			}
		}
	}
	late := New(map[string]agents.Agent{"bob": decider(func(ctx context.Context, _ org.Observation) ([]org.Action, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if got, err := late.Ask(ctx, "s", "bob", org.Observation{Turn: 1}); err == nil {
		t.Fatalf("an agent out of time: got %+v, no error; want the budget's error (a timeout)", got)
	}
}

// An agent that does not answer within the turn's budget: Ask returns the
// budget's error (the driver records a timeout), and the agent's next turn
// is not given to it while it still decides the last one.
func TestSlowAgentTimesOutAndGetsOneTurnAtATime(t *testing.T) {
	release := make(chan struct{})
	var in, most atomic.Int32
	slow := decider(func(ctx context.Context, obs org.Observation) ([]org.Action, error) {
		n := in.Add(1)
		defer in.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release // deaf to ctx: it answers only when released
		return []org.Action{{Type: org.ActWait}}, nil
	})
	s := New(map[string]agents.Agent{"bob": slow}, Options{})
	for turn := uint64(1); turn <= 3; turn++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := s.Ask(ctx, "s", "bob", org.Observation{Turn: turn})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("turn %d: got %v, want the budget's error", turn, err)
		}
	}
	close(release)
	got, err := s.Ask(context.Background(), "s", "bob", org.Observation{Turn: 4})
	if want := (sim.Answer{Turn: 4, Actions: []org.Action{{Type: org.ActWait}}}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("once released: got %+v, %v; want %+v", got, err, want)
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("turns the agent had at once: got %d, want 1", m)
	}
}

// immediate is a decider that says it decides at once (Immediate).
type immediate struct{ decider }

func (immediate) Immediate() bool { return true }

// notImmediate says it does not.
type notImmediate struct{ decider }

func (notImmediate) Immediate() bool { return false }

// An agent that decides at once (Immediate) is asked on the goroutine that
// asks; any other agent (one that says it is not, or says nothing) on
// another, so that its turn's budget can end the wait for it.
func TestImmediateAgentDecidesOnTheAskingGoroutine(t *testing.T) {
	var mu sync.Mutex
	on := map[string]string{}
	record := func(member string) decider {
		return func(context.Context, org.Observation) ([]org.Action, error) {
			id := simtest.GoroutineID()
			mu.Lock()
			on[member] = id
			mu.Unlock()
			return []org.Action{{Type: org.ActWait}}, nil
		}
	}
	s := New(map[string]agents.Agent{
		"now":   immediate{record("now")},
		"later": record("later"),
		"no":    notImmediate{record("no")},
	}, Options{})
	here := simtest.GoroutineID()
	for m, want := range map[string]bool{"now": true, "later": false, "no": false} {
		if got := s.Immediate(m); got != want {
			t.Errorf("Immediate(%s): got %v, want %v", m, got, want)
		}
		got, err := s.Ask(context.Background(), "s", m, org.Observation{Turn: 5})
		if want := (sim.Answer{Turn: 5, Actions: []org.Action{{Type: org.ActWait}}}); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v, %v; want %+v", m, got, err, want)
		}
		mu.Lock()
		if asked := on[m] == here; asked != want {
			t.Errorf("%s decided on goroutine %s, the asking one is %s: want the asking one %v", m, on[m], here, want)
		}
		mu.Unlock()
	}
	if s.Immediate("alice") {
		t.Error("Immediate of a member these seats do not play: got true")
	}
	// The built-in agents decide at once.
	for _, name := range agents.Names() {
		a, err := agents.New(name, agents.Options{Seed: 1, Member: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if i, ok := a.(Immediate); !ok || !i.Immediate() {
			t.Errorf("built-in agent %s is not Immediate", name)
		}
	}
}
