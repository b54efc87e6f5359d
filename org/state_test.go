package org_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// Simulated times in the startup world: 0 is Monday 2026-01-05 09:00, and a
// working day is 8h.
const (
	minute = int64(clock.Minute)
	hour   = int64(clock.Hour)
)

func mustWorld(tb testing.TB) *worlds.World {
	tb.Helper()
	w, err := worlds.Shipped("startup")
	if err != nil {
		tb.Fatalf("Shipped(startup): %v", err)
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

// ev builds an event; a nil payload leaves Payload empty.
func ev(tb testing.TB, seq uint64, at int64, typ, actor string, v any) events.Event {
	tb.Helper()
	e := events.Event{Seq: seq, Time: at, Type: typ, Actor: actor}
	if v != nil {
		e.Payload = mustJSON(tb, v)
	}
	return e
}

func mustApply(tb testing.TB, st *org.State, evs ...events.Event) {
	tb.Helper()
	for _, e := range evs {
		if err := st.Apply(e); err != nil {
			tb.Fatalf("Apply(seq %d %s): %v", e.Seq, e.Type, err)
		}
	}
}

// started returns the event that opens every log.
func started(tb testing.TB) events.Event {
	tb.Helper()
	return ev(tb, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "startup", Seed: 1})
}

// mustState returns the startup world's state after evs.
func mustState(tb testing.TB, evs ...events.Event) *org.State {
	tb.Helper()
	st := org.New(mustWorld(tb))
	mustApply(tb, st, evs...)
	return st
}

func ids(views []org.TaskView) []string {
	out := []string{}
	for _, v := range views {
		out = append(out, v.ID)
	}
	return out
}

func TestNewAndSessionStarted(t *testing.T) {
	st := org.New(mustWorld(t))
	if got, want := len(st.Tasks()), 14; got != want {
		t.Fatalf("tasks: got %d, want %d", got, want)
	}
	for _, task := range st.Tasks() {
		if task.Status != org.StatusOpen {
			t.Errorf("task %s: got status %s, want open", task.ID, task.Status)
		}
	}
	if b := st.Budget("product"); b == nil || b.Remaining() != 20000 {
		t.Fatalf("budget product: got %+v, want 20000 remaining", b)
	}
	mustApply(t, st, started(t))
	tests := []struct {
		member      string
		wantPending bool
		wantCause   uint64
	}{
		{"alice", true, 1},
		{"bob", true, 1},
		{"erin", true, 1},
		{"frank", false, 0}, // the NPC is not asked to take turns
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			m := st.Member(tt.member)
			if m.Pending != tt.wantPending || m.WakeCause != tt.wantCause {
				t.Errorf("got Pending %v WakeCause %d, want %v and %d", m.Pending, m.WakeCause, tt.wantPending, tt.wantCause)
			}
		})
	}
	var got []string
	for _, m := range st.TakeWoken() {
		got = append(got, m.ID)
	}
	if want := []string{"alice", "bob", "carol", "dave", "erin"}; !slices.Equal(got, want) {
		t.Errorf("TakeWoken: got %v, want %v", got, want)
	}
	if got := st.TakeWoken(); len(got) != 0 {
		t.Errorf("TakeWoken again: got %v, want nothing", got)
	}
}

