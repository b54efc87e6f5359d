package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// Causes of lost value, as Diagnose names them.
const (
	// CauseUnclaimed: ready and open, and at least one member who could
	// take it was free (not working, not on leave); Detail says what
	// those members were doing instead.
	CauseUnclaimed = "unclaimed"
	// CauseCapacity: ready and open, and every member who could take it
	// was working on something else (or on leave, not all of them); also
	// held by a member who was working on another task meanwhile.
	CauseCapacity = "capacity"
	// CauseApproval: held while an approval step sat with its approver
	// (Detail: whose desk), the approver not on leave.
	CauseApproval = "approval"
	// CauseInformation: held, not worked, while its holder had not yet
	// learnt the information the task needs (Detail: from whom).
	CauseInformation = "information"
	// CauseDependency: not ready, its dependencies not all done.
	CauseDependency = "dependency"
	// CauseLeave: its holder, or the approver its request sat with, was on
	// leave, or every member who could take it was (Detail: who). Worlds
	// have no delegation limits yet; a leave without a delegate is here.
	CauseLeave = "leave"
	// CauseOutage: its queue was down while it was ready.
	CauseOutage = "outage"
	// CauseRework: work on it, or holding it idle, after one of its actions
	// was refused by a rule (a policy violation) or its approval rejected.
	CauseRework = "rework"
	// CauseHeld: held, with no work under way, nothing to wait on and its
	// holder free: the holder's own pace (turn costs, gaps between stints).
	CauseHeld = "held"
	// CauseWork: its own effort being worked on. Lost points go here only
	// when a failed item waited on nothing else (it was under way when the
	// session ended, or its effort alone outran its deadline).
	CauseWork = "work"
	// CauseNotStarted: its project never started within the session.
	CauseNotStarted = "not_started"
	// CauseUnverified: completed, but the rubric does not count it (no
	// hours: the points only).
	CauseUnverified = "unverified"
	// CauseViolations: the rubric's penalty for attempted policy
	// violations (points only).
	CauseViolations = "violations"
	// CauseNotAsked: a step an NPC performs when asked (format 2), ready,
	// and nobody had asked the NPC (Detail: the NPC).
	CauseNotAsked = "npc_not_asked"
	// CauseNPC: a step an NPC performs, asked for, waiting for the NPC's
	// answer (its reply latency; Detail: the NPC).
	CauseNPC = "npc"
	// CauseSeparation: ready and unclaimed, and every member whose role
	// may take it is barred from it by a separation-of-duties rule
	// (format 2; Detail: the rule).
	CauseSeparation = "separation"
	// CauseBudget: held with its work done, or ready and open, while its
	// purchase was more than its team's budget had left (Detail: the
	// team); and the rubric's penalty for spending beyond a budget
	// (points only).
	CauseBudget = "budget"
	// CauseWrongOutcome: a case step completed with its outcome unmet
	// (format 2 systems): the case's lost value (points; Detail: who
	// completed how many).
	CauseWrongOutcome = "wrong_outcome"
	// CauseCollateral: the rubric's penalty for writes no case asked for
	// (format 2 systems; points only; Detail: the writers).
	CauseCollateral = "collateral"
)

// Diagnosis is where a session's lost value went: Lost is what the world's
// work could have given (every task's and arrived ticket's value and every
// project's bonus) minus the team score, and Causes split it, in points and
// in working hours of the items that lost value. Its JSON is exactly
// {"lost": …, "causes": [{"cause", "hours", "points"}, …]}; the other
// fields are for people (WriteText).
type Diagnosis struct {
	Lost   float64 `json:"lost"`
	Causes []Cause `json:"causes"`

	Session  string  `json:"-"`
	World    string  `json:"-"`
	Possible float64 `json:"-"` // value the world's work could have given
	Score    float64 `json:"-"` // the team score
	Failed   int     `json:"-"` // tasks and tickets (and cases, whose steps are diagnosed with them) that lost value
	Items    int     `json:"-"` // tasks and tickets outside cases, and cases, in all (as Failed counts them)
	Sessions int     `json:"-"` // for an aggregate: how many sessions it averages
}

// Cause is one cause's part of the lost value.
type Cause struct {
	Cause  string  `json:"cause"`
	Hours  float64 `json:"hours"`  // working hours of the failed items spent this way
	Points float64 `json:"points"` // lost points put down to it
	// Detail splits Hours by whom or what (the approver whose desk, the
	// member on leave, the queue down, what free members were doing while
	// work sat unclaimed), largest first.
	Detail []Part `json:"-"`
}

