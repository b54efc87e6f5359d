package policies_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// In the startup world time 0 is Monday 2026-01-05 09:00 and a working day is
// 8h. The project's deadline is Wednesday 2026-01-21 17:00.
const hour = int64(clock.Hour)

// mustWorld loads the startup world, with edits (old, new, …) applied to its
// source when given.
func mustWorld(tb testing.TB, edits ...string) *worlds.World {
	tb.Helper()
	src, err := worlds.Source("startup")
	if err != nil {
		tb.Fatalf("Source(startup): %v", err)
	}
	s := string(src)
	for i := 0; i+1 < len(edits); i += 2 {
		if strings.Count(s, edits[i]) != 1 {
			tb.Fatalf("mustWorld: %q does not occur exactly once", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	w, err := worlds.Load("startup.yaml", []byte(s))
	if err != nil {
		tb.Fatalf("Load(startup): %v", err)
	}
	return w
}

func mustJSON(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("json.Marshal(%T): %v", v, err)
	}
	return b
}

// script builds an event sequence by hand: it numbers the events and keeps
// their times in order. Every event happens at now; at moves now forward.
type script struct {
	tb    testing.TB
	w     *worlds.World
	now   int64
	evs   []events.Event
	edits []func(*org.State)
}

// newScript starts a session of w (the startup world when nil).
func newScript(tb testing.TB, w *worlds.World) *script {
	tb.Helper()
	if w == nil {
		w = mustWorld(tb)
	}
	s := &script{tb: tb, w: w}
	return s.add(payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: w.Name, WorldHash: w.Hash})
}

func (s *script) add(typ, actor string, v any) *script {
	s.tb.Helper()
	s.evs = append(s.evs, events.Event{Seq: uint64(len(s.evs) + 1), Time: s.now, Type: typ, Actor: actor, Payload: mustJSON(s.tb, v)})
	return s
}

// at moves the script's clock to t.
func (s *script) at(t int64) *script {
	s.tb.Helper()
	if t < s.now {
		s.tb.Fatalf("script: time %d is before now %d", t, s.now)
	}
	s.now = t
	return s
}

func (s *script) claim(member, task string) *script {
	return s.add(payload.EvTaskClaimed, member, payload.TaskClaimed{Task: task})
}

// work records work on a task, started and finished at now.
func (s *script) work(member, task string, d clock.Duration) *script {
	s.add(payload.EvWorkStarted, member, payload.WorkStarted{Task: task, Work: d, Until: clock.Time(s.now)})
	return s.add(payload.EvWorkFinished, "", payload.WorkFinished{Task: task, Work: d})
}

func (s *script) complete(member, task string) *script {
	return s.add(payload.EvTaskCompleted, member, payload.TaskCompleted{Task: task})
}

// do claims, works the full effort of and completes a task.
func (s *script) do(member, task string) *script {
	s.tb.Helper()
	effort := s.spec(task).Effort
	return s.claim(member, task).work(member, task, effort).complete(member, task)
}

// request asks for approval of task's purchase with one step per approver,
// each "role:member".
func (s *script) request(member, id, task string, amount int64, steps ...string) *script {
	var rs []org.RequestStep
	for _, st := range steps {
		role, approver, _ := strings.Cut(st, ":")
		rs = append(rs, org.RequestStep{Role: role, Approver: approver})
	}
	return s.add(payload.EvApprovalRequested, member, payload.ApprovalRequested{Request: id, Task: task, Chain: "purchases", Amount: amount, Steps: rs})
}

func (s *script) grant(member, id string, step int) *script {
	return s.add(payload.EvApprovalGranted, member, payload.ApprovalDecided{Request: id, Step: step})
}

func (s *script) reject(member, id string, step int, reason string) *script {
	return s.add(payload.EvApprovalRejected, member, payload.ApprovalDecided{Request: id, Step: step, Reason: reason})
}

func (s *script) rejected(member, kind, rule string) *script {
	return s.add(payload.EvActionRejected, member, payload.ActionRejected{Kind: kind, Rule: rule, Reason: "test"})
}

func (s *script) spec(task string) *worlds.Task {
	s.tb.Helper()
	for i := range s.w.Projects {
		for j := range s.w.Projects[i].Tasks {
			if s.w.Projects[i].Tasks[j].ID == task {
				return &s.w.Projects[i].Tasks[j]
			}
		}
	}
	s.tb.Fatalf("script: no task %q", task)
	return nil
}

// tamper edits the state once the events are applied, as a checkpoint
// restored from edited bytes would carry it: Apply refuses events that break
// an action's precondition, and the rubric, which trusts neither Apply nor
// the engine, must still refuse to count what such a state claims.
func (s *script) tamper(edit func(*org.State)) *script {
	s.edits = append(s.edits, edit)
	return s
}

// state applies the script to a new state of its world.
func (s *script) state() *org.State {
	s.tb.Helper()
	st := org.New(s.w)
	for _, e := range s.evs {
		if err := st.Apply(e); err != nil {
			s.tb.Fatalf("Apply(seq %d %s): %v", e.Seq, e.Type, err)
		}
	}
	for _, edit := range s.edits {
		edit(st)
	}
	return st
}
