package analyze_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/worlds"
)

// world: ann (lead, reports to dan) approves purchases above 100, with a
// 4h escalation; bob and cat are engineers. order needs a purchase; rollout
// waits on order; c waits on a and b.
const worldSrc = `version: 1
name: trace-unit
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: eng}, {id: lead}, {id: director}]
teams: [{id: t, budget: 100000}]
members:
  - {id: ann, role: lead, team: t, manager: dan}
  - {id: bob, role: eng, team: t, manager: ann}
  - {id: cat, role: eng, team: t, manager: ann}
  - {id: dan, role: director, team: t}
queues: [{id: q, served_by: [eng, lead]}]
approvals:
  - id: buy
    steps:
      - {role: lead, above: 100, escalate_after: 4h}
projects:
  - id: p
    team: t
    queue: q
    deadline: 1d
    tasks:
      - {id: order, role: eng, effort: 1h, purchase: 3000}
      - {id: rollout, role: eng, effort: 2h, deps: [order]}
      - {id: a, role: eng, effort: 1h}
      - {id: b, role: eng, effort: 1h}
      - {id: c, role: eng, effort: 2h, deps: [a, b]}
interruptions:
  - {at: 1h30m, kind: leave, member: ann, for: 2d}
  - {at: 3h, kind: outage, queue: q, for: 2h}
  - {at: 4h, kind: change, task: c, effort: 1h}
`

const (
	minute = int64(clock.Minute)
	hour   = int64(clock.Hour)
)

// logBuilder writes a session's events by hand, as the engine would.
type logBuilder struct {
	tb  testing.TB
	w   *worlds.World
	evs []events.Event
	key [32]byte
}

func newLog(tb testing.TB) *logBuilder { return newLogOf(tb, worldSrc) }

// newLogOf is newLog of a session of world src.
func newLogOf(tb testing.TB, src string) *logBuilder {
	tb.Helper()
	w, err := worlds.Load("trace-unit.yaml", []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	b := &logBuilder{tb: tb, w: w}
	b.add(0, payload.EvSessionStarted, "", 0, payload.SessionStarted{Format: payload.LogFormat, World: w.Name, WorldFile: "trace-unit.yaml", WorldHash: w.Hash, Seed: 1, Load: 1, Source: src})
	return b
}

// add appends an event and returns its seq.
func (b *logBuilder) add(t int64, typ, actor string, cause uint64, v any) uint64 {
	b.tb.Helper()
	p, err := json.Marshal(v)
	if err != nil {
		b.tb.Fatal(err)
	}
	seq := uint64(len(b.evs) + 1)
	b.evs = append(b.evs, events.Event{ID: events.NewID(b.key, 0, t, seq), Session: "S", Seq: seq, Time: t, Type: typ, Actor: actor, Cause: cause, Payload: p})
	return seq
}

// turn records a member's turn, caused by cause.
func (b *logBuilder) turn(t int64, actor string, cause uint64) uint64 {
	return b.add(t, payload.EvTurn, actor, cause, payload.Turn{Turn: 1, Seen: uint64(len(b.evs)), Actions: []org.Action{}})
}

// do is a member doing one thing on task in a turn of its own.
func (b *logBuilder) do(t int64, actor string, cause uint64, typ string, v any) uint64 {
	return b.add(t, typ, actor, b.turn(t, actor, cause), v)
}

// finish claims, works (effort) and completes task from t; it returns the
// completion's seq and time.
func (b *logBuilder) finish(t int64, actor, task string, effort int64, cause uint64) (uint64, int64) {
	b.do(t, actor, cause, payload.EvTaskClaimed, payload.TaskClaimed{Task: task})
	ws := b.do(t, actor, cause, payload.EvWorkStarted, payload.WorkStarted{Task: task, Work: clock.Duration(effort), Until: clock.Time(t + effort)})
	b.add(t+effort, payload.EvWorkFinished, actor, ws, payload.WorkFinished{Task: task, Work: clock.Duration(effort)})
	done := b.do(t+effort, actor, ws, payload.EvTaskCompleted, payload.TaskCompleted{Task: task})
	return done, t + effort
}

func (b *logBuilder) seq() iterSeq { return iterSeq(b.evs) }

type iterSeq []events.Event

func (s iterSeq) all(yield func(events.Event, error) bool) {
	for _, ev := range s {
		if !yield(ev, nil) {
			return
		}
	}
}

func (b *logBuilder) load() *analyze.Session {
	b.tb.Helper()
	s, err := analyze.Load(b.seq().all)
	if err != nil {
		b.tb.Fatal(err)
	}
	return s
}

func (b *logBuilder) work(from, to int64) clock.Duration {
	return b.w.Calendar.WorkBetween(clock.Time(from), clock.Time(to))
}

// leaveLog (written by hand, so no escalation moves the step): bob works
// order and asks for approval at 1h06m; ann goes on leave at 1h30m, returns
// two working days later and approves; bob completes order a day and more
// after its deadline.
type leaveLog struct {
	*logBuilder
	request, left, returned, granted, done uint64
	requestAt, backAt, doneAt              int64
}

func newLeaveLog(tb testing.TB) *leaveLog {
	b := &leaveLog{logBuilder: newLog(tb)}
	b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "order"})
	ws := b.do(0, "bob", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "order", Work: clock.Duration(hour), Until: clock.Time(hour)})
	wf := b.add(hour, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "order", Work: clock.Duration(hour)})
	b.requestAt = hour + 6*minute
	b.request = b.do(b.requestAt, "bob", wf, payload.EvApprovalRequested, payload.ApprovalRequested{Request: "r1", Task: "order", Chain: "buy", Amount: 3000,
		Steps: []org.RequestStep{{Role: "lead", Approver: "ann"}}})
	until := b.w.Calendar.AddWork(clock.Time(90*minute), 2*clock.Duration(b.w.Calendar.DayLength()))
	b.left = b.add(90*minute, payload.EvMemberLeft, "ann", 0, payload.MemberLeft{InterruptionFired: payload.InterruptionFired{Interruption: 0}, Until: until})
	b.backAt = int64(until)
	b.returned = b.add(b.backAt, payload.EvMemberReturned, "ann", b.left, struct{}{})
	b.granted = b.do(b.backAt, "ann", b.returned, payload.EvApprovalGranted, payload.ApprovalDecided{Request: "r1", Step: 0})
	b.doneAt = b.backAt + 15*minute
	b.done = b.do(b.doneAt, "bob", b.granted, payload.EvTaskCompleted, payload.TaskCompleted{Task: "order"})
	return b
}