// Part is one line of a cause's detail.
type Part struct {
	What  string  `json:"what"`
	Hours float64 `json:"hours"`
}

// forever ends the spans still open at the end of the log, so that the
// state at the last instant is read as it stood.
const forever = clock.Time(math.MaxInt64)

// span is a half-open interval of simulated time.
type span struct{ from, to clock.Time }

func (sp span) has(x clock.Time) bool { return sp.from <= x && x < sp.to }

type spans []span

func (ss spans) at(x clock.Time) bool {
	for _, sp := range ss {
		if sp.has(x) {
			return true
		}
	}
	return false
}

// diagIndex is what Diagnose needs beyond the loaded indexes.
type diagIndex struct {
	busy    map[string][]busySpan // member -> work stints, by start
	holds   map[string][]busySpan // member -> the spans it held each task
	leave   map[string]spans      // member -> leaves
	learnt  map[string]clock.Time // member+"\x00"+topic -> first delivery of it
	refused map[string]clock.Time // task -> first refusal of a rule, or rejected approval
	// asked are the refused request_approval actions of each task: its
	// holder could not even ask (nobody else to approve, say).
	asked map[string][]clock.Time
	// budget is each team's money left after each change, in time order;
	// replayed once, when first asked (budgetLeft).
	budget map[string][]left
}

type left struct {
	at     clock.Time
	amount int64
}

// budgetLeft is what team had left at instant at.
func (s *Session) budgetLeft(x *diagIndex, team string, at clock.Time) (int64, bool) {
	if x.budget == nil {
		x.budget = map[string][]left{}
		st := org.New(s.World)
		st.SetJudge(policies.Judge)
		last := map[string]int64{}
		for _, b := range st.Budgets {
			last[b.Team] = b.Remaining()
			x.budget[b.Team] = []left{{0, b.Remaining()}}
		}
		for i, ev := range s.Events {
			if err := st.ApplyWith(ev, s.payloads[i]); err != nil { // decoded by Load (nil for a type decodedAgain: ApplyWith decodes it)
				break // Load applied them all once: it cannot fail now
			}
			for _, b := range st.Budgets {
				if r := b.Remaining(); r != last[b.Team] {
					last[b.Team] = r
					x.budget[b.Team] = append(x.budget[b.Team], left{clock.Time(ev.Time), r})
				}
			}
		}
	}
	ls := x.budget[team]
	i := sort.Search(len(ls), func(i int) bool { return ls[i].at > at })
	if i == 0 {
		return 0, false
	}
	return ls[i-1].amount, true
}

type busySpan struct {
	span
	task string
}

// candidate is a member who may take the task being diagnosed, with its
// stints, holds and leaves looked up once: a long wait asks about each
// of them at every instant where a cause may change.
type candidate struct {
	id          string
	busy, holds []busySpan
	leave       spans
	sched       clock.Schedule // its shift or team calendar; nil: the company's
}

// candidates returns the members ids with their indexes.
func (s *Session) candidates(x *diagIndex, ids []string) []candidate {
	out := make([]candidate, len(ids))
	for i, id := range ids {
		out[i] = candidate{id: id, busy: x.busy[id], holds: x.holds[id], leave: x.leave[id]}
		if m, ok := s.World.Member(id); ok {
			out[i].sched = m.Schedule
		}
	}
	return out
}

// offDuty reports whether m is outside its own working hours at at (a
// member without hours of its own works the company's, which the spans
// of a diagnosis count in).
func (m *candidate) offDuty(at clock.Time) bool {
	return m.sched != nil && !m.sched.IsWorking(at)
}

// maxShiftCuts bounds the instants one member's working hours add to a
// task's diagnosis (a year of two shifts a day is 730).
const maxShiftCuts = 4096

// shiftCuts calls cut at each start and end of m's working periods from
// from to to, at most maxShiftCuts of them.
func shiftCuts(m *candidate, from, to clock.Time, cut func(...clock.Time)) {
	if m.sched == nil {
		return
	}
	for n, t := 0, from; t < to && n < maxShiftCuts; n++ {
		var next clock.Time
		if m.sched.IsWorking(t) {
			next = m.sched.PeriodEnd(t)
		} else {
			next = m.sched.NextWorking(t)
		}
		if next <= t {
			return
		}
		cut(next)
		t = next
	}
}