// TestApplyTaskFlow follows one task from claim to completion, then a
// purchase, checking the state after every event.
func TestApplyTaskFlow(t *testing.T) {
	st := mustState(t, started(t))
	steps := []struct {
		name  string
		event events.Event
		check func(t *testing.T, st *org.State)
	}{
		{
			name:  "claim",
			event: ev(t, 2, 0, payload.EvTaskClaimed, "alice", payload.TaskClaimed{Task: "spec", BusyUntil: clock.Time(5 * minute)}),
			check: func(t *testing.T, st *org.State) {
				task, alice := st.Task("spec"), st.Member("alice")
				if task.Status != org.StatusClaimed || task.Assignee != "alice" {
					t.Errorf("spec: got %s by %q, want claimed by alice", task.Status, task.Assignee)
				}
				if alice.BusyUntil != clock.Time(5*minute) || !alice.Pending {
					t.Errorf("alice: got BusyUntil %d Pending %v, want %d and true", alice.BusyUntil, alice.Pending, 5*minute)
				}
			},
		},
		{
			name:  "work started",
			event: ev(t, 3, 5*minute, payload.EvWorkStarted, "alice", payload.WorkStarted{Task: "spec", Work: 8 * clock.Hour, Until: clock.Time(8*hour + 5*minute)}),
			check: func(t *testing.T, st *org.State) {
				task := st.Task("spec")
				if task.Status != org.StatusInProgress || task.Stint != 8*clock.Hour || task.WorkUntil != clock.Time(8*hour+5*minute) {
					t.Errorf("spec: got %s stint %s until %d, want in_progress, 8h, %d", task.Status, task.Stint, task.WorkUntil, 8*hour+5*minute)
				}
				if got := st.Member("alice").BusyUntil; got != clock.Time(8*hour+5*minute) {
					t.Errorf("alice BusyUntil: got %d, want %d", got, 8*hour+5*minute)
				}
				if got, want := ids(st.View("alice").Assigned), []string{"spec"}; !slices.Equal(got, want) {
					t.Errorf("alice assigned: got %v, want %v", got, want)
				}
			},
		},
		{
			name:  "work finished",
			event: ev(t, 4, 8*hour+5*minute, payload.EvWorkFinished, "", payload.WorkFinished{Task: "spec", Work: 8 * clock.Hour}),
			check: func(t *testing.T, st *org.State) {
				task := st.Task("spec")
				if task.Status != org.StatusClaimed || task.Spent != 8*clock.Hour || task.Stint != 0 || task.WorkUntil != 0 {
					t.Errorf("spec: got %s spent %s stint %s until %d, want claimed, 8h, 0s, 0", task.Status, task.Spent, task.Stint, task.WorkUntil)
				}
				if st.Now != clock.Time(8*hour+5*minute) || st.LastSeq != 4 {
					t.Errorf("got Now %d LastSeq %d, want %d and 4", st.Now, st.LastSeq, 8*hour+5*minute)
				}
			},
		},
		{
			name:  "complete",
			event: ev(t, 5, 8*hour+5*minute, payload.EvTaskCompleted, "alice", payload.TaskCompleted{Task: "spec", BusyUntil: clock.Time(8*hour + 10*minute)}),
			check: func(t *testing.T, st *org.State) {
				task := st.Task("spec")
				if task.Status != org.StatusDone || task.DoneBy != "alice" || task.DoneSeq != 5 || task.DoneAt != clock.Time(8*hour+5*minute) {
					t.Errorf("spec: got %s by %q seq %d at %d, want done by alice seq 5 at %d", task.Status, task.DoneBy, task.DoneSeq, task.DoneAt, 8*hour+5*minute)
				}
				// spec unblocked work for engineers and the designer, not for the lead.
				for _, c := range []struct {
					member string
					cause  uint64
				}{{"bob", 5}, {"carol", 5}, {"erin", 5}, {"dave", 5}, {"alice", 1}, {"frank", 0}} {
					if got := st.Member(c.member).WakeCause; got != c.cause {
						t.Errorf("%s WakeCause: got %d, want %d", c.member, got, c.cause)
					}
				}
				if got := st.View("alice").Assigned; len(got) != 0 {
					t.Errorf("alice assigned: got %v, want none", ids(got))
				}
			},
		},
		{
			name:  "claim a purchase",
			event: ev(t, 6, 9*hour, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "build-servers", BusyUntil: clock.Time(9*hour + 5*minute)}),
			check: func(t *testing.T, st *org.State) {
				if got := st.Budget("product").Spent; got != 0 {
					t.Errorf("budget spent: got %d, want 0 before completion", got)
				}
			},
		},
		{
			name:  "work on the purchase",
			event: ev(t, 7, 9*hour+5*minute, payload.EvWorkStarted, "bob", payload.WorkStarted{Task: "build-servers", Work: 2 * clock.Hour, Until: clock.Time(11*hour + 5*minute)}),
			check: func(t *testing.T, st *org.State) {},
		},
		{
			name:  "purchase work finished",
			event: ev(t, 8, 11*hour+5*minute, payload.EvWorkFinished, "", payload.WorkFinished{Task: "build-servers", Work: 2 * clock.Hour}),
			check: func(t *testing.T, st *org.State) {},
		},
		{
			name:  "complete the purchase",
			event: ev(t, 9, 11*hour+5*minute, payload.EvTaskCompleted, "bob", payload.TaskCompleted{Task: "build-servers", BusyUntil: clock.Time(11*hour + 10*minute)}),
			check: func(t *testing.T, st *org.State) {
				b := st.Budget("product")
				if b.Spent != 3000 || b.Remaining() != 17000 {
					t.Errorf("budget: got spent %d remaining %d, want 3000 and 17000", b.Spent, b.Remaining())
				}
				if got := st.View("carol").Budget; got == nil || got.Remaining != 17000 {
					t.Errorf("carol's budget view: got %+v, want 17000 remaining", got)
				}
			},
		},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			mustApply(t, st, s.event)
			s.check(t, st)
		})
	}
}

