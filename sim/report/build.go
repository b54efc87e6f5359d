package report

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/worlds"
)

// Options say what a report is about and how much of it to show. The zero
// value means the defaults.
type Options struct {
	Session string
	Agents  map[string]string // member -> agent kind, from the session's metadata
	// Buckets bounds every time series: at most 2*Buckets+2 points (0: 300).
	Buckets int
	// MaxGanttRows, MaxDAGNodes and MaxViolationRows cap the Gantt chart
	// (and the members table), the task DAG and the violations table (0: 30,
	// 60 and 40).
	MaxGanttRows     int
	MaxDAGNodes      int
	MaxViolationRows int
	// MaxGanttBars bounds the bars of the Gantt chart in all (0: 8000):
	// beyond it, bars a few pixels apart merge too.
	MaxGanttBars int
	// Width is the width of the timelines in pixels (0: 1100).
	Width int
	// Explain answers the "why" section: the session's analysis, as
	// corpsim trace loads it (*analyze.Session). nil: the section says
	// that it has none.
	Explain Explainer
	// MaxWhyGoals and MaxWhyTasks cap the projects and the late tasks the
	// "why" section explains (0: 20 and 30).
	MaxWhyGoals, MaxWhyTasks int
	// MaxLateCases caps the late or breached cases the cases section
	// explains (0: 20).
	MaxLateCases int
	// Parent, ForkSeq and Seed come from the session's metadata: the
	// session a fork was made from, the last of the parent's events it
	// shares, and the fork's own seed, which session.started (written by
	// the root session) does not know. Seed is used only when Parent is set.
	Parent  string
	ForkSeq uint64
	Seed    uint64
}

func (o Options) withDefaults() Options {
	if o.Buckets <= 0 {
		o.Buckets = 300
	}
	if o.MaxGanttRows <= 0 {
		o.MaxGanttRows = 30
	}
	if o.MaxDAGNodes <= 0 {
		o.MaxDAGNodes = 60
	}
	if o.MaxViolationRows <= 0 {
		o.MaxViolationRows = 40
	}
	if o.MaxGanttBars <= 0 {
		o.MaxGanttBars = 8000
	}
	if o.Width <= 0 {
		o.Width = 1100
	}
	if o.MaxWhyGoals <= 0 {
		o.MaxWhyGoals = 20
	}
	if o.MaxWhyTasks <= 0 {
		o.MaxWhyTasks = 30
	}
	if o.MaxLateCases <= 0 {
		o.MaxLateCases = 20
	}
	return o
}

// Lanes of a Gantt row.
const (
	LaneClaim = iota // the member held the task
	LaneWork         // the member was working on it
	LaneLeave        // the member was on leave
	lanes
)

// Interval is a span of simulated time [From, To) spent on Label.
type Interval struct {
	From, To int64
	Label    string
	Work     int64 // the working time within it, by the member's hours (its shift, team or the company's calendar)
}

type opened struct {
	member string
	since  int64
	until  int64 // planned end, for spans still open at the end
}

// Builder collects what a report needs from a session's events, one at a
// time and in order. It replays them onto its own org.State, so it needs
// nothing but the log. A Builder is not safe for concurrent use.
type Builder struct {
	o       Options
	w       *worlds.World
	st      *org.State
	started payload.SessionStarted
	typed   any // the payload of the event being added, decoded once (payload.Decode)

	queueOpen map[string]int
	queues    map[string]*step
	reward    step
	rewardSum float64
	approvals step
	pending   int
	desks     map[string]*desk  // approver -> their desk
	deskOf    map[string]string // pending request -> the approver it waits for
	since     map[string]int64  // pending request -> since when it waits there
	decided   map[string]int    // member -> approval steps decided
	answers   map[string]int    // member -> replies and information given

	claims map[string]opened // task -> who holds it since when
	work   map[string]opened // task -> the stint under way
	leave  map[string]opened // member -> leave under way
	spans  map[string]*[lanes][]Interval

	rejections map[rejectionKey]*rejectionAcc
	breaches   []string // tasks, in order of breach
	verified   string

	interruptions []Interruption
	downSince     map[string]int // queue -> index in interruptions of its outage under way
	awaySince     map[string]int // member -> index in interruptions of their leave under way

	collateral []CollateralWrite // record writes no case asked for (outcomes.go)
}