func (s *Session) diagIndex() *diagIndex {
	x := &diagIndex{busy: map[string][]busySpan{}, holds: map[string][]busySpan{}, leave: map[string]spans{}, learnt: map[string]clock.Time{}, refused: map[string]clock.Time{},
		asked: map[string][]clock.Time{}}
	ids := slices.Sorted(maps.Keys(s.tasks)) // a task without stints or holds adds nothing below
	for _, task := range ids {
		for _, st := range s.stintsOf(task) {
			ev, _ := s.Event(st.start)
			to := forever
			if st.finish != 0 {
				f, _ := s.Event(st.finish)
				to = clock.Time(f.Time)
			}
			x.busy[st.member] = append(x.busy[st.member], busySpan{span{clock.Time(ev.Time), to}, task})
		}
	}
	for m, bs := range x.busy { // order: each member's list is sorted on its own
		slices.SortStableFunc(bs, func(a, b busySpan) int { return cmp.Compare(a.from, b.from) })
		x.busy[m] = bs
	}
	for _, task := range ids {
		for _, h := range s.spans(task) {
			to := forever
			if h.to != 0 {
				to = h.toT
			}
			x.holds[h.member] = append(x.holds[h.member], busySpan{span{h.fromT, to}, task})
		}
	}
	for m, ls := range s.leaves { // order: each member's spans are its own
		for _, l := range ls {
			back := forever
			if l.Returned != nil {
				back = l.Returned.Time
			}
			x.leave[m] = append(x.leave[m], span{l.From.Time, back})
		}
	}
	sent := map[string]*payload.MessageSent{}
	for i, ev := range s.Events {
		switch p := s.payloads[i].(type) {
		case *payload.MessageSent:
			if p.Topic != "" {
				sent[p.Message] = p
			}
		case *payload.MessageDelivered:
			if m := sent[p.Message]; m != nil {
				k := m.To + "\x00" + m.Topic
				if _, ok := x.learnt[k]; !ok {
					x.learnt[k] = clock.Time(ev.Time)
				}
			}
		case *payload.ActionRejected:
			if p.Action.Type == org.ActRequestApproval && p.Kind != org.KindPolicy && p.Action.Task != "" {
				x.asked[p.Action.Task] = append(x.asked[p.Action.Task], clock.Time(ev.Time))
			}
			if p.Kind == org.KindPolicy && p.Action.Task != "" {
				if _, ok := x.refused[p.Action.Task]; !ok {
					x.refused[p.Action.Task] = clock.Time(ev.Time)
				}
			}
		case *payload.ApprovalDecided:
			if ev.Type == payload.EvApprovalRejected {
				if a := s.requests[p.Request]; a != nil {
					if _, ok := x.refused[a.Task]; !ok {
						x.refused[a.Task] = clock.Time(ev.Time)
					}
				}
			}
		}
	}
	return x
}

// working reports whether member works at instant t, and on which task.
func (x *diagIndex) working(member string, t clock.Time) (string, bool) {
	return workingIn(x.busy[member], t)
}

// workingIn is working over a member's stints bs.
func workingIn(bs []busySpan, t clock.Time) (string, bool) {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].from > t })
	for j := i - 1; j >= 0 && j >= i-4; j-- { // stints of one member do not overlap
		if bs[j].has(t) {
			return bs[j].task, true
		}
	}
	return "", false
}

// tally accumulates working time by cause and detail for one item.
type tally struct {
	ms     map[string]clock.Duration
	detail map[string]map[string]clock.Duration
}

func newTally() *tally {
	return &tally{ms: map[string]clock.Duration{}, detail: map[string]map[string]clock.Duration{}}
}

// add counts d for cause, split evenly among what (the detail: who or
// what it was).
func (t *tally) add(cause string, what []string, d clock.Duration) {
	if d <= 0 {
		return
	}
	t.ms[cause] += d
	if len(what) > 0 && t.detail[cause] == nil {
		t.detail[cause] = map[string]clock.Duration{}
	}
	for i, w := range what {
		share := d / clock.Duration(len(what))
		if i == 0 {
			share += d % clock.Duration(len(what))
		}
		t.detail[cause][w] += share
	}
}

func one(s string) []string { return []string{s} }

