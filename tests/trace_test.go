package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// leaveWorld: bob's order needs the approval of ann, the only lead, who
// has no manager and no delegate. She is busy on her own task when bob
// asks, and goes on leave for two days before she gets to it: nobody can
// take the step over, so it waits for her return and the order (due the
// first evening) is late.
const leaveWorld = `version: 1
name: leave-trace
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: eng}, {id: lead}]
teams: [{id: t, budget: 100000}]
members:
  - {id: ann, role: lead, team: t}
  - {id: bob, role: eng, team: t, manager: ann}
queues: [{id: q, served_by: [eng, lead]}]
approvals:
  - id: buy
    steps:
      - {role: lead, above: 100}
projects:
  - id: p
    team: t
    queue: q
    deadline: 1d
    tasks:
      - {id: plan, role: lead, effort: 1d}
      - {id: order, role: eng, effort: 1h, purchase: 3000}
      - {id: rollout, role: eng, effort: 2h, deps: [order]}
interruptions:
  - {at: 1h30m, kind: leave, member: ann, for: 2d}
`

// onlyEvent returns the one stored event of type typ.
func onlyEvent(tb testing.TB, evs []events.Event, typ string) events.Event {
	tb.Helper()
	var found []events.Event
	for _, ev := range evs {
		if ev.Type == typ {
			found = append(found, ev)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("want one %s event, got %d", typ, len(found))
	}
	return found[0]
}

// TestTraceLateBecauseApproverOnLeave runs the leave world with greedy
// agents and asks `corpsim trace` why the order was late: it must name the
// approver, her leave (the member.left event) and how long the approval
// sat waiting, as the stored events say.
func TestTraceLateBecauseApproverOnLeave(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	world := filepath.Join(dir, "leave.yaml")
	if err := os.WriteFile(world, []byte(leaveWorld), 0o644); err != nil {
		t.Fatal(err)
	}
	res := cliResult(t, "run", "--world", world, "--seed", "1", "--data", data)
	if res.Score.TasksDone != 3 || res.Score.OnTime != 0 {
		t.Fatalf("the run did %d tasks, %d on time; want 3 done, all late", res.Score.TasksDone, res.Score.OnTime)
	}

	// What the log itself says: the request, the leave, the grant, the completion.
	evs := storedEvents(t, data, res.Session)
	req := onlyEvent(t, evs, payload.EvApprovalRequested)
	left := onlyEvent(t, evs, payload.EvMemberLeft)
	back := onlyEvent(t, evs, payload.EvMemberReturned)
	granted := onlyEvent(t, evs, payload.EvApprovalGranted)
	if left.Actor != "ann" || granted.Actor != "ann" || payloadOf[payload.ApprovalRequested](t, req).Steps[0].Approver != "ann" {
		t.Fatalf("the scenario did not happen: request %s, leave %s, grant %s", req.Payload, left.Actor, granted.Actor)
	}
	if !(req.Seq < left.Seq && left.Seq < back.Seq && back.Seq < granted.Seq) {
		t.Fatalf("want request (#%d) < leave (#%d) < return (#%d) < grant (#%d)", req.Seq, left.Seq, back.Seq, granted.Seq)
	}
	var completed events.Event
	for _, ev := range evs {
		if ev.Type == payload.EvTaskCompleted && payloadOf[payload.TaskCompleted](t, ev).Task == "order" {
			completed = ev
		}
	}
	w, _, err := app.LoadWorld(world)
	if err != nil {
		t.Fatal(err)
	}
	cal := &w.Calendar
	wait := cal.WorkBetween(clock.Time(req.Time), clock.Time(granted.Time))
	deadline := w.Projects[0].Deadline
	if clock.Time(completed.Time) <= deadline {
		t.Fatalf("order was completed at %d, by its deadline %d", completed.Time, deadline)
	}
	waitText := analyze.FormatWork(wait, cal.DayLength())
	lateText := analyze.FormatWork(cal.WorkBetween(deadline, clock.Time(completed.Time)), cal.DayLength())

	// The real binary, human output.
	out, err := exec.Command(corpsimBinary(t), "trace", res.Session, "--task", "order", "--data", data).CombinedOutput()
	if err != nil {
		t.Fatalf("corpsim trace: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"task order (project p, queue q): late",
		lateText + " late",
		fmt.Sprintf("sat with ann for %s", waitText),
		fmt.Sprintf("ann was on leave from %s", cal.Wall(clock.Time(left.Time)).Format(analyze.HumanLayout)),
		fmt.Sprintf("(member.left #%d)", left.Seq),
		fmt.Sprintf("#%d", granted.Seq),
		fmt.Sprintf("← #%d %s member.returned", back.Seq, cal.Wall(clock.Time(back.Time)).Format(analyze.HumanLayout)),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("trace --task order does not say %q:\n%s", want, text)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// --json: the same facts, structured.
	var tr analyze.TaskTrace
	if err := json.Unmarshal([]byte(mustCLI(t, "trace", res.Session, "--task", "order", "--data", data, "--json")), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Outcome != "late" || tr.Done == nil || tr.Done.Seq != completed.Seq || tr.DoneBy != "bob" {
		t.Fatalf("trace --json: outcome %q, done %+v by %q; want late, #%d by bob", tr.Outcome, tr.Done, tr.DoneBy, completed.Seq)
	}
	d := tr.Delays[0]
	if d.Kind != analyze.DelayApproval || d.Who != "ann" || d.Waited.MS != wait || d.Seq != left.Seq {
		t.Fatalf("longest delay %+v; want the approval with ann, %s, explained by member.left #%d", d, wait, left.Seq)
	}
	h := tr.Approvals[0].Steps[0].Holds[0]
	if h.OnLeave == nil || h.OnLeave.From.Seq != left.Seq || h.OnLeave.Returned == nil || h.OnLeave.Returned.Seq != back.Seq ||
		h.LeaveWait.MS != cal.WorkBetween(clock.Time(left.Time), clock.Time(back.Time)) {
		t.Fatalf("approval hold %+v; want ann's leave #%d..#%d", h, left.Seq, back.Seq)
	}
	chained := map[uint64]bool{}
	for _, l := range tr.Chain {
		chained[l.Seq] = true
	}
	for _, ev := range []events.Event{completed, granted, back, left} {
		if !chained[ev.Seq] {
			t.Errorf("the completion's cause chain %+v skips #%d %s", tr.Chain, ev.Seq, ev.Type)
		}
	}

	// --member ann: her leave and the approval others waited on.
	var mt analyze.MemberTrace
	if err := json.Unmarshal([]byte(mustCLI(t, "trace", res.Session, "--member", "ann", "--data", data, "--json")), &mt); err != nil {
		t.Fatal(err)
	}
	if len(mt.Leaves) != 1 || mt.Leaves[0].From.Seq != left.Seq || len(mt.Approving) != 1 || mt.Approving[0].Requester != "bob" || mt.ApprovalWait.MS != wait {
		t.Fatalf("trace --member ann: leaves %+v, approving %+v, approval wait %v", mt.Leaves, mt.Approving, mt.ApprovalWait)
	}
	if out := mustCLI(t, "trace", res.Session, "--member", "bob", "--data", data); !strings.Contains(out, "BLOCKED BY") || !strings.Contains(out, "sat with ann") {
		t.Errorf("trace --member bob does not show the approval that blocked him:\n%s", out)
	}

	// --goal p: rollout waited on order, which waited on ann.
	var g analyze.GoalTrace
	if err := json.Unmarshal([]byte(mustCLI(t, "trace", res.Session, "--goal", "p", "--data", data, "--json")), &g); err != nil {
		t.Fatal(err)
	}
	if g.Done != 3 || g.OnTime != 0 || g.Bonus || len(g.Tasks) != 3 {
		t.Fatalf("trace --goal p: %+v", g)
	}
	for _, r := range g.Tasks {
		if r.Task == "rollout" && r.Gate != "order" {
			t.Errorf("rollout's gate is %q, want order", r.Gate)
		}
	}

	// Usage and unknown names.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trace", res.Session}, cli.ExitUsage, "exactly one of --task, --member, --goal or --case"},
		{[]string{"trace", res.Session, "--task", "order", "--member", "ann"}, cli.ExitUsage, "exactly one of"},
		{[]string{"trace", res.Session, "--task", "nope"}, cli.ExitError, `no such task, member, project or case: task "nope" (the session's: `},
		{[]string{"trace", res.Session, "--member", "anne"}, cli.ExitError, `member "anne" (the session's: ann, bob)`},
		{[]string{"trace", "NOSUCH", "--task", "order"}, cli.ExitError, "no session NOSUCH"},
	} {
		_, errs, code := runCLI(t, append(tc.args, "--data", data)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("corpsim %v: exit %d, %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// firstDivergence is, straight from two stored logs, the first seq at
// which the events differ in anything but their ID (or one log has an
// event the other has not); 0 if none.
func firstDivergence(a, b []events.Event) uint64 {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x.Time != y.Time || x.Type != y.Type || x.Actor != y.Actor || x.Cause != y.Cause || string(x.Payload) != string(y.Payload) {
			return x.Seq
		}
	}
	if len(a) != len(b) {
		return uint64(min(len(a), len(b)) + 1)
	}
	return 0
}

// sameEvent compares an event read back from JSON (its payload maybe
// re-indented) with a stored one.
func sameEvent(tb testing.TB, got, want events.Event) bool {
	tb.Helper()
	var g, w bytes.Buffer
	if err := json.Compact(&g, got.Payload); err != nil {
		tb.Fatal(err)
	}
	if err := json.Compact(&w, want.Payload); err != nil {
		tb.Fatal(err)
	}
	got.Payload, want.Payload = g.Bytes(), w.Bytes()
	return bytes.Equal(events.Encode(&got), events.Encode(&want))
}

func diffJSON(tb testing.TB, data, a, b string) analyze.Difference {
	tb.Helper()
	var d analyze.Difference
	if err := json.Unmarshal([]byte(mustCLI(tb, "diff", a, b, "--data", data, "--json")), &d); err != nil {
		tb.Fatal(err)
	}
	return d
}

// TestDiffForkWithAnotherSeed forks a support-desk session with another
// seed: diff finds the first divergent seq the stored events show, after
// the fork point, with both events; the session against itself and against
// a run with the same seed does not diverge.
func TestDiffForkWithAnotherSeed(t *testing.T) {
	data := t.TempDir()
	parent := cliResult(t, "run", "--world", "support-desk", "--load", "0.5", "--seed", "7", "--data", data)
	at := parent.Events / 3
	fork := cliResult(t, "fork", parent.Session, "--at", seqArg(at), "--seed", "99", "--data", data)
	pe, fe := storedEvents(t, data, parent.Session), storedEvents(t, data, fork.Session)
	want := firstDivergence(pe, fe)
	if want == 0 {
		t.Fatal("the fork with another seed did exactly what its parent did; the test needs a world where the seed matters")
	}
	if want <= at {
		t.Fatalf("the stored logs differ at #%d, inside the shared prefix (1..%d)", want, at)
	}

	d := diffJSON(t, data, parent.Session, fork.Session)
	if !d.Diverged || d.Seq != want {
		t.Fatalf("diff: diverged %v at #%d; the stored events first differ at #%d", d.Diverged, d.Seq, want)
	}
	if d.A == nil || d.B == nil || !sameEvent(t, *d.A, pe[want-1]) || !sameEvent(t, *d.B, fe[want-1]) {
		t.Fatalf("diff shows A %+v and B %+v; want the stored events #%d", d.A, d.B, want)
	}
	if d.IDsFrom != at+1 {
		t.Fatalf("event IDs differ from #%d, want #%d (the first event after the fork, with the other seed)", d.IDsFrom, at+1)
	}
	if d.Sides[0].StateHash != parent.StateHash || d.Sides[1].StateHash != fork.StateHash || d.Sides[1].Seed != 99 {
		t.Fatalf("sides' state hashes %s and %s (seed %d); want the runs' %s and %s (seed 99)", d.Sides[0].StateHash, d.Sides[1].StateHash,
			d.Sides[1].Seed, parent.StateHash, fork.StateHash)
	}
	if d.Sides[0].Session != parent.Session || d.Sides[1].Session != fork.Session || d.Sides[0].TeamScore != parent.Score.TeamScore ||
		d.Sides[1].TeamScore != fork.Score.TeamScore || d.Sides[0].Events != len(pe) || d.Sides[1].Events != len(fe) ||
		d.Sides[0].Resolved != parent.Score.TicketsResolved || d.Sides[1].Resolved != fork.Score.TicketsResolved {
		t.Fatalf("sides %+v; want the runs' scorecards (parent %v, fork %v)", d.Sides, parent.Score.TeamScore, fork.Score.TeamScore)
	}
	out := mustCLI(t, "diff", parent.Session, fork.Session, "--data", data)
	for _, w := range []string{fmt.Sprintf("first divergence at seq %d", want), fmt.Sprintf("A  #%d", want), fmt.Sprintf("B  #%d", want),
		fmt.Sprintf("%.2f", parent.Score.TeamScore), fmt.Sprintf("%.2f", fork.Score.TeamScore)} {
		if !strings.Contains(out, w) {
			t.Errorf("diff does not say %q:\n%s", w, out)
		}
	}

	t.Run("itself", func(t *testing.T) {
		d := diffJSON(t, data, parent.Session, parent.Session)
		if d.Diverged || d.Seq != 0 || d.IDsFrom != 0 || len(d.Outcomes) != 0 {
			t.Fatalf("a session against itself: %+v", d)
		}
		if out := mustCLI(t, "diff", parent.Session, parent.Session, "--data", data); !strings.Contains(out, fmt.Sprintf("no divergence: both logs hold the same %d events", len(pe))) {
			t.Fatalf("diff of a session with itself:\n%s", out)
		}
	})
	t.Run("same seed", func(t *testing.T) {
		again := cliResult(t, "run", "--world", "support-desk", "--load", "0.5", "--seed", "7", "--data", data)
		if w := firstDivergence(pe, storedEvents(t, data, again.Session)); w != 0 {
			t.Fatalf("the stored logs of the same seed differ at #%d", w)
		}
		d := diffJSON(t, data, parent.Session, again.Session)
		if d.Diverged || d.IDsFrom != 0 || d.Sides[0].StateHash != d.Sides[1].StateHash {
			t.Fatalf("two runs of the same seed: %+v", d)
		}
	})
	t.Run("another seed from the start", func(t *testing.T) {
		other := cliResult(t, "run", "--world", "support-desk", "--load", "0.5", "--seed", "8", "--data", data)
		d := diffJSON(t, data, parent.Session, other.Session)
		if !d.Diverged || d.Seq != 1 || d.A.Type != payload.EvSessionStarted || !strings.Contains(strings.Join(d.Fields, ","), "payload") {
			t.Fatalf("runs of seeds 7 and 8: %+v", d)
		}
	})
}