func TestTaskLateBecauseApproverOnLeave(t *testing.T) {
	b := newLeaveLog(t)
	s := b.load()
	tr, err := s.Task("order")
	if err != nil {
		t.Fatal(err)
	}
	deadline := s.State.Task("order").Deadline
	if tr.Outcome != "late" || tr.Late.MS != b.work(int64(deadline), b.doneAt) || tr.DoneBy != "bob" || tr.Done.Seq != b.done {
		t.Fatalf("got outcome %q, late %v, done by %q at #%v; want late by %v, bob at #%d", tr.Outcome, tr.Late, tr.DoneBy, tr.Done, b.work(int64(deadline), b.doneAt), b.done)
	}
	if len(tr.Delays) == 0 {
		t.Fatal("no delays")
	}
	d := tr.Delays[0]
	wantWait := b.work(b.requestAt, b.backAt)
	if d.Kind != analyze.DelayApproval || d.Who != "ann" || d.Waited.MS != wantWait || d.Seq != b.left {
		t.Fatalf("longest delay %+v; want the approval with ann, %v, explained by member.left #%d", d, wantWait, b.left)
	}
	h := tr.Approvals[0].Steps[0].Holds[0]
	if h.OnLeave == nil || h.OnLeave.From.Seq != b.left || h.OnLeave.Returned == nil || h.OnLeave.Returned.Seq != b.returned {
		t.Fatalf("approval hold %+v does not name ann's leave #%d..#%d", h, b.left, b.returned)
	}
	if want := b.work(90*minute, b.backAt); h.LeaveWait.MS != want || h.End != "granted" {
		t.Fatalf("leave part of the wait %v, end %q; want %v, granted", h.LeaveWait, h.End, want)
	}
	for _, w := range []string{"ann", "on leave", d.Waited.Text, "late"} {
		if !strings.Contains(tr.Summary, w) {
			t.Errorf("summary %q does not mention %q", tr.Summary, w)
		}
	}
	// The Cause chain of the completion reaches the leave through the return and the grant.
	var chain []uint64
	for _, l := range tr.Chain {
		chain = append(chain, l.Seq)
	}
	want := []uint64{b.done, b.done - 1, b.granted, b.granted - 1, b.returned, b.left}
	if !slices.Equal(chain, want) {
		t.Fatalf("chain %v, want %v", chain, want)
	}
	var tl []uint64
	for _, e := range tr.Timeline {
		tl = append(tl, e.Seq)
		if e.Seq == b.granted && (e.Because == nil || e.Because.Seq != b.returned) {
			t.Errorf("the grant's because is %+v, want member.returned #%d", e.Because, b.returned)
		}
	}
	for _, seq := range []uint64{b.request, b.left, b.returned, b.granted, b.done} {
		if !slices.Contains(tl, seq) {
			t.Errorf("timeline %v lacks #%d", tl, seq)
		}
	}
	if slices.Contains(tl, b.done-1) {
		t.Errorf("timeline %v shows a turn", tl)
	}

	// rollout waited on order: its dependency delay is bob's, until order was done.
	ro, err := s.Task("rollout")
	if err != nil {
		t.Fatal(err)
	}
	if ro.Ready == nil || ro.Ready.Seq != b.done || !ro.Deps[0].Gating || ro.Delays[0].Kind != analyze.DelayDependency ||
		ro.Delays[0].Waited.MS != b.work(0, b.doneAt) || ro.Outcome != "overdue" {
		t.Fatalf("rollout: ready %+v, deps %+v, delays %+v, outcome %q", ro.Ready, ro.Deps, ro.Delays, ro.Outcome)
	}
}