// Diagnose explains where the session's lost value went. It reads the
// same holds, stints, approvals, leaves and outages as Task (trace) and
// splits the life of every item that lost value — from when it appeared to
// when it was done, or the end of the log — into spans of one cause each
// (the first that applies: its dependencies not done; its queue down; held:
// the holder on leave, working on it, its approval on an approver's desk
// (on leave or not), its information not yet learnt, its request refused
// while the only other approvers were away, its purchase beyond its team's
// budget, the holder working on another task, else idle; open: every
// member who could take it on leave,
// all of them working or away, else some were free). Work and idle holding
// after a refused action count as rework.
//
// The item's lost points — its value minus what it earned, its SLA
// penalty, and for a project task an equal share of a lost project bonus
// among the project's failed tasks — are split over its causes in
// proportion to their hours, its own work left out unless it waited on
// nothing else; an unverified completion's points go to unverified. The
// penalties for violations and overruns are causes of their own. So the
// causes' points add up to Lost, which is the possible value minus
// policies.Score's team score.
func (s *Session) Diagnose() *Diagnosis {
	st := s.State
	w := s.World
	card := policies.Score(st)
	x := s.diagIndex()
	d := &Diagnosis{Session: s.ID, World: w.Name, Score: card.TeamScore, Sessions: 1, Causes: []Cause{}}

	type failed struct {
		t      *org.Task
		points float64
		why    string // unverified reason
	}
	var items []*failed
	byID := map[string]*failed{}
	caseLost := map[string]float64{} // case -> points its steps lost
	caseWhy := map[string]string{}   // case -> why a step of it does not verify
	for _, t := range st.AllTasks() {
		d.Possible += t.Value
		if t.Case == "" { // a case's steps are one item, its case (diagnoseCases)
			d.Items++
		}
		f := &failed{t: t}
		if t.Status == org.StatusDone {
			if f.why = policies.Verify(st, t); f.why == "" {
				earned, _ := policies.Earned(st, t)
				f.points = t.Value - earned
			} else {
				f.points = t.Value
			}
		} else {
			f.points = t.Value
		}
		if t.Breached {
			f.points += w.Scoring.SLAPenalty
		}
		if t.Case != "" { // diagnosed with its case
			caseLost[t.Case] += f.points
			if f.why != "" && caseWhy[t.Case] == "" {
				caseWhy[t.Case] = f.why
			}
			continue
		}
		if f.points > 0 || !onTime(st, t, f.why) {
			items = append(items, f)
			byID[t.ID] = f
		}
	}
	for _, p := range w.Projects {
		d.Possible += p.Value
		if p.Value == 0 || policies.ProjectBonus(st, &p) > 0 {
			continue
		}
		var fs []*failed
		for _, spec := range p.Tasks {
			if f := byID[spec.ID]; f != nil {
				fs = append(fs, f)
			}
		}
		for _, f := range fs {
			f.points += p.Value / float64(len(fs))
		}
	}

	hours := map[string]clock.Duration{}
	points := map[string]float64{}
	detail := map[string]map[string]clock.Duration{}
	for _, f := range items {
		if f.points <= 0 && f.t.Status == org.StatusDone {
			continue // done on time after all (a zero-value task): nothing lost
		}
		d.Failed++
		tl := s.diagnoseItem(f.t, x)
		for _, c := range slices.Sorted(maps.Keys(tl.ms)) {
			hours[c] += tl.ms[c]
		}
		for _, c := range slices.Sorted(maps.Keys(tl.detail)) {
			if detail[c] == nil {
				detail[c] = map[string]clock.Duration{}
			}
			for _, k := range slices.Sorted(maps.Keys(tl.detail[c])) {
				detail[c][k] += tl.detail[c][k]
			}
		}
		if f.why != "" {
			points[CauseUnverified] += f.points
			continue
		}
		var waits clock.Duration
		for _, c := range slices.Sorted(maps.Keys(tl.ms)) {
			if c != CauseWork {
				waits += tl.ms[c]
			}
		}
		switch {
		case waits > 0:
			for _, c := range slices.Sorted(maps.Keys(tl.ms)) {
				if c != CauseWork {
					points[c] += f.points * float64(tl.ms[c]) / float64(waits)
				}
			}
		case f.t.Status != org.StatusDone:
			// Open at the end and waiting on nothing before: what it
			// waited on when the session ended (a request put to an
			// approver as the session went quiet, say), or its work.
			c, what := s.causeAt(f.t, st.Now, x)
			points[c] += f.points
			if len(what) > 0 && detail[c] == nil {
				detail[c] = map[string]clock.Duration{}
			}
			for _, k := range what {
				detail[c][k] += 0 // named, with no hours
			}
		default:
			points[CauseWork] += f.points
		}
	}
	s.diagnoseCases(d, x, caseLost, caseWhy, hours, points, detail)
	points[CauseViolations] += float64(st.Violations) * w.Scoring.ViolationPenalty
	outcomeCauses(st, points, detail)
	points[CauseBudget] += float64(card.BudgetOverrun) * w.Scoring.BudgetPenalty

	d.Lost = round6(d.Possible - card.TeamScore)
	for _, c := range slices.Sorted(maps.Keys(points)) {
		if points[c] == 0 && hours[c] == 0 {
			continue
		}
		row := Cause{Cause: c, Hours: round6(float64(hours[c]) / float64(clock.Hour)), Points: round6(points[c])}
		row.Detail = parts(detail[c])
		d.Causes = append(d.Causes, row)
	}
	for _, c := range slices.Sorted(maps.Keys(hours)) {
		if _, ok := points[c]; !ok && hours[c] > 0 {
			d.Causes = append(d.Causes, Cause{Cause: c, Hours: round6(float64(hours[c]) / float64(clock.Hour)), Detail: parts(detail[c])})
		}
	}
	sortCauses(d.Causes)
	d.Possible = round6(d.Possible)
	return d
}