// NewBuilder starts a report of a session of world w, whose events Add
// takes and applies to a state of the builder's own.
func NewBuilder(w *worlds.World, o Options) *Builder {
	st := org.New(w)
	st.SetJudge(policies.Judge)
	st.KeepRetired() // the report reads every ticket
	return newBuilder(w, st, o)
}

// NewBuilderOn starts a report of a session of world w whose events
// another pass applies to st, a state of w from the session's start that
// keeps its retired tickets and has the rubric's judge (as
// analyze.LoadWith's): Observe, not Add, takes each event once that pass
// applied it, and the report is the one Add would have made. The session
// is then applied once instead of twice.
func NewBuilderOn(w *worlds.World, st *org.State, o Options) *Builder {
	return newBuilder(w, st, o)
}

func newBuilder(w *worlds.World, st *org.State, o Options) *Builder {
	b := &Builder{o: o.withDefaults(), w: w, st: st, queueOpen: map[string]int{}, queues: map[string]*step{},
		claims: map[string]opened{}, work: map[string]opened{}, leave: map[string]opened{},
		spans: map[string]*[lanes][]Interval{}, rejections: map[rejectionKey]*rejectionAcc{},
		desks: map[string]*desk{}, deskOf: map[string]string{}, since: map[string]int64{}, decided: map[string]int{}, answers: map[string]int{},
		downSince: map[string]int{}, awaySince: map[string]int{}}
	for _, q := range w.Queues {
		b.queues[q.ID] = &step{}
	}
	for _, p := range w.Projects {
		if p.Start == 0 {
			b.queueOpen[p.Queue] += len(p.Tasks)
		}
	}
	for _, q := range w.Queues {
		b.queues[q.ID].set(0, float64(b.queueOpen[q.ID]))
	}
	b.approvals.set(0, 0)
	b.reward.set(0, 0)
	return b
}