func TestMemberTrace(t *testing.T) {
	b := newLeaveLog(t)
	s := b.load()
	ann, err := s.Member("ann")
	if err != nil {
		t.Fatal(err)
	}
	if len(ann.Leaves) != 1 || ann.Leaves[0].From.Seq != b.left || ann.Leaves[0].Returned.Seq != b.returned {
		t.Fatalf("ann's leaves %+v", ann.Leaves)
	}
	if len(ann.Approving) != 1 || ann.Approving[0].Requester != "bob" || ann.ApprovalWait.MS != b.work(b.requestAt, b.backAt) {
		t.Fatalf("ann approving %+v, approval wait %v", ann.Approving, ann.ApprovalWait)
	}
	bob, err := s.Member("bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(bob.Holds) != 1 || bob.Holds[0].Task != "order" || bob.Holds[0].End != "completed" {
		t.Fatalf("bob's holds %+v", bob.Holds)
	}
	if len(bob.Awaiting) != 1 || bob.Awaiting[0].Approver != "ann" {
		t.Fatalf("bob awaiting %+v", bob.Awaiting)
	}
	if len(bob.Blocked) != 1 || bob.Blocked[0].Kind != analyze.DelayApproval || bob.Blocked[0].Who != "ann" {
		t.Fatalf("bob blocked by %+v, want ann's approval", bob.Blocked)
	}
	if _, err := s.Member("zed"); !errors.Is(err, analyze.ErrUnknown) {
		t.Fatalf("unknown member: got %v", err)
	}
}