// onTime reports whether t earned its whole value on time (so only a lost
// bonus could make it a failed item).
func onTime(st *org.State, t *org.Task, why string) bool {
	if t.Status != org.StatusDone || why != "" {
		return false
	}
	_, ok := policies.Earned(st, t)
	return ok
}

func parts(m map[string]clock.Duration) []Part {
	var out []Part
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Part{What: k, Hours: round6(float64(m[k]) / float64(clock.Hour))})
	}
	slices.SortStableFunc(out, func(a, b Part) int { return cmp.Compare(b.Hours, a.Hours) })
	if len(out) > MaxParts {
		rest := Part{What: fmt.Sprintf("%d others", len(out)-MaxParts+1)}
		for _, p := range out[MaxParts-1:] {
			rest.Hours += p.Hours
		}
		rest.Hours = round6(rest.Hours)
		out = append(out[:MaxParts-1], rest)
	}
	return out
}

// MaxParts is the most detail parts a cause keeps (the last one sums the
// rest).
const MaxParts = 20

// waitingOn names the dependency t waited on at instant at (the first of
// its dependencies in the world file not done by then) and who held it.
func (s *Session) waitingOn(t *org.Task, at clock.Time, x *diagIndex) []string {
	for _, d := range t.Spec.Deps {
		dt := s.State.Task(d)
		if dt.Status == org.StatusDone && dt.DoneAt <= at {
			continue
		}
		for _, h := range s.spans(d) {
			to := forever
			if h.to != 0 {
				to = h.toT
			}
			if h.fromT <= at && at < to {
				return one(d + " (held by " + h.member + ")")
			}
		}
		return one(d + " (not held)")
	}
	return nil
}