func payloadOf[T any](ev *events.Event, typed any) (T, error) {
	v, err := payload.As[T](ev, typed)
	if err != nil {
		return v, fmt.Errorf("report: seq %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return v, nil
}

// Add takes the session's next event. Events must come in sequence order
// from the first; an event that does not apply is an error.
func (b *Builder) Add(ev events.Event) error {
	// The payload decoded once (fastjson for the hot types), for the
	// state and for what the builder reads of it.
	b.typed = payload.Decode(&ev)
	defer func() { b.typed = nil }()
	if err := b.before(&ev); err != nil {
		return err
	}
	if err := b.st.ApplyWith(ev, b.typed); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return b.observe(&ev)
}

// Observe takes the session's next event, which the pass that owns the
// builder's state (NewBuilderOn) has applied, with the payload it decoded
// (nil when it did not). That pass checked a session.ended's recorded hash
// against its state before applying it, and stopped had it differed.
func (b *Builder) Observe(ev *events.Event, typed any) error {
	if typed == nil {
		typed = payload.Decode(ev)
	}
	b.typed = typed
	defer func() { b.typed = nil }()
	if ev.Type == payload.EvSessionEnded {
		b.verified = verifiedOK
	} else if err := b.before(ev); err != nil {
		return err
	}
	return b.observe(ev)
}

// SetExplainer sets the analysis that answers the "why" section
// (Options.Explain), for a builder made before the analysis was whole
// (NewBuilderOn). Report reads it.
func (b *Builder) SetExplainer(e Explainer) { b.o.Explain = e }

// verifiedOK is what the report says of a replay that matched.
const verifiedOK = "replayed state hash matches the recorded one"

// before notes what ev says before it is applied: the session's start,
// and whether the state before its end has the hash it records.
func (b *Builder) before(ev *events.Event) error {
	switch ev.Type {
	case payload.EvSessionStarted:
		p, err := payloadOf[payload.SessionStarted](ev, b.typed)
		if err != nil {
			return err
		}
		b.started = p
	case payload.EvSessionEnded:
		p, err := payloadOf[payload.SessionEnded](ev, b.typed)
		if err != nil {
			return err
		}
		h := b.st.Hash()
		if got := hex.EncodeToString(h[:]); got == p.StateHash {
			b.verified = verifiedOK
		} else {
			b.verified = fmt.Sprintf("MISMATCH: recorded %s, replayed %s", p.StateHash, got)
		}
	}
	return nil
}

func (b *Builder) bumpQueue(q string, d int, t int64) {
	b.queueOpen[q] += d
	if s := b.queues[q]; s != nil {
		s.set(t, float64(b.queueOpen[q]))
	}
}

func (b *Builder) open(m map[string]opened, key, member string, since, until int64) {
	m[key] = opened{member: member, since: since, until: until}
}

// close ends the span under way at key in m (if any) at time t, on lane.
func (b *Builder) close(m map[string]opened, key string, lane int, label string, t int64) {
	o, ok := m[key]
	if !ok {
		return
	}
	delete(m, key)
	sp := b.spans[o.member]
	if sp == nil {
		sp = &[lanes][]Interval{}
		b.spans[o.member] = sp
	}
	to := max(t, o.since)
	var sched clock.Schedule = &b.w.Calendar
	if m, ok := b.w.Member(o.member); ok && m.Schedule != nil {
		sched = m.Schedule
	}
	sp[lane] = append(sp[lane], Interval{From: o.since, To: to, Label: label, Work: int64(sched.WorkBetween(clock.Time(o.since), clock.Time(to)))})
}

// observe updates the series and spans after ev was applied.
func (b *Builder) observe(ev *events.Event) error {
	t := ev.Time
	switch ev.Type {
	case payload.EvTaskCreated:
		p, err := payloadOf[payload.TaskCreated](ev, b.typed)
		if err != nil {
			return err
		}
		b.bumpQueue(p.Queue, 1, t)
	case payload.EvProjectStarted:
		p, err := payloadOf[payload.ProjectStarted](ev, b.typed)
		if err != nil {
			return err
		}
		for _, pr := range b.w.Projects {
			if pr.ID == p.Project {
				b.bumpQueue(pr.Queue, len(pr.Tasks), t)
			}
		}
	case payload.EvCaseOpened:
		// A case's steps are open items of their queues, as a project's
		// tasks are from its start.
		p, err := payloadOf[payload.CaseOpened](ev, b.typed)
		if err != nil {
			return err
		}
		for i := range p.Steps {
			if t := b.st.Task(p.Steps[i].ID); t != nil {
				b.bumpQueue(t.Queue, 1, ev.Time)
			}
		}
	case payload.EvCaseReopened:
		// Its unmet steps are new tasks, open items of their queues again.
		p, err := payloadOf[payload.CaseReopened](ev, b.typed)
		if err != nil {
			return err
		}
		for _, step := range p.Steps {
			if t := b.st.Task(org.ReopenedTaskID(p.Case, step, p.N)); t != nil {
				b.bumpQueue(t.Queue, 1, ev.Time)
			}
		}
	case payload.EvTaskClaimed:
		p, err := payloadOf[payload.TaskClaimed](ev, b.typed)
		if err != nil {
			return err
		}
		b.bumpQueue(b.st.Task(p.Task).Queue, -1, t)
		b.open(b.claims, p.Task, ev.Actor, t, 0)
	case payload.EvTaskHandedOff:
		p, err := payloadOf[payload.TaskHandedOff](ev, b.typed)
		if err != nil {
			return err
		}
		b.close(b.claims, p.Task, LaneClaim, p.Task, t)
		if p.To == "" {
			b.bumpQueue(b.st.Task(p.Task).Queue, 1, t)
		} else {
			b.open(b.claims, p.Task, p.To, t, 0)
		}
	case payload.EvTaskCompleted:
		p, err := payloadOf[payload.TaskCompleted](ev, b.typed)
		if err != nil {
			return err
		}
		b.close(b.claims, p.Task, LaneClaim, p.Task, t)
	case payload.EvWorkStarted:
		p, err := payloadOf[payload.WorkStarted](ev, b.typed)
		if err != nil {
			return err
		}
		b.open(b.work, p.Task, ev.Actor, t, int64(p.Until))
	case payload.EvWorkFinished:
		p, err := payloadOf[payload.WorkFinished](ev, b.typed)
		if err != nil {
			return err
		}
		b.close(b.work, p.Task, LaneWork, p.Task, t)
	case payload.EvTicketServed: // task.claimed and work.started (format 3)
		p, err := payloadOf[payload.TicketServed](ev, b.typed)
		if err != nil {
			return err
		}
		b.bumpQueue(b.st.Task(p.Task).Queue, -1, t)
		b.open(b.claims, p.Task, ev.Actor, t, 0)
		b.open(b.work, p.Task, ev.Actor, t, int64(p.Until))
	case payload.EvTicketResolved: // work.finished and task.completed (format 3), and the next step (format 5)
		p, err := payloadOf[payload.TicketResolved](ev, b.typed)
		if err != nil {
			return err
		}
		b.close(b.work, p.Task, LaneWork, p.Task, t)
		b.close(b.claims, p.Task, LaneClaim, p.Task, t)
		if p.Next != "" { // and the ticket served next (format 5)
			b.bumpQueue(b.st.Task(p.Next).Queue, -1, t)
			b.open(b.claims, p.Next, ev.Actor, t, 0)
			b.open(b.work, p.Next, ev.Actor, t, int64(p.NextUntil))
		}
	case payload.EvMemberLeft:
		p, err := payloadOf[payload.MemberLeft](ev, b.typed)
		if err != nil {
			return err
		}
		b.open(b.leave, ev.Actor, ev.Actor, t, int64(p.Until))
		b.leaveStarted(ev.Actor, t, p)
	case payload.EvMemberReturned:
		b.close(b.leave, ev.Actor, LaneLeave, "leave", t)
		b.interruptionEnded(b.awaySince, ev.Actor, t)
	case payload.EvQueueDown:
		p, err := payloadOf[payload.QueueDown](ev, b.typed)
		if err != nil {
			return err
		}
		b.outageStarted(t, p)
	case payload.EvQueueUp:
		p, err := payloadOf[payload.QueueUp](ev, b.typed)
		if err != nil {
			return err
		}
		b.interruptionEnded(b.downSince, p.Queue, t)
	case payload.EvApprovalRequested:
		p, err := payloadOf[payload.ApprovalRequested](ev, b.typed)
		if err != nil {
			return err
		}
		b.pending++
		b.approvals.set(t, float64(b.pending))
		if len(p.Steps) > 0 {
			b.toDesk(p.Request, p.Steps[0].Approver, t)
		}
	case payload.EvApprovalGranted, payload.EvApprovalRejected:
		p, err := payloadOf[payload.ApprovalDecided](ev, b.typed)
		if err != nil {
			return err
		}
		b.decided[ev.Actor]++
		b.deskDecided(p.Request, ev.Actor, t)
		if r := b.st.Request(p.Request); r != nil && r.Status != org.RequestPending {
			b.pending--
			b.approvals.set(t, float64(b.pending))
		} else if r != nil {
			b.toDesk(p.Request, r.Steps[r.Current].Approver, t)
		}
	case payload.EvApprovalEscalated:
		p, err := payloadOf[payload.ApprovalEscalated](ev, b.typed)
		if err != nil {
			return err
		}
		b.deskEscalated(p.Request, t)
		b.toDesk(p.Request, p.To, t)
	case payload.EvMessageSent:
		p, err := payloadOf[payload.MessageSent](ev, b.typed)
		if err != nil {
			return err
		}
		if p.ReplyTo != "" || p.Topic != "" {
			b.answers[ev.Actor]++
		}
	case payload.EvReward:
		p, err := payloadOf[payload.Reward](ev, b.typed)
		if err != nil {
			return err
		}
		b.rewardSum += p.Team
		b.reward.set(t, b.rewardSum)
	case payload.EvActionRejected:
		p, err := payloadOf[payload.ActionRejected](ev, b.typed)
		if err != nil {
			return err
		}
		b.addRejection(ev.Actor, t, &p)
	case payload.EvRecordWritten:
		return b.collateralWrite(ev)
	case payload.EvSLABreached:
		p, err := payloadOf[payload.SLABreached](ev, b.typed)
		if err != nil {
			return err
		}
		if p.Case != "" {
			b.breaches = append(b.breaches, "case "+p.Case)
		} else {
			b.breaches = append(b.breaches, p.Task)
		}
	}
	return nil
}

// Report finishes the report from the events added so far (a session that
// has not ended is reported as far as it got). Spans still under way end
// at the last event's time. The Builder must not be used afterwards.
func (b *Builder) Report() *Report {
	st := b.st
	end := int64(st.Now)
	for _, k := range slices.Sorted(maps.Keys(b.work)) {
		o := b.work[k]
		b.close(b.work, k, LaneWork, k+" (under way)", min(end, max(o.until, o.since)))
	}
	for _, k := range slices.Sorted(maps.Keys(b.claims)) {
		b.close(b.claims, k, LaneClaim, k+" (held at the end)", end)
	}
	for _, k := range slices.Sorted(maps.Keys(b.leave)) {
		o := b.leave[k]
		b.close(b.leave, k, LaneLeave, "leave", min(end, max(o.until, o.since)))
	}
	r := &Report{
		Session: b.o.Session, World: b.w.Name, Description: b.w.Description, Seed: b.started.Seed, Load: b.started.Load,
		Events: st.LastSeq, End: end, Ended: st.EndReason, Verified: b.verified, Score: policies.Score(st),
		StartWall: b.w.Calendar.Wall(0).Format("2006-01-02 15:04 MST"),
		EndWall:   b.w.Calendar.Wall(st.Now).Format("2006-01-02 15:04 MST"),
	}
	if r.Load == 0 {
		r.Load = 1
	}
	r.RootSeed = r.Seed
	if b.o.Parent != "" {
		r.Parent, r.ForkSeq, r.Seed = b.o.Parent, b.o.ForkSeq, b.o.Seed
	}
	if !st.Ended {
		r.Ended = "not ended (still running or interrupted)"
	}
	r.Agents = agentSummary(b.o.Agents)
	for _, t := range st.AllTasks() {
		if t.Kind != org.KindTask || t.Deadline == 0 {
			continue
		}
		if t.Status == org.StatusDone && t.DoneAt > t.Deadline {
			r.Late++
		} else if t.Status != org.StatusDone && st.Now > t.Deadline {
			r.Overdue++
		}
	}
	r.Interruptions, r.InterruptionsNote = b.interruptionMarks(end)
	r.Gantt = b.gantt(end)
	r.Gantt.Interruptions = r.Interruptions
	r.DAG = BuildDAG(st, b.o.MaxDAGNodes)
	r.Queues, r.QueuesNote = b.queueChart(end)
	r.Reward = b.timeChart("Cumulative reward (team)", "reward", []Series{{Name: "team reward", Points: b.series(&b.reward, end)}})
	if len(b.reward.pts) <= 1 {
		r.Reward.Note = "no reward events in this session"
	}
	r.Desks = b.deskRows(end)
	r.Approvals, r.ApprovalsNote = b.approvalsChart(r.Desks, end)
	if len(st.Requests) == 0 {
		r.Approvals.Note = "no approval requests in this session"
	}
	for _, c := range []*LineChart{&r.Queues, &r.Reward, &r.Approvals} {
		c.Interruptions = r.Interruptions
	}
	r.Rejections = b.rejectionGroups()
	r.Breaches = len(b.breaches)
	r.BreachExamples = b.breaches[:min(len(b.breaches), 20)]
	r.SLA = sla(st)
	r.Why = b.why(r)
	if len(st.Cases) > 0 && b.o.Explain != nil {
		r.Cases = b.o.Explain.Cases(b.o.MaxLateCases)
	}
	r.Outcomes = b.outcomes(&r.Score)
	r.Members = b.memberRows(r.Score.Members)
	if len(r.Members) > b.o.MaxGanttRows {
		top := slices.Clone(r.Members)
		// Those who delivered most, then those who decided or answered most.
		sort.SliceStable(top, func(i, j int) bool {
			if top[i].Delivered != top[j].Delivered {
				return top[i].Delivered > top[j].Delivered
			}
			return top[i].Decided+top[i].Answers > top[j].Decided+top[j].Answers
		})
		keep := map[string]bool{}
		for _, m := range top[:b.o.MaxGanttRows] {
			keep[m.Member] = true
		}
		all := r.Members
		r.Members = nil
		for _, m := range all {
			if keep[m.Member] {
				r.Members = append(r.Members, m)
			}
		}
		r.MembersNote = fmt.Sprintf("%d of %d members shown (those who delivered most, then those who decided or answered most); %d omitted", len(r.Members), len(all), len(all)-len(r.Members))
	}
	r.Unverified = r.Score.Unverified[:min(len(r.Score.Unverified), 20)]
	r.UnverifiedMore = len(r.Score.Unverified) - len(r.Unverified)
	return r
}

// series closes a step series at end and downsamples it.
func (b *Builder) series(s *step, end int64) []Point {
	pts := slices.Clone(s.pts)
	if n := len(pts); n > 0 && pts[n-1].X < float64(end) {
		pts = append(pts, Point{X: float64(end), Y: pts[n-1].Y})
	}
	return Downsample(pts, b.o.Buckets)
}

// timeLabel names the X axis of every timeline.
const timeLabel = "simulated time (the world's wall clock)"

func (b *Builder) timeChart(title, ylabel string, series []Series) LineChart {
	return LineChart{Title: title, XLabel: timeLabel, YLabel: ylabel, Width: b.o.Width, Height: 240,
		Series: series, XTicks: WallTicks(&b.w.Calendar), Step: true}
}

// maxQueueSeries is how many queues the queue chart draws at most.
const maxQueueSeries = 8

func (b *Builder) queueChart(end int64) (LineChart, string) {
	type q struct {
		id   string
		peak float64
	}
	var qs []q
	for _, wq := range b.w.Queues {
		peak := 0.0
		for _, p := range b.queues[wq.ID].pts {
			peak = max(peak, p.Y)
		}
		qs = append(qs, q{wq.ID, peak})
	}
	note := ""
	if len(qs) > maxQueueSeries {
		sort.SliceStable(qs, func(i, j int) bool { return qs[i].peak > qs[j].peak })
		note = fmt.Sprintf("%d of %d queues shown (the longest at their peak); %d omitted", maxQueueSeries, len(qs), len(qs)-maxQueueSeries)
		qs = qs[:maxQueueSeries]
	}
	var series []Series
	for _, x := range qs {
		series = append(series, Series{Name: x.id, Points: b.series(b.queues[x.id], end)})
	}
	c := b.timeChart("Open items per queue", "open items", series)
	if len(series) == 0 {
		c.Note = "this world has no queues"
	}
	return c, note
}

// Options returns the options in force, defaults filled in.
func (b *Builder) Options() Options { return b.o }

func agentSummary(agents map[string]string) string {
	n := map[string]int{}
	for _, a := range agents {
		n[a]++
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s×%d", a, n[a]))
	}
	return strings.Join(parts, ", ")
}

// memberRows adds to the scorecard's credit what the members table shows
// besides: role, agent, approvals decided, answers given, and the working
// time others were blocked on them, written for people.
func (b *Builder) memberRows(credit []policies.MemberCredit) []MemberRow {
	day := b.w.Calendar.DayLength()
	var rows []MemberRow
	for _, c := range credit {
		row := MemberRow{MemberCredit: c, Agent: b.o.Agents[c.Member], Decided: b.decided[c.Member], Answers: b.answers[c.Member],
			Blocked: analyze.FormatWork(c.BlockedOthers, day)}
		if m := b.st.Member(c.Member); m != nil {
			row.Role = m.Role
		}
		if wm, ok := b.w.Member(c.Member); ok && wm.NPC != nil && row.Agent == "" {
			row.Agent = "simulated colleague"
		}
		rows = append(rows, row)
	}
	return rows
}