// TestEscalationOutageChange: a request that escalates on timeout and is
// granted by the manager; a task whose queue goes down while it is open and
// whose requirements change; c made ready by b, done after a.
func TestEscalationOutageChange(t *testing.T) {
	b := newLog(t)
	b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "order"})
	doneA, _ := b.finish(0, "cat", "a", hour, 1)
	reqAt := hour + 10*minute
	req := b.do(reqAt, "bob", 1, payload.EvApprovalRequested, payload.ApprovalRequested{Request: "r1", Task: "order", Chain: "buy", Amount: 3000,
		Steps: []org.RequestStep{{Role: "lead", Approver: "ann"}}})
	down := b.add(3*hour, payload.EvQueueDown, "", 0, payload.QueueDown{InterruptionFired: payload.InterruptionFired{Interruption: 1}, Queue: "q", Until: clock.Time(5 * hour)})
	up := b.add(5*hour, payload.EvQueueUp, "", down, payload.QueueUp{Queue: "q"})
	changed := b.add(5*hour, payload.EvTaskChanged, "", 0, payload.TaskChanged{InterruptionFired: payload.InterruptionFired{Interruption: 2}, Task: "c", Effort: clock.Duration(hour)})
	b.do(5*hour, "cat", up, payload.EvTaskClaimed, payload.TaskClaimed{Task: "b"})
	ws := b.do(5*hour, "cat", up, payload.EvWorkStarted, payload.WorkStarted{Task: "b", Work: clock.Duration(hour), Until: clock.Time(6 * hour)})
	escAt := int64(b.w.Calendar.AddWork(clock.Time(reqAt), 4*clock.Hour))
	esc := b.add(escAt, payload.EvApprovalEscalated, "", req, payload.ApprovalEscalated{Request: "r1", Step: 0, From: "ann", To: "dan", Reason: "timeout"})
	grant := b.do(escAt+30*minute, "dan", esc, payload.EvApprovalGranted, payload.ApprovalDecided{Request: "r1", Step: 0})
	bAt := 6 * hour
	b.add(bAt, payload.EvWorkFinished, "cat", ws, payload.WorkFinished{Task: "b", Work: clock.Duration(hour)})
	doneB := b.do(bAt, "cat", ws, payload.EvTaskCompleted, payload.TaskCompleted{Task: "b"})
	s := b.load()

	tr, err := s.Task("order")
	if err != nil {
		t.Fatal(err)
	}
	holds := tr.Approvals[0].Steps[0].Holds
	if len(holds) != 2 || holds[0].Approver != "ann" || holds[0].End != "escalated to dan" || holds[0].To.Seq != esc ||
		holds[1].Approver != "dan" || holds[1].Via != "escalated (timeout)" || holds[1].End != "granted" || holds[1].To.Seq != grant {
		t.Fatalf("holds %+v", holds)
	}
	if holds[0].Waited.MS != 4*clock.Hour || holds[1].Waited.MS != 30*clock.Minute {
		t.Fatalf("waits %v and %v, want 4h and 30m", holds[0].Waited, holds[1].Waited)
	}
	if tr.Approvals[0].Status != org.RequestApproved {
		t.Fatalf("status %q", tr.Approvals[0].Status)
	}

	c, err := s.Task("c")
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready == nil || c.Ready.Seq != doneB || c.Deps[0].Gating || !c.Deps[1].Gating || c.Deps[0].Done.Seq != doneA {
		t.Fatalf("c: ready %+v, deps %+v; want made ready by b (#%d)", c.Ready, c.Deps, doneB)
	}
	kinds := map[string]analyze.Delay{}
	for _, d := range c.Delays {
		kinds[d.Kind] = d
	}
	if d := kinds[analyze.DelayDependency]; d.Who != "cat" || d.Waited.MS != b.work(0, bAt) || d.Seq != doneB {
		t.Errorf("dependency delay %+v", d)
	}
	if d, ok := kinds[analyze.DelayOutage]; ok {
		t.Errorf("c was ready only after the outage, yet has %+v", d)
	}
	bt, _ := s.Task("b")
	var outage []analyze.Delay
	for _, d := range bt.Delays {
		if d.Kind == analyze.DelayOutage {
			outage = append(outage, d)
		}
	}
	if len(outage) != 1 || outage[0].Waited.MS != 2*clock.Hour || outage[0].Seq != down || outage[0].Task != "b" {
		t.Errorf("b's outage delays %+v, want 2h from #%d", outage, down)
	}
	if d := kinds[analyze.DelayChange]; d.Waited.MS != clock.Hour || d.Seq != changed {
		t.Errorf("change delay %+v, want +1h at #%d", d, changed)
	}
	if d := kinds[analyze.DelayUnclaimed]; d.Waited.MS != b.work(bAt, int64(s.State.Now)) {
		t.Errorf("unclaimed delay %+v", d)
	}
	// The outage came after a was done: a was not held up by it.
	a, _ := s.Task("a")
	for _, d := range a.Delays {
		if d.Kind == analyze.DelayOutage {
			t.Errorf("a was done before the outage, yet has %+v", d)
		}
	}

	g, err := s.Goal("p")
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, r := range g.CriticalPath {
		path = append(path, r.Task)
	}
	// rollout and c are the open sinks; the first in file order ends the
	// path, which walks back through its gating dependency.
	if !slices.Equal(path, []string{"order", "rollout"}) {
		t.Fatalf("critical path %v, want [order rollout]", path)
	}
	// By effort: a (1h) + c (2h, +1h by the change) beats order (1h) + rollout (2h).
	if !slices.Equal(g.Planned, []string{"a", "c"}) {
		t.Fatalf("planned path %v, want [a c]", g.Planned)
	}
	if g.Done != 2 || g.OnTime != 2 || g.Bonus {
		t.Fatalf("goal: %d done, %d on time, bonus %v; want 2, 2, no", g.Done, g.OnTime, g.Bonus)
	}
	if _, err := s.Goal("nope"); !errors.Is(err, analyze.ErrUnknown) {
		t.Fatalf("unknown goal: %v", err)
	}
}