// sortCauses orders causes by points, then hours, then name.
func sortCauses(cs []Cause) {
	slices.SortStableFunc(cs, func(a, b Cause) int {
		if c := cmp.Compare(b.Points, a.Points); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Hours, a.Hours); c != 0 {
			return c
		}
		return cmp.Compare(a.Cause, b.Cause)
	})
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// diagnoseItem splits t's life into spans of one cause each.
func (s *Session) diagnoseItem(t *org.Task, x *diagIndex) *tally {
	tl := newTally()
	if t.Hidden {
		return tl // never appeared: its points go to causeAt (not_started)
	}
	end := s.State.Now
	life := span{t.Created, end}
	if t.Status == org.StatusDone {
		life.to = t.DoneAt
	}
	if t.Case != "" {
		// A step's wait for its case's earlier steps is their time, not its.
		r, ok := s.readyAt(t)
		if !ok {
			return tl
		}
		life.from = max(life.from, r)
	}
	if life.to <= life.from {
		return tl
	}
	// Every instant where a cause may change (sorted and made unique
	// below: a list, not a set, since a task waiting long in a busy queue
	// collects thousands).
	cuts := []clock.Time{life.from, life.to}
	cut := func(ts ...clock.Time) {
		for _, c := range ts {
			if c > life.from && c < life.to {
				cuts = append(cuts, c)
			}
		}
	}
	if r, ok := s.readyAt(t); ok {
		cut(r)
	}
	for _, h := range s.spans(t.ID) {
		cut(h.fromT)
		if h.to != 0 {
			cut(h.toT)
		}
	}
	for _, a := range s.approvals[t.ID] {
		for _, step := range a.Steps {
			for _, h := range step.Holds {
				cut(h.From.Time)
				if h.To != nil {
					cut(h.To.Time)
				}
			}
		}
	}
	for _, o := range s.outages[t.Queue] {
		cut(o.From.Time)
		if o.Up != nil {
			cut(o.Up.Time)
		}
	}
	if r, ok := x.refused[t.ID]; ok {
		cut(r)
	}
	cut(x.asked[t.ID]...)
	for _, seq := range s.asks[t.ID] {
		ev, _ := s.Event(seq)
		cut(clock.Time(ev.Time))
	}
	if in := t.Spec.Info; in != nil {
		for _, h := range s.spans(t.ID) {
			if at, ok := x.learnt[h.member+"\x00"+in.Topic]; ok {
				cut(at)
			}
		}
	}
	var eligible []string
	for _, m := range s.State.Members {
		if !m.NPC && s.State.CanTake(m.ID, t) {
			eligible = append(eligible, m.ID)
		}
	}
	members := eligible
	for _, h := range s.spans(t.ID) {
		members = append(members, h.member)
	}
	for _, a := range s.approvals[t.ID] {
		for _, step := range a.Steps {
			for _, h := range step.Holds {
				members = append(members, h.Approver)
			}
		}
	}
	for _, m := range members {
		for _, l := range x.leave[m] {
			cut(l.from, l.to)
		}
	}
	for _, m := range eligible {
		bs := x.busy[m]
		i := sort.Search(len(bs), func(i int) bool { return bs[i].to > life.from })
		for ; i < len(bs) && bs[i].from < life.to; i++ {
			cut(bs[i].from, bs[i].to)
		}
	}
	cands := s.candidates(x, eligible)
	for i := range cands {
		shiftCuts(&cands[i], life.from, life.to, cut)
	}
	slices.Sort(cuts)
	ts := slices.Compact(cuts)
	cal := &s.World.Calendar
	for i := 0; i+1 < len(ts); i++ {
		dur := cal.WorkBetween(ts[i], ts[i+1])
		if dur <= 0 {
			continue
		}
		c, what := s.causeAtWith(t, ts[i], x, cands)
		tl.add(c, what, dur)
	}
	return tl
}

// cannotAsk reports why t, held by holder, could not even be put to its
// approvers at instant at: its holder's request was refused since it took
// it (nobody but the requester could approve, say) and it has no approval
// yet. An approver of a step's role away on leave is the cause (leave),
// else the approval chain (approval: no approver).
func (s *Session) cannotAsk(t *org.Task, at clock.Time, x *diagIndex, holder string) (string, []string, bool) {
	steps := s.State.StepsFor(t)
	if len(steps) == 0 {
		return "", nil, false
	}
	var since clock.Time
	for _, h := range s.spans(t.ID) {
		if h.member == holder && h.fromT <= at {
			since = h.fromT
		}
	}
	refused := false
	for _, r := range x.asked[t.ID] {
		if since <= r && r <= at {
			refused = true
		}
	}
	if !refused {
		return "", nil, false
	}
	for _, a := range s.approvals[t.ID] {
		if a.Status == org.RequestApproved && a.Requested.Time <= at {
			return "", nil, false
		}
	}
	var away []string
	others := false
	for _, st := range steps {
		for _, m := range s.State.Members {
			if m.Role != st.Role || m.ID == holder {
				continue
			}
			others = true
			if x.leave[m.ID].at(at) {
				away = append(away, m.ID+" (approver away; nobody else may approve)")
			}
		}
	}
	switch {
	case len(away) > 0:
		return CauseLeave, away, true
	case !others:
		return CauseApproval, one("no eligible approver"), true
	}
	return "", nil, false // the approvers are back: the holder did not ask again
}