// badPrefix sets up a state for TestApplyRejects: spec is in progress for
// alice, api is claimed by bob, build-servers is claimed by bob with request
// r1 waiting for alice, message m1 from alice has reached bob. Now is 1h.
func badPrefix(tb testing.TB) []events.Event {
	tb.Helper()
	return []events.Event{
		started(tb),
		ev(tb, 2, 0, payload.EvTaskClaimed, "alice", payload.TaskClaimed{Task: "spec"}),
		ev(tb, 3, 0, payload.EvWorkStarted, "alice", payload.WorkStarted{Task: "spec", Work: 8 * clock.Hour, Until: clock.Time(8 * hour)}),
		ev(tb, 4, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "api"}),
		ev(tb, 5, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "build-servers"}),
		ev(tb, 6, 0, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r1", Task: "build-servers", Chain: "purchases", Amount: 3000,
			Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}}}),
		ev(tb, 7, 0, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m1", To: "bob", Text: "hi", DeliverAt: clock.Time(hour)}),
		ev(tb, 8, hour, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"}),
	}
}

func TestApplyRejects(t *testing.T) {
	const next = 9 // the seq after badPrefix
	tests := []struct {
		name    string
		before  []events.Event // applied after badPrefix
		event   events.Event
		wantErr string // a part of the error message
	}{
		{name: "seq gap", event: ev(t, next+1, hour, payload.EvMemberWaiting, "bob", payload.MemberWaiting{}), wantErr: "expected seq 9"},
		{name: "seq repeated", event: ev(t, next-1, hour, payload.EvMemberWaiting, "bob", payload.MemberWaiting{}), wantErr: "expected seq 9"},
		{name: "time before now", event: ev(t, next, hour-1, payload.EvMemberWaiting, "bob", payload.MemberWaiting{}), wantErr: "is before now"},
		{name: "session started again", event: ev(t, next, hour, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat}), wantErr: "must be the first event"},
		{name: "claim of a claimed task", event: ev(t, next, hour, payload.EvTaskClaimed, "carol", payload.TaskClaimed{Task: "api"}), wantErr: `task "api" is already claimed by bob`},
		{name: "claim of an own claimed task", event: ev(t, next, hour, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "api"}), wantErr: `task "api" is already yours`},
		{name: "claim of an unknown task", event: ev(t, next, hour, payload.EvTaskClaimed, "carol", payload.TaskClaimed{Task: "nope"}), wantErr: `unknown task "nope"`},
		{name: "claim by an unknown actor", event: ev(t, next, hour, payload.EvTaskClaimed, "mallory", payload.TaskClaimed{Task: "db-schema"}), wantErr: `unknown actor "mallory"`},
		{name: "completion by a non-assignee", event: ev(t, next, hour, payload.EvTaskCompleted, "carol", payload.TaskCompleted{Task: "api"}), wantErr: `task "api" is held by bob, not carol`},
		{name: "completion while in progress", event: ev(t, next, hour, payload.EvTaskCompleted, "alice", payload.TaskCompleted{Task: "spec"}), wantErr: `task "spec" is being worked on until`},
		{name: "work started by a non-assignee", event: ev(t, next, hour, payload.EvWorkStarted, "carol", payload.WorkStarted{Task: "api", Work: clock.Hour, Until: clock.Time(2 * hour)}), wantErr: `task "api" is held by bob, not carol`},
		{name: "work started twice", event: ev(t, next, hour, payload.EvWorkStarted, "alice", payload.WorkStarted{Task: "spec", Work: clock.Hour, Until: clock.Time(2 * hour)}), wantErr: `task "spec" is being worked on until`},
		{name: "work finished with wrong work", event: ev(t, next, 8*hour, payload.EvWorkFinished, "", payload.WorkFinished{Task: "spec", Work: 4 * clock.Hour}), wantErr: "work 4h does not match the stint 8h"},
		{name: "work finished on a task not in progress", event: ev(t, next, hour, payload.EvWorkFinished, "", payload.WorkFinished{Task: "api", Work: clock.Hour}), wantErr: `task "api" is not in progress`},
		{name: "approval by the wrong member", event: ev(t, next, hour, payload.EvApprovalGranted, "carol", payload.ApprovalDecided{Request: "r1", Step: 0}), wantErr: `request "r1" step 0 is not waiting for carol`},
		{name: "approval of the wrong step", event: ev(t, next, hour, payload.EvApprovalGranted, "alice", payload.ApprovalDecided{Request: "r1", Step: 1}), wantErr: `request "r1" step 1 is not waiting for alice`},
		{name: "rejection of an unknown request", event: ev(t, next, hour, payload.EvApprovalRejected, "alice", payload.ApprovalDecided{Request: "r9"}), wantErr: `unknown request "r9"`},
		{
			name:    "approval of a decided request",
			before:  []events.Event{ev(t, next, hour, payload.EvApprovalGranted, "alice", payload.ApprovalDecided{Request: "r1"})},
			event:   ev(t, next+1, hour, payload.EvApprovalGranted, "alice", payload.ApprovalDecided{Request: "r1"}),
			wantErr: `request r1 is already approved`,
		},
		{name: "request id reused", event: ev(t, next, hour, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r1", Task: "build-servers", Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}}}), wantErr: `request "r1" exists or has no steps`},
		{name: "request without steps", event: ev(t, next, hour, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r2", Task: "build-servers"}), wantErr: `request "r2" exists or has no steps`},
		{name: "request for an unknown task", event: ev(t, next, hour, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r2", Task: "nope", Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}}}), wantErr: `unknown task "nope"`},
		{name: "message to an unknown member", event: ev(t, next, hour, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m2", To: "nobody"}), wantErr: `no member "nobody"`},
		{name: "message id reused", event: ev(t, next, hour, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m1", To: "bob"}), wantErr: `message "m1" exists`},
		// Apply asks an event the precondition of the action that caused it.
		{name: "work beyond the effort left", event: ev(t, next, hour, payload.EvWorkStarted, "bob", payload.WorkStarted{Task: "api", Work: 1000 * clock.Hour, Until: clock.Time(2 * hour)}), wantErr: `is not within the`},
		{name: "handoff to who cannot take it", event: ev(t, next, hour, payload.EvTaskHandedOff, "bob", payload.TaskHandedOff{Task: "api", To: "dave"}), wantErr: `dave cannot take task "api"`},
		{name: "handoff to oneself", event: ev(t, next, hour, payload.EvTaskHandedOff, "bob", payload.TaskHandedOff{Task: "api", To: "bob"}), wantErr: `handoff to yourself`},
		{name: "rejection without a reason", event: ev(t, next, hour, payload.EvApprovalRejected, "alice", payload.ApprovalDecided{Request: "r1", Reason: " "}), wantErr: `reject needs a reason`},
		{name: "request routed to the wrong approver", event: ev(t, next, hour, payload.EvApprovalRequested, "carol", payload.ApprovalRequested{Request: "r2", Task: "api", Chain: "purchases", Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}}}), wantErr: `task "api" is held by bob, not carol`},
		{name: "request for a task with a pending one", event: ev(t, next, hour, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r2", Task: "build-servers", Chain: "purchases", Amount: 3000, Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}}}), wantErr: `already has request r1`},
		{
			name:   "request with steps the chain does not route",
			before: []events.Event{ev(t, next, hour, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "load-test-kit"})},
			event: ev(t, next+1, hour, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r2", Task: "load-test-kit", Chain: "purchases", Amount: 8000,
				Steps: []org.RequestStep{{Role: "lead", Approver: "carol"}, {Role: "finance", Approver: "frank"}}}),
			wantErr: `is not the approval task "load-test-kit"`,
		},
		{name: "escalation to who the chain does not name", event: ev(t, next, hour, payload.EvApprovalEscalated, "", payload.ApprovalEscalated{Request: "r1", Step: 0, From: "alice", To: "carol", Reason: "timeout"}), wantErr: `not "carol"`},
		{name: "escalation asked by another member", event: ev(t, next, hour, payload.EvApprovalEscalated, "carol", payload.ApprovalEscalated{Request: "r1", Step: 0, From: "alice", To: "carol", Reason: "requested"}), wantErr: `request r1 is bob's, not yours to escalate`},
		{name: "message without text", event: ev(t, next, hour, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m2", To: "bob", Text: " "}), wantErr: `message needs text`},
		{name: "message giving what the sender does not hold", event: ev(t, next, hour, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m2", To: "bob", Text: "the code", Topic: "vpn"}), wantErr: `info-source`},
		{name: "wait until the past", event: ev(t, next, hour, payload.EvMemberWaiting, "bob", payload.MemberWaiting{Until: clock.Time(hour - 1)}), wantErr: `not in the future`},
		{name: "message delivered twice", event: ev(t, next, hour, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"}), wantErr: `message "m1" is not on its way`},
		{name: "unknown message delivered", event: ev(t, next, hour, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m9"}), wantErr: `message "m9" is not on its way`},
		{name: "turn by an unknown actor", event: ev(t, next, hour, payload.EvTurn, "mallory", payload.Turn{Seen: 8}), wantErr: `unknown actor "mallory"`},
		{name: "malformed payload", event: events.Event{Seq: next, Time: hour, Type: payload.EvTaskClaimed, Actor: "carol", Payload: json.RawMessage(`{"task": 5}`)}, wantErr: "payload:"},
		{name: "unknown event type", event: ev(t, next, hour, "task.stolen", "carol", nil), wantErr: "unknown event type"},
		{
			name:    "event after the session ended",
			before:  []events.Event{ev(t, next, hour, payload.EvSessionEnded, "", payload.SessionEnded{Reason: "horizon"})},
			event:   ev(t, next+1, hour, payload.EvMemberWaiting, "bob", payload.MemberWaiting{}),
			wantErr: "session already ended",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustState(t, badPrefix(t)...)
			mustApply(t, st, tt.before...)
			st.TakeWoken()
			hash, seq, now := st.Hash(), st.LastSeq, st.Now
			err := st.Apply(tt.event)
			if !errors.Is(err, org.ErrBadEvent) {
				t.Fatalf("Apply: got %v, want an error wrapping ErrBadEvent", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Apply: got %q, want it to contain %q", err, tt.wantErr)
			}
			if got := st.Hash(); got != hash {
				t.Errorf("Hash after a rejected event: got %x, want %x (unchanged)", got, hash)
			}
			if st.LastSeq != seq || st.Now != now {
				t.Errorf("got LastSeq %d Now %d, want %d and %d (unchanged)", st.LastSeq, st.Now, seq, now)
			}
			if got := st.TakeWoken(); len(got) != 0 {
				t.Errorf("TakeWoken after a rejected event: got %v, want nothing", got)
			}
		})
	}
}

// TestApplyFirstEvent: a log opens with session.started; nothing else can
// come first.
func TestApplyFirstEvent(t *testing.T) {
	st := org.New(mustWorld(t))
	err := st.Apply(ev(t, 1, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "api"}))
	if !errors.Is(err, org.ErrBadEvent) {
		t.Errorf("Apply(task.claimed at seq 1): got %v, want an error wrapping ErrBadEvent", err)
	}
}

// hashScript is a short session; vary changes one thing in it.
func hashScript(tb testing.TB, vary string) []events.Event {
	tb.Helper()
	busy, text, work, reason := clock.Time(5*minute), "spec is on its way", 8*clock.Hour, "horizon"
	switch vary {
	case "busy":
		busy = clock.Time(9 * hour) // past the work's end, so it lasts
	case "text":
		text += "!"
	case "work":
		work = 7 * clock.Hour
	case "reason":
		reason = "quiescent"
	}
	return []events.Event{
		started(tb),
		ev(tb, 2, 0, payload.EvTaskClaimed, "alice", payload.TaskClaimed{Task: "spec", BusyUntil: busy}),
		ev(tb, 3, 0, payload.EvWorkStarted, "alice", payload.WorkStarted{Task: "spec", Work: work, Until: clock.Time(work)}),
		ev(tb, 4, 0, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m1", To: "bob", Text: text}),
		ev(tb, 5, int64(work), payload.EvWorkFinished, "", payload.WorkFinished{Task: "spec", Work: work}),
		ev(tb, 6, int64(work), payload.EvSessionEnded, "", payload.SessionEnded{Reason: reason}),
	}
}

func TestHash(t *testing.T) {
	base := mustState(t, hashScript(t, "")...).Hash()
	if again := mustState(t, hashScript(t, "")...).Hash(); again != base {
		t.Fatalf("Hash of the same events twice: got %x and %x, want equal", base, again)
	}
	if fresh := mustState(t, started(t)).Hash(); fresh == base {
		t.Fatalf("Hash after 1 and after 6 events: both %x, want different", base)
	}
	for _, vary := range []string{"busy", "text", "work", "reason"} {
		t.Run(vary, func(t *testing.T) {
			if got := mustState(t, hashScript(t, vary)...).Hash(); got == base {
				t.Errorf("Hash with %s changed: got %x, the same as the original's; want different", vary, got)
			}
		})
	}
}

// TestSnapshotRestore: a state restored from its snapshot has the same hash,
// and applying the same events to both keeps them equal.
func TestSnapshotRestore(t *testing.T) {
	evs := hashScript(t, "")
	for n := 1; n < len(evs); n++ {
		t.Run(evs[n-1].Type, func(t *testing.T) {
			st := mustState(t, evs[:n]...)
			restored, err := org.Restore(st.World, st.Snapshot())
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if got, want := restored.Hash(), st.Hash(); got != want {
				t.Fatalf("Hash after Restore: got %x, want %x", got, want)
			}
			mustApply(t, st, evs[n:]...)
			mustApply(t, restored, evs[n:]...)
			if got, want := restored.Hash(), st.Hash(); got != want {
				t.Errorf("Hash after the rest of the events: got %x on the restored state, want %x", got, want)
			}
		})
	}
}

func TestViewAvailableAndUpcoming(t *testing.T) {
	atStart := []events.Event{started(t)}
	specDone := []events.Event{
		started(t),
		ev(t, 2, 0, payload.EvTaskClaimed, "alice", payload.TaskClaimed{Task: "spec"}),
		ev(t, 3, 0, payload.EvWorkStarted, "alice", payload.WorkStarted{Task: "spec", Work: 8 * clock.Hour, Until: clock.Time(8 * hour)}),
		ev(t, 4, 8*hour, payload.EvWorkFinished, "", payload.WorkFinished{Task: "spec", Work: 8 * clock.Hour}),
		ev(t, 5, 8*hour, payload.EvTaskCompleted, "alice", payload.TaskCompleted{Task: "spec"}),
		ev(t, 6, 8*hour, payload.EvTaskClaimed, "carol", payload.TaskClaimed{Task: "db-schema"}),
	}
	// Upcoming is nearest first (fewest dependencies pending), then most valuable, then world order.
	engineerLater := []string{"ci", "load-test-kit", "backend", "frontend", "integration"}
	tests := []struct {
		name          string
		events        []events.Event
		member        string
		wantAssigned  []string
		wantAvailable []string
		wantUpcoming  []string
	}{
		{"lead at start", atStart, "alice", []string{}, []string{"spec"}, []string{"launch", "security-review", "beta"}},
		{"engineer at start", atStart, "bob", []string{}, []string{}, []string{"api", "db-schema", "ci", "build-servers", "load-test-kit", "backend", "frontend", "integration"}},
		{"designer at start", atStart, "dave", []string{}, []string{}, []string{"design-ux", "docs"}},
		{"finance serves no queue", atStart, "frank", []string{}, []string{}, []string{}},
		{"unknown member", atStart, "mallory", []string{}, []string{}, []string{}},
		{"lead after spec", specDone, "alice", []string{}, []string{}, []string{"launch", "security-review", "beta"}},
		{"engineer after spec", specDone, "bob", []string{}, []string{"api", "build-servers"}, engineerLater},
		{"claimer after spec", specDone, "carol", []string{"db-schema"}, []string{"api", "build-servers"}, engineerLater},
		{"designer after spec", specDone, "dave", []string{}, []string{"design-ux"}, []string{"docs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := mustState(t, tt.events...).View(tt.member)
			for _, c := range []struct {
				what      string
				got, want []string
			}{
				{"assigned", ids(o.Assigned), tt.wantAssigned},
				{"available", ids(o.Available), tt.wantAvailable},
				{"upcoming", ids(o.Upcoming), tt.wantUpcoming},
			} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
	t.Run("waiting on", func(t *testing.T) {
		o := mustState(t, specDone...).View("bob")
		for _, v := range o.Upcoming {
			if v.ID == "backend" && !slices.Equal(v.Waiting, []string{"api", "db-schema"}) {
				t.Errorf("backend waiting_on: got %v, want [api db-schema]", v.Waiting)
			}
		}
	})
}

func TestViewApprovals(t *testing.T) {
	// bob asks for load-test-kit's 8000: the lead, then finance, must approve.
	evs := []events.Event{
		started(t),
		ev(t, 2, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "load-test-kit"}),
		ev(t, 3, 0, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r1", Task: "load-test-kit", Chain: "purchases", Amount: 8000,
			Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}, {Role: "finance", Approver: "frank"}}}),
		ev(t, 4, hour, payload.EvApprovalGranted, "alice", payload.ApprovalDecided{Request: "r1", Step: 0}),
		ev(t, 5, 2*hour, payload.EvApprovalGranted, "frank", payload.ApprovalDecided{Request: "r1", Step: 1}),
	}
	tests := []struct {
		name          string
		after         int // events applied
		member        string
		wantApprovals string // "request/step" of each request waiting for member
		wantCause     uint64
		wantTaskState string // bob's view of load-test-kit's approval
	}{
		{"alice before the request", 2, "alice", "", 1, "needed"},
		{"alice once asked", 3, "alice", "r1/0", 3, "pending"},
		{"frank while alice decides", 3, "frank", "", 0, "pending"},
		{"alice after granting", 4, "alice", "", 3, "pending"},
		{"frank after alice granted", 4, "frank", "r1/1", 4, "pending"},
		{"frank after granting", 5, "frank", "", 4, "approved"},
		{"bob once approved", 5, "bob", "", 5, "approved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustState(t, evs[:tt.after]...)
			o := st.View(tt.member)
			var got []string
			for _, r := range o.Approvals {
				got = append(got, r.ID+"/"+strconv.Itoa(r.Step))
			}
			if s := strings.Join(got, ","); s != tt.wantApprovals {
				t.Errorf("approvals: got %q, want %q", s, tt.wantApprovals)
			}
			if c := st.Member(tt.member).WakeCause; c != tt.wantCause {
				t.Errorf("WakeCause: got %d, want %d", c, tt.wantCause)
			}
			bob := st.View("bob")
			if len(bob.Assigned) != 1 || bob.Assigned[0].Approval != tt.wantTaskState {
				t.Errorf("bob's load-test-kit approval: got %+v, want %q", bob.Assigned, tt.wantTaskState)
			}
		})
	}
	t.Run("request view", func(t *testing.T) {
		o := mustState(t, evs[:3]...).View("alice")
		want := org.RequestView{ID: "r1", Task: "load-test-kit", Requester: "bob", Amount: 8000, Step: 0, Role: "lead", Approver: "alice",
			Status: org.RequestPending, TaskAssignee: "bob", TaskPurchase: 8000}
		if len(o.Approvals) != 1 || o.Approvals[0] != want {
			t.Errorf("got %+v, want [%+v]", o.Approvals, want)
		}
	})
}

func TestViewInbox(t *testing.T) {
	evs := []events.Event{
		started(t),
		ev(t, 2, 0, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m1", To: "bob", Text: "api first, please", DeliverAt: clock.Time(10 * minute)}),
		ev(t, 3, 10*minute, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"}),
		ev(t, 4, 11*minute, payload.EvTurn, "bob", payload.Turn{Turn: 1, Seen: 3, BusyUntil: clock.Time(12 * minute)}),
	}
	tests := []struct {
		name      string
		after     int
		wantInbox []org.MessageView
		wantCause uint64
	}{
		{"sent, not delivered", 2, []org.MessageView{}, 1},
		{"delivered", 3, []org.MessageView{{ID: "m1", From: "alice", Text: "api first, please", SentAt: 0}}, 3},
		{"read at the next turn", 4, []org.MessageView{}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustState(t, evs[:tt.after]...)
			if got := st.View("bob").Inbox; !slices.Equal(got, tt.wantInbox) {
				t.Errorf("inbox: got %+v, want %+v", got, tt.wantInbox)
			}
			if got := st.Member("bob").WakeCause; got != tt.wantCause {
				t.Errorf("WakeCause: got %d, want %d", got, tt.wantCause)
			}
			if got := st.View("alice").Inbox; len(got) != 0 {
				t.Errorf("sender's inbox: got %+v, want empty", got)
			}
		})
	}
}

// TestWaitingAndSeen checks the wake/seen rule: a member that waits without
// a time sleeps unless something woke it after the state it last observed.
func TestWaitingAndSeen(t *testing.T) {
	msg := func(seq uint64, at int64) []events.Event {
		return []events.Event{
			ev(t, seq, at, payload.EvMessageSent, "alice", payload.MessageSent{Message: "m1", To: "bob", Text: "ping"}),
			ev(t, seq+1, at, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"}),
		}
	}
	turn := func(seq uint64, seen uint64) events.Event {
		return ev(t, seq, 0, payload.EvTurn, "bob", payload.Turn{Seen: seen})
	}
	wait := func(seq uint64, until int64) events.Event {
		return ev(t, seq, 0, payload.EvMemberWaiting, "bob", payload.MemberWaiting{Until: clock.Time(until)})
	}
	tests := []struct {
		name        string
		events      []events.Event // after session.started
		wantPending bool
		wantBusy    clock.Time
	}{
		{
			name:   "nothing new since the turn",
			events: []events.Event{turn(2, 1), wait(3, 0)},
		},
		{
			name:        "woken after it observed",
			events:      append([]events.Event{turn(2, 1)}, append(msg(3, 0), wait(5, 0))...),
			wantPending: true,
		},
		{
			name:   "woken before it observed",
			events: append(msg(2, 0), turn(4, 3), wait(5, 0)),
		},
		{
			name:        "observed an older state than the wake",
			events:      append(msg(2, 0), turn(4, 2), wait(5, 0)),
			wantPending: true,
		},
		{
			name:        "waiting until a time",
			events:      []events.Event{turn(2, 1), wait(3, 2*hour)},
			wantPending: true,
			wantBusy:    clock.Time(2 * hour),
		},
		{
			name:        "timeout after a wake",
			events:      append(msg(2, 0), ev(t, 4, 0, payload.EvTurnTimeout, "bob", payload.TurnTimeout{Turn: 1, Seen: 1})),
			wantPending: true,
		},
		{
			name:   "timeout with nothing new",
			events: []events.Event{ev(t, 2, 0, payload.EvTurnTimeout, "bob", payload.TurnTimeout{Turn: 1, Seen: 1})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustState(t, append([]events.Event{started(t)}, tt.events...)...)
			m := st.Member("bob")
			if m.Pending != tt.wantPending {
				t.Errorf("Pending: got %v, want %v (WakeCause %d, Seen %d)", m.Pending, tt.wantPending, m.WakeCause, m.Seen)
			}
			if m.BusyUntil != tt.wantBusy {
				t.Errorf("BusyUntil: got %d, want %d", m.BusyUntil, tt.wantBusy)
			}
		})
	}
}

func TestCounters(t *testing.T) {
	st := mustState(t,
		started(t),
		ev(t, 2, 0, payload.EvTurn, "bob", payload.Turn{Turn: 1, Seen: 1}),
		ev(t, 3, 0, payload.EvActionRejected, "bob", payload.ActionRejected{Kind: "policy", Rule: "role-required"}),
		ev(t, 4, 0, payload.EvActionRejected, "bob", payload.ActionRejected{Kind: "state"}),
		ev(t, 5, 0, payload.EvTurnTimeout, "carol", payload.TurnTimeout{Turn: 1, Seen: 1}),
	)
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"turns", st.Turns, 1},
		{"rejections", st.Rejections, 2},
		{"violations", st.Violations, 1},
		{"timeouts", st.Timeouts, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, c.got, c.want)
		}
	}
	if m := st.Member("bob"); m.Turn != 1 || m.Seen != 1 {
		t.Errorf("bob: got Turn %d Seen %d, want 1 and 1", m.Turn, m.Seen)
	}
	if got := st.View("bob").Rejected; len(got) != 2 || got[0].Rule != "role-required" || got[1].Kind != "state" {
		t.Errorf("bob's rejected: got %+v, want the policy then the state rejection", got)
	}
	mustApply(t, st, ev(t, 6, 0, payload.EvTurn, "bob", payload.Turn{Turn: 2, Seen: 5}))
	if got := st.View("bob").Rejected; len(got) != 0 {
		t.Errorf("bob's rejected after his next turn: got %+v, want none", got)
	}
}

func TestTurnFailed(t *testing.T) {
	failed := func(seq uint64, who string, turn uint64) events.Event {
		return ev(t, seq, 0, payload.EvTurnFailed, who, payload.TurnFailed{Turn: turn, Seen: 1, Reason: "endpoint down"})
	}
	st := mustState(t, started(t), failed(2, "bob", 1), failed(3, "carol", 1))
	if st.TurnErrors != 2 || st.Turns != 0 || st.Timeouts != 0 {
		t.Fatalf("counters: turn errors %d, turns %d, timeouts %d; want 2, 0, 0", st.TurnErrors, st.Turns, st.Timeouts)
	}
	if m := st.Member("bob"); m.Turn != 1 || m.Failed != 1 || m.Seen != 1 || m.Pending {
		t.Fatalf("bob: Turn %d, Failed %d, Seen %d, Pending %v; want 1, 1, 1, false", m.Turn, m.Failed, m.Seen, m.Pending)
	}
	// alice, dave and erin have not been asked yet: so far every seat asked failed.
	if !st.AgentsFailed() {
		t.Fatal("AgentsFailed: false after only failures")
	}
	mustApply(t, st, ev(t, 4, 0, payload.EvTurnTimeout, "alice", payload.TurnTimeout{Turn: 1, Seen: 1}))
	if st.AgentsFailed() {
		t.Fatal("AgentsFailed: true although alice's turn timed out (not a failure of her backend)")
	}
	if err := st.Apply(failed(5, "frank", 1)); err == nil {
		t.Fatal("a simulated colleague's turn.failed applies; want an error")
	}
	// The counts survive a checkpoint, and a state without failures hashes
	// as before (no "turn_errors" or "failed" keys).
	r, err := org.Restore(st.World, st.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash() != st.Hash() || r.TurnErrors != 2 || r.Member("bob").Failed != 1 {
		t.Fatalf("restored: turn errors %d, bob failed %d, same hash %v", r.TurnErrors, r.Member("bob").Failed, r.Hash() == st.Hash())
	}
	if s := string(mustState(t, started(t)).Snapshot()); strings.Contains(s, "turn_errors") || strings.Contains(s, `"failed"`) {
		t.Fatalf("a snapshot without failures mentions them: %.200s", s)
	}
}