func TestCompare(t *testing.T) {
	a := newLeaveLog(t)
	sa := a.load()

	t.Run("itself", func(t *testing.T) {
		d := analyze.Compare(sa, a.load())
		if d.Diverged || d.Seq != 0 || d.IDsFrom != 0 || len(d.Outcomes) != 0 || len(d.Rules) != 0 {
			t.Fatalf("a log against itself: %+v", d)
		}
	})
	t.Run("other ids", func(t *testing.T) {
		b := newLeaveLog(t)
		b.key[0] = 1
		for i := 5; i < len(b.evs); i++ {
			b.evs[i].ID = events.NewID(b.key, 0, b.evs[i].Time, b.evs[i].Seq)
		}
		d := analyze.Compare(sa, b.load())
		if d.Diverged || d.IDsFrom != 6 {
			t.Fatalf("same events with other IDs from #6: %+v", d)
		}
	})
	t.Run("approved earlier", func(t *testing.T) {
		// Another run: ann approves before her leave, so order is done on time.
		b := newLog(t)
		b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "order"})
		ws := b.do(0, "bob", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "order", Work: clock.Duration(hour), Until: clock.Time(hour)})
		wf := b.add(hour, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "order", Work: clock.Duration(hour)})
		req := b.do(hour+6*minute, "bob", wf, payload.EvApprovalRequested, payload.ApprovalRequested{Request: "r1", Task: "order", Chain: "buy", Amount: 3000,
			Steps: []org.RequestStep{{Role: "lead", Approver: "ann"}}})
		div := uint64(len(b.evs) + 1)
		g := b.do(hour+10*minute, "ann", req, payload.EvApprovalGranted, payload.ApprovalDecided{Request: "r1", Step: 0})
		b.do(hour+20*minute, "bob", g, payload.EvActionRejected, payload.ActionRejected{Action: org.Action{Type: org.ActWork, Task: "c"}, Kind: "policy", Rule: "dependencies-first"})
		b.do(hour+30*minute, "bob", g, payload.EvTaskCompleted, payload.TaskCompleted{Task: "order"})
		sb := b.load()
		d := analyze.Compare(sa, sb)
		if !d.Diverged || d.Seq != div || d.A == nil || d.B == nil || d.A.Seq != div || d.B.Type != payload.EvTurn || d.A.Type != payload.EvMemberLeft {
			t.Fatalf("diverged %v at #%d (A %+v, B %+v), want #%d: member.left vs ann's turn", d.Diverged, d.Seq, d.A, d.B, div)
		}
		if !slices.Contains(d.Fields, "type") || d.Sides[0].After != len(a.evs)-int(div)+1 || d.Sides[1].Events != len(b.evs) {
			t.Fatalf("fields %v, sides %+v", d.Fields, d.Sides)
		}
		if len(d.Outcomes) != 1 || d.Outcomes[0].Task != "order" || !strings.HasPrefix(d.Outcomes[0].A, "late by bob") ||
			!strings.HasPrefix(d.Outcomes[0].B, "on time by bob") {
			t.Fatalf("outcomes %+v", d.Outcomes)
		}
		if len(d.Rules) != 1 || d.Rules[0] != (analyze.RuleDiff{Rule: "dependencies-first", A: 0, B: 1}) {
			t.Fatalf("rules %+v", d.Rules)
		}
		if d.Sides[0].Late != 1 || d.Sides[1].OnTime != 1 || d.Sides[1].Violations != 1 {
			t.Fatalf("sides %+v", d.Sides)
		}
	})
	t.Run("cause only", func(t *testing.T) {
		b := newLeaveLog(t)
		b.evs[b.left-1].Cause = 2
		d := analyze.Compare(sa, b.load())
		if !d.Diverged || d.Seq != b.left || !slices.Equal(d.Fields, []string{"cause"}) || d.A.Cause != 0 || d.B.Cause != 2 {
			t.Fatalf("a cause changed at #%d: %+v", b.left, d)
		}
	})
	t.Run("prefix", func(t *testing.T) {
		b := newLeaveLog(t)
		b.evs = b.evs[:10]
		d := analyze.Compare(sa, b.load())
		if !d.Diverged || d.Seq != 11 || d.B != nil || d.A == nil || d.A.Seq != 11 || !slices.Equal(d.Fields, []string{"length"}) {
			t.Fatalf("a prefix: %+v", d)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	empty := iterSeq(nil)
	if _, err := analyze.Load(empty.all); !errors.Is(err, analyze.ErrNotASession) {
		t.Errorf("empty log: %v", err)
	}
	b := newLeaveLog(t)
	if _, err := analyze.Load(iterSeq(b.evs[1:]).all); !errors.Is(err, analyze.ErrNotASession) {
		t.Errorf("log without session.started: %v", err)
	}
	bad := slices.Clone(b.evs)
	bad[4].Payload = []byte(`{"task":"nope"}`) // work.started on an unknown task
	if _, err := analyze.Load(iterSeq(bad).all); !errors.Is(err, org.ErrBadEvent) {
		t.Errorf("an event that does not apply: %v", err)
	}
	boom := errors.New("read failed")
	read := func(yield func(events.Event, error) bool) {
		if yield(b.evs[0], nil) {
			yield(events.Event{}, boom)
		}
	}
	if _, err := analyze.Load(read); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}

func TestFormatWork(t *testing.T) {
	day := 8 * clock.Hour
	for _, tc := range []struct {
		d    clock.Duration
		want string
	}{
		{0, "0m"}, {-clock.Hour, "0m"}, {30 * clock.Second, "0m"}, {45 * clock.Minute, "45m"},
		{2*clock.Hour + 5*clock.Minute, "2h5m"}, {day, "1d"}, {2*day + 24*clock.Minute, "2d24m"}, {day + clock.Hour, "1d1h"},
	} {
		if got := analyze.FormatWork(tc.d, day); got != tc.want {
			t.Errorf("FormatWork(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestChainStaleTurn: a turn records what last woke its member; when the
// member had already seen that at an earlier turn, the turn came due because
// its previous action ended, and the chain goes on from there.
func TestChainStaleTurn(t *testing.T) {
	b := newLeaveLog(t)
	// bob, busy completing order, takes rollout when that is over; his turn
	// still names the grant that woke him before.
	claim := b.do(b.doneAt+15*minute, "bob", b.granted, payload.EvTaskClaimed, payload.TaskClaimed{Task: "rollout"})
	s := b.load()
	chain := s.Chain(claim)
	var got []uint64
	for _, l := range chain {
		got = append(got, l.Seq)
	}
	want := []uint64{claim, claim - 1, b.done, b.done - 1, b.granted, b.granted - 1, b.returned, b.left}
	if !slices.Equal(got, want) {
		t.Fatalf("chain %v, want %v", got, want)
	}
	if !strings.Contains(chain[1].Note, "previous action ended") || chain[3].Note != "" {
		t.Fatalf("notes %q and %q; want only the stale turn explained", chain[1].Note, chain[3].Note)
	}
	tr, err := s.Task("rollout")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.Timeline {
		if e.Seq == claim && (e.Because == nil || e.Because.Seq != b.done) {
			t.Fatalf("the claim's because is %+v, want bob's completion of order #%d", e.Because, b.done)
		}
	}
}

// TestRecordedStateHash: session.ended must record the hash of the state
// its events rebuild; diff reports that hash.
func TestRecordedStateHash(t *testing.T) {
	b := newLeaveLog(t)
	h := b.load().State.Hash()
	good := hex.EncodeToString(h[:])
	end := b.add(b.doneAt, payload.EvSessionEnded, "", 0, payload.SessionEnded{Reason: "complete", StateHash: good})
	s := b.load()
	if d := analyze.Compare(s, s); d.Sides[0].StateHash != good || d.Sides[0].Ended != "complete" {
		t.Fatalf("side %+v, want state hash %s and ended complete", d.Sides[0], good)
	}
	b.evs[end-1].Payload = []byte(`{"reason":"complete","state_hash":"00"}`)
	if _, err := analyze.Load(b.seq().all); !errors.Is(err, analyze.ErrMismatch) {
		t.Fatalf("a wrong recorded hash: got %v, want ErrMismatch", err)
	}
}

// stintRun is a run of bob's work on task a, as the log builder wrote it:
// his first turn, his first work.started, his last work.finished and turn,
// and the completion.
type stintRun struct{ first, firstWork, lastFinished, lastTurn, done uint64 }

// stints writes bob claiming a at 0, working on it in six stints of 10
// minutes, each next one started at a turn woken by the session's start
// (long seen), and completing it.
func (b *logBuilder) stints() stintRun {
	var r stintRun
	r.first = b.turn(0, "bob", 1)
	b.add(0, payload.EvTaskClaimed, "bob", r.first, payload.TaskClaimed{Task: "a"})
	ws := b.add(0, payload.EvWorkStarted, "bob", r.first, payload.WorkStarted{Task: "a", Work: clock.Duration(10 * minute), Until: clock.Time(10 * minute)})
	r.firstWork = ws
	for i := int64(1); i <= 6; i++ {
		now := i * 10 * minute
		r.lastFinished = b.add(now, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "a", Work: clock.Duration(10 * minute)})
		r.lastTurn = b.turn(now, "bob", 1) // what woke bob last: the session's start, long seen
		if i < 6 {
			ws = b.add(now, payload.EvWorkStarted, "bob", r.lastTurn, payload.WorkStarted{Task: "a", Work: clock.Duration(10 * minute), Until: clock.Time(now + 10*minute)})
		} else {
			r.done = b.add(now, payload.EvTaskCompleted, "bob", r.lastTurn, payload.TaskCompleted{Task: "a"})
		}
	}
	return r
}

// TestChainCollapsesStints: many stints of work on one task show as the
// latest and the earliest with one "stints" link between.
func TestChainCollapsesStints(t *testing.T) {
	b := newLog(t)
	r := b.stints()
	chain := b.load().Chain(r.done)
	var got []string
	for _, l := range chain {
		got = append(got, fmt.Sprintf("%d:%s", l.Seq, l.Type))
	}
	want := []string{fmt.Sprintf("%d:%s", r.done, payload.EvTaskCompleted), fmt.Sprintf("%d:%s", r.lastTurn, payload.EvTurn),
		fmt.Sprintf("%d:%s", r.lastFinished, payload.EvWorkFinished), "0:stints", fmt.Sprintf("%d:%s", r.firstWork, payload.EvWorkStarted),
		fmt.Sprintf("%d:%s", r.first, payload.EvTurn), "1:" + payload.EvSessionStarted}
	if !slices.Equal(got, want) {
		t.Fatalf("chain %v, want %v", got, want)
	}
	if !strings.HasPrefix(chain[3].Text, "6 stints of bob's work on a") {
		t.Fatalf("stints link %q", chain[3].Text)
	}
}

// TestTaskHandedBackWaits: a task handed back to its queue waits there,
// unclaimed, until the next claim; the trace counts that wait (it counted
// the wait before the first claim alone) and the members who could have
// taken it are those with its skill.
func TestTaskHandedBackWaits(t *testing.T) {
	src := strings.Replace(worldSrc, "{id: cat, role: eng, team: t, manager: ann}", "{id: cat, role: eng, team: t, manager: ann, skills: [x]}", 1)
	src = strings.Replace(src, "{id: a, role: eng, effort: 1h}", "{id: a, role: eng, effort: 1h, skill: x}", 1)
	b := newLogOf(t, src)
	b.do(0, "cat", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "a"})
	back := b.do(hour, "cat", 1, payload.EvTaskHandedOff, payload.TaskHandedOff{Task: "a"})
	again := b.do(3*hour, "cat", back, payload.EvTaskClaimed, payload.TaskClaimed{Task: "a"})
	ws := b.do(3*hour, "cat", back, payload.EvWorkStarted, payload.WorkStarted{Task: "a", Work: clock.Duration(hour), Until: clock.Time(4 * hour)})
	b.add(4*hour, payload.EvWorkFinished, "cat", ws, payload.WorkFinished{Task: "a", Work: clock.Duration(hour)})
	b.do(4*hour, "cat", ws, payload.EvTaskCompleted, payload.TaskCompleted{Task: "a"})
	// b: handed back and never claimed again.
	b.do(4*hour, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "b"})
	gone := b.do(5*hour, "bob", 1, payload.EvTaskHandedOff, payload.TaskHandedOff{Task: "b"})
	b.turn(8*hour, "ann", 1)
	s := b.load()

	tr, err := s.Task("a")
	if err != nil {
		t.Fatal(err)
	}
	var found *analyze.Delay
	for i, d := range tr.Delays {
		if d.Kind == analyze.DelayUnclaimed && d.To.Seq == again {
			found = &tr.Delays[i]
		}
	}
	if found == nil {
		t.Fatalf("no unclaimed wait from the hand-back (#%d) to the claim (#%d) in %+v", back, again, tr.Delays)
	}
	if want := b.work(hour, 3*hour); found.Waited.MS != want || found.From.Seq != back || found.Who != "cat" {
		t.Fatalf("the wait %+v, want %s from #%d until cat's claim", found, clock.Duration(want), back)
	}
	if !strings.Contains(found.Text, "back in its queue for 2h,") || !strings.Contains(found.Text, "the 1 member who could take it: cat") {
		t.Fatalf("the wait's text %q: want the queue's wait and cat alone (bob lacks skill x)", found.Text)
	}

	tr, err = s.Task("b")
	if err != nil {
		t.Fatal(err)
	}
	// Before bob's claim, cat held a twice: named once, with both holds' time.
	if j := slices.IndexFunc(tr.Delays, func(d analyze.Delay) bool { return strings.Contains(d.Text, "cat held a (2h)") }); j < 0 {
		t.Errorf("b's waits %+v: want cat's two holds of a as one, a (2h)", tr.Delays)
	}
	i := slices.IndexFunc(tr.Delays, func(d analyze.Delay) bool { return d.From.Seq == gone })
	if i < 0 || tr.Delays[i].Kind != analyze.DelayUnclaimed || tr.Delays[i].Waited.MS != b.work(5*hour, 8*hour) || !strings.Contains(tr.Delays[i].Text, "never claimed again") {
		t.Fatalf("b's waits %+v: want 3h unclaimed from its hand-back #%d to the end", tr.Delays, gone)
	}
}

// TestChainSaysWhereItIsCut: a chain longer than MaxChain ends with a note
// naming the event it goes on with and where it ends.
func TestChainSaysWhereItIsCut(t *testing.T) {
	b := newLog(t)
	cause := uint64(1)
	for i := range 2 * analyze.MaxChain {
		cause = b.turn(int64(i)*minute, []string{"bob", "cat"}[i%2], cause)
	}
	chain := b.load().Chain(cause)
	if len(chain) != analyze.MaxChain {
		t.Fatalf("%d links, want %d", len(chain), analyze.MaxChain)
	}
	lastShown := chain[len(chain)-1].Seq
	want := fmt.Sprintf("cut here at %d links: it goes on with #%d, %d events in all back to #1", analyze.MaxChain, lastShown-1, lastShown-1)
	if note := chain[len(chain)-1].Note; !strings.Contains(note, want) {
		t.Fatalf("the last link's note %q, want it to say %q", note, want)
	}
	for _, l := range chain[:len(chain)-1] {
		if strings.Contains(l.Note, "cut here") {
			t.Fatalf("link #%d says the chain is cut", l.Seq)
		}
	}
}

// TestChainCutAtAStintsLink: when the link the chain is cut at is a run of
// stints (seq 0), the note still says where the chain goes on: with the
// run's earliest event.
func TestChainCutAtAStintsLink(t *testing.T) {
	b := newLog(t)
	r := b.stints()
	// Twelve turns after it: done, its turn, the last work.finished and
	// the run's "stints" link are links 13 to 16.
	cause := r.done
	for i := range analyze.MaxChain - 4 {
		cause = b.turn(hour+int64(i)*minute, []string{"cat", "ann"}[i%2], cause)
	}
	chain := b.load().Chain(cause)
	if len(chain) != analyze.MaxChain || chain[len(chain)-1].Type != "stints" {
		t.Fatalf("%d links, the last %+v; want %d, the last a run of stints", len(chain), chain[len(chain)-1], analyze.MaxChain)
	}
	if want := fmt.Sprintf("it goes on with #%d", r.firstWork); !strings.Contains(chain[len(chain)-1].Note, want) {
		t.Fatalf("the stints link's note %q, want it to say %q", chain[len(chain)-1].Note, want)
	}
}