// readyAt is when t's dependencies were all done (its creation if it has
// none), or false if they never were.
func (s *Session) readyAt(t *org.Task) (clock.Time, bool) {
	at := t.Created
	for _, d := range t.Spec.Deps {
		dt := s.State.Task(d)
		if dt.Status != org.StatusDone {
			return 0, false
		}
		at = max(at, dt.DoneAt)
	}
	return at, true
}

func (s *Session) causeAt(t *org.Task, at clock.Time, x *diagIndex) (string, []string) {
	var eligible []string
	for _, m := range s.State.Members {
		if !m.NPC && s.State.CanTake(m.ID, t) {
			eligible = append(eligible, m.ID)
		}
	}
	return s.causeAtWith(t, at, x, s.candidates(x, eligible))
}

// causeAtWith is the cause of t's state at instant at, and its detail.
func (s *Session) causeAtWith(t *org.Task, at clock.Time, x *diagIndex, eligible []candidate) (cause string, what []string) {
	if t.Hidden {
		return CauseNotStarted, one(t.Project)
	}
	if r, ok := s.readyAt(t); !ok || at < r {
		return CauseDependency, s.waitingOn(t, at, x)
	}
	for _, o := range s.outages[t.Queue] {
		up := forever
		if o.Up != nil {
			up = o.Up.Time
		}
		if o.From.Time <= at && at < up {
			return CauseOutage, one(fmt.Sprintf("queue %s (queue.down #%d)", t.Queue, o.From.Seq))
		}
	}
	refused := false
	if r, ok := x.refused[t.ID]; ok && r <= at {
		refused = true
	}
	holder := ""
	for _, h := range s.spans(t.ID) {
		to := forever
		if h.to != 0 {
			to = h.toT
		}
		if h.fromT <= at && at < to {
			holder = h.member
		}
	}
	if holder == "" && t.Spec.NPC != "" {
		for _, seq := range s.asks[t.ID] {
			if ev, _ := s.Event(seq); clock.Time(ev.Time) <= at {
				return CauseNPC, one(t.Spec.NPC)
			}
		}
		return CauseNotAsked, one(t.Spec.NPC)
	}
	if holder != "" {
		if x.leave[holder].at(at) {
			return CauseLeave, one(holder + " (holding it)")
		}
		task, working := x.working(holder, at)
		if working && task == t.ID {
			if refused {
				return CauseRework, one(holder)
			}
			return CauseWork, nil
		}
		for _, a := range s.approvals[t.ID] {
			for _, step := range a.Steps {
				for _, h := range step.Holds {
					to := forever
					if h.To != nil {
						to = h.To.Time
					}
					if h.From.Time <= at && at < to {
						if x.leave[h.Approver].at(at) {
							return CauseLeave, one(h.Approver + " (approver)")
						}
						return CauseApproval, one(h.Approver)
					}
				}
			}
		}
		if in := t.Spec.Info; in != nil {
			if learnt, ok := x.learnt[holder+"\x00"+in.Topic]; !ok || at < learnt {
				return CauseInformation, one(in.From)
			}
		}
		if c, who, ok := s.cannotAsk(t, at, x, holder); ok {
			return c, who
		}
		if p := t.Spec.Purchase; p > 0 && t.Spent >= t.Effort {
			if r, ok := s.budgetLeft(x, t.Team, at); ok && r < p {
				return CauseBudget, one("team " + t.Team + " short of its purchase")
			}
		}
		if working {
			return CauseCapacity, one(holder + " working on other work")
		}
		if refused {
			return CauseRework, one(holder)
		}
		return CauseHeld, one(holder + " (holding it)")
	}
	if p := t.Spec.Purchase; p > 0 {
		// Nobody could have completed it: whoever took it would have
		// held it done and unpaid.
		if r, ok := s.budgetLeft(x, t.Team, at); ok && r < p {
			return CauseBudget, one("team " + t.Team + " short of its purchase")
		}
	}
	if len(eligible) == 0 {
		return CauseCapacity, one("nobody may take it")
	}
	if t.Case != "" {
		// Separation rules read who did the case's other steps: barred
		// for every member who may take it, it waits for no one.
		var rule string
		open := 0
		for _, m := range eligible {
			if r, _ := s.State.Separated(t, m.id, false); r != nil {
				rule = r.ID
			} else {
				open++
			}
		}
		if open == 0 {
			return CauseSeparation, one("rule " + rule + " bars everyone who may take it")
		}
	}
	away, busy := 0, 0
	var free []candidate
	var off []string
	for _, m := range eligible {
		switch _, working := workingIn(m.busy, at); {
		case m.leave.at(at):
			away++
		case working:
			busy++
		case m.offDuty(at):
			off = append(off, m.id)
		default:
			free = append(free, m)
		}
	}
	switch {
	case away == len(eligible):
		return CauseLeave, one("everyone who may take it")
	case len(free) == 0 && len(off) > 0:
		// Nobody who may take it on duty: too few hands at that hour.
		return CauseCapacity, one(strings.Join(off, ", ") + " off shift")
	case len(free) == 0:
		return CauseCapacity, nil
	}
	// Free members: what were they doing instead? Holding other work
	// without working on it (waiting on it), or nothing at all.
	var doing []string
	for _, m := range free {
		var held []string
		for _, h := range m.holds {
			if h.has(at) {
				held = append(held, h.task)
			}
		}
		slices.Sort(held)
		switch len(held) {
		case 0:
			doing = append(doing, m.id+" idle")
		case 1, 2:
			doing = append(doing, fmt.Sprintf("%s holding %s, not working on it", m.id, strings.Join(held, ", ")))
		default:
			doing = append(doing, fmt.Sprintf("%s holding %d tasks, not working on them", m.id, len(held)))
		}
	}
	return CauseUnclaimed, doing
}

// diagnoseCases adds the cases (format 2) to a diagnosis: a case that lost
// value (its own, decayed or not earned, its steps' values and its SLA
// penalty) is one failed item, whose life is its steps' lives after each
// became ready, so its points split over what its steps waited on.
func (s *Session) diagnoseCases(d *Diagnosis, x *diagIndex, caseLost map[string]float64, caseWhy map[string]string,
	hours map[string]clock.Duration, points map[string]float64, detail map[string]map[string]clock.Duration) {
	st, w := s.State, s.World
	for _, c := range st.Cases {
		d.Possible += c.Value
		d.Items++
		lost := caseLost[c.ID] + c.Value - policies.CaseValue(st, c)
		if c.Breached {
			lost += w.Scoring.SLAPenalty
		}
		if lost <= 0 {
			continue
		}
		d.Failed++
		tl := newTally()
		var open *org.Task
		for _, id := range c.Steps {
			t := st.Task(id)
			if open == nil && t.Status != org.StatusDone {
				if _, ok := s.readyAt(t); ok {
					open = t
				}
			}
			item := s.diagnoseItem(t, x)
			for _, k := range slices.Sorted(maps.Keys(item.ms)) {
				tl.ms[k] += item.ms[k]
			}
			for _, k := range slices.Sorted(maps.Keys(item.detail)) {
				if tl.detail[k] == nil {
					tl.detail[k] = map[string]clock.Duration{}
				}
				for _, what := range slices.Sorted(maps.Keys(item.detail[k])) {
					tl.detail[k][what] += item.detail[k][what]
				}
			}
		}
		var waits clock.Duration
		for _, k := range slices.Sorted(maps.Keys(tl.ms)) {
			hours[k] += tl.ms[k]
			if k != CauseWork {
				waits += tl.ms[k]
			}
		}
		for _, k := range slices.Sorted(maps.Keys(tl.detail)) {
			if detail[k] == nil {
				detail[k] = map[string]clock.Duration{}
			}
			for _, what := range slices.Sorted(maps.Keys(tl.detail[k])) {
				detail[k][what] += tl.detail[k][what]
			}
		}
		switch {
		case strings.HasPrefix(caseWhy[c.ID], wrongOutcome):
			points[CauseWrongOutcome] += lost
		case caseWhy[c.ID] != "":
			points[CauseUnverified] += lost
		case waits > 0:
			for _, k := range slices.Sorted(maps.Keys(tl.ms)) {
				if k != CauseWork {
					points[k] += lost * float64(tl.ms[k]) / float64(waits)
				}
			}
		case open != nil:
			k, what := s.causeAt(open, st.Now, x)
			points[k] += lost
			if len(what) > 0 && detail[k] == nil {
				detail[k] = map[string]clock.Duration{}
			}
			for _, v := range what {
				detail[k][v] += 0 // named, with no hours
			}
		default:
			points[CauseWork] += lost
		}
	}
}
