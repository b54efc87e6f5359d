package agents

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// Planner is the dependency- and deadline-aware baseline. Each turn it
//
//   - decides every request waiting for it at once: approves a valid one,
//     rejects an invalid one with the reason (and leaves alone one of its
//     own, which it may neither approve nor reject);
//   - for the tasks it holds: asks the colleague named in needs_info as soon
//     as it holds the task, or even sees it (and never again while the
//     question awaits an answer, nor once it has the answer); asks for the
//     purchase approval as soon as it holds the task, so that the approval
//     latency overlaps the work; completes what is ready;
//   - then works on the most urgent task it holds or may take: tickets
//     within their SLA first (by priority, then SLA deadline), worked to the
//     end in one go; then project tasks whose deadline can still be met,
//     earliest deadline first and, among those, the one heading the longest
//     chain of work that waits on it (the critical path, estimated from the
//     upcoming tasks it sees and Dependents), then by priority and value;
//     late work last. It reads values and priorities afresh every turn, so a
//     reprioritization takes effect at once. A task whose queue is down
//     waits, without retries, until the queue is back.
//
// It spends money with care: when the team's budget is projected to run out
// before the horizon (at the rate purchases have been asked for so far), it
// funds tickets with the most value per unit of money first, holding a dear
// one unfunded while its queue has room, so that the queue flows on.
//
// Among options as good as each other it picks by a hash of its member ID,
// so colleagues spread over them instead of colliding.
//
// It is deterministic: the same observations give the same actions. It
// remembers the purchases it has seen (its budget's cutoff) and the tickets
// it holds unfunded (Remembers: a planner made anew for a resumed or forked
// session is shown its member's past turns first); whether it knows what a
// task needs it reads from the view. Make one per member (New does); it is
// safe for concurrent use.
type Planner struct {
	mu     sync.Mutex
	member string
	cfg    plannerConfig
	seen   map[string]purchase // every purchase task it has seen
	// byPrice are seen's purchases by price (ties in task order) and
	// seenTotal their amounts summed in task order (cutoff): worked out
	// again only when seen has grown, since its entries never change.
	byPrice   []purchase
	seenTotal float64
	parked    map[string]bool // tickets it claimed to hold unfunded
	// content is how it does a step's outcome: the first values it sees (content.go).
	content content
}

// plannerConfig holds the planner's tunables.
type plannerConfig struct {
	stint    string         // how long one work action on a project task lasts ("": the engine's default, 2h)
	nearTail clock.Duration // critical-path estimates this close count as equal
}

// NewPlanner makes a Planner for member.
func NewPlanner(member string) *Planner {
	return &Planner{member: member, cfg: plannerConfig{nearTail: clock.Hour}, seen: map[string]purchase{}, parked: map[string]bool{}}
}

// Decide implements Agent.
func (p *Planner) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	acts, err := p.decide(ctx, o)
	return capped(acts), err
}

func (p *Planner) decide(_ context.Context, o org.Observation) ([]org.Action, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.member == "" {
		p.member = o.Member
	}
	maps.DeleteFunc(p.parked, func(id string, _ bool) bool {
		// Done, or another took it first.
		return !slices.ContainsFunc(o.Assigned, func(t org.TaskView) bool { return t.ID == id })
	})
	for _, list := range [][]org.TaskView{o.Assigned, o.Available, o.Upcoming} {
		for i := range list {
			if t := &list[i]; t.Purchase > 0 && t.Charges == nil { // its own team's purchases (cutoff)
				if _, ok := p.seen[t.ID]; !ok {
					p.seen[t.ID] = purchase{amount: t.Purchase, value: t.Value}
				}
			}
		}
	}
	acts := caseWork(o, len(o.Assigned) == 0 && len(o.Available) == 0)
	for _, r := range o.Approvals {
		switch why := invalidRequest(o, r); {
		case r.Requester == o.Member:
			// Neither approving nor rejecting one's own request is allowed.
		case why != "":
			acts = append(acts, org.Action{Type: org.ActReject, Request: r.ID, Reason: why})
		default:
			acts = append(acts, org.Action{Type: org.ActApprove, Request: r.ID})
		}
	}
	if handingOver(o) {
		// The shift ends soon and the team requires handing work over.
		return handOver(o, acts), nil
	}
	pl := newPlan(o, p.cfg)
	pl.cutoff = p.cutoff(o)
	budget := newPurse(o)
	asked := map[string]bool{} // from/topic asked this turn
	ask := func(t org.TaskView) {
		in := t.NeedsInfo
		if in == nil || in.Known || in.From == o.Member || asked[in.From+"/"+in.Topic] || pl.awaiting(in.From, in.Topic) {
			return
		}
		asked[in.From+"/"+in.Topic] = true
		acts = append(acts, org.Action{Type: org.ActMessage, To: in.From,
			Text: fmt.Sprintf("Hi %s, could you tell me about %s? I need it for %s.", in.From, in.Topic, t.ID)})
	}
	// What we hold: finish what is ready, ask early for what will be needed.
	var workable []org.TaskView
	var wake clock.Time // when a queue that blocks work we hold is back up
	for _, t := range o.Assigned {
		if t.Status != org.StatusClaimed {
			continue
		}
		ask(t)
		if p.parked[t.ID] {
			if !pl.fund(t, budget.left(t.Charges)) {
				continue // parked: not worth the money now; neither asked for nor worked on
			}
			delete(p.parked, t.ID)
		}
		if !budget.covers(t.Charges, t.Purchase) && t.Approval != org.RequestApproved {
			continue // the rules would refuse it; leave it until the budget allows
		}
		switch t.Approval {
		case "needed", org.RequestRejected:
			if approvalFits(o) {
				acts = append(acts, org.Action{Type: org.ActRequestApproval, Task: t.ID})
			}
		}
		if t.Spent < t.Effort {
			if up := pl.downUntil(t.Queue); up > 0 {
				// Its queue is down: no work on it until it is back.
				if wake == 0 || up < wake {
					wake = up
				}
			} else if len(t.Waiting) == 0 {
				workable = append(workable, t)
			}
			continue
		}
		if (t.Outcome != nil || t.Meeting != nil) && pl.ready(t) && budget.covers(t.Charges, t.Purchase) {
			more, ready := p.content.step(o, t)
			if acts = append(acts, more...); !ready {
				continue
			}
		}
		if pl.ready(t) && budget.covers(t.Charges, t.Purchase) {
			acts = append(acts, org.Action{Type: org.ActComplete, Task: t.ID})
			budget.spend(t.Charges, t.Purchase)
		}
	}
	// What to work on next: the most urgent of what we hold and what we may take.
	var pick *org.TaskView
	held := false
	if len(workable) > 0 {
		pl.sort(workable)
		pick, held = &workable[0], true
	}
	var options []org.TaskView
	var park *org.TaskView
	for _, t := range o.Available {
		if !pl.fund(t, budget.left(t.Charges)) {
			// Not worth the money now. A ticket heading its queue blocks the
			// queue while nobody takes it: hold it unfunded ("park" it). One
			// the budget cannot cover must go; a dear one only if the queue
			// keeps room for the others (and we park no other), else it is
			// bought after all.
			switch {
			case t.Kind != org.KindTicket:
				continue
			case t.Purchase > budget.left(t.Charges) || len(p.parked) == 0 && pl.canPark(t.Queue):
				if park == nil {
					park = &t
				}
				continue
			}
		}
		options = append(options, t)
	}
	if len(options) > 0 {
		pl.sort(options)
		best := options[pl.spread(p.member, options)]
		// What we hold goes first, but a ticket within its SLA goes before
		// project work: it is worth more per hour, and it is due sooner.
		if pick == nil || pl.class(best) == classTicket && pl.class(*pick) != classTicket {
			pick, held = &best, false
		}
	}
	if pick != nil && !held {
		t := *pick
		acts = append(acts, org.Action{Type: org.ActClaim, Task: t.ID})
		ask(t)
		if t.Approval == "needed" && approvalFits(o) {
			acts = append(acts, org.Action{Type: org.ActRequestApproval, Task: t.ID})
		}
	}
	if park != nil {
		acts = append(acts, org.Action{Type: org.ActClaim, Task: park.ID})
		p.parked[park.ID] = true
	}
	// Ask now for what tasks we may take will need, so that the answer is
	// here by the time the work is done.
	for _, list := range [][]org.TaskView{o.Available, o.Upcoming} {
		for _, t := range list {
			if t.Status == org.StatusOpen && t.NeedsInfo != nil {
				ask(t)
			}
		}
	}
	switch {
	case pick != nil && pick.Spent < pick.Effort:
		return append(acts, org.Action{Type: org.ActWork, Task: pick.ID, For: shiftStint(o, p.stint(*pick))}), nil
	case pick != nil:
		return acts, nil // taken with its effort spent (handed over once done): completed next turn
	case wake > 0:
		return append(acts, shiftWait(o, wake)), nil
	}
	return append(acts, shiftWait(o, 0)), nil
}

// purchase is a purchase task as first seen.
type purchase struct {
	amount int64
	value  float64
}

// price is money per unit of value.
func (p purchase) price() float64 {
	if p.value <= 0 {
		return math.Inf(1)
	}
	return float64(p.amount) / p.value
}

// cutoff is the highest price (money per unit of value) worth paying now.
// It estimates the money the purchases still to come will ask for from
// those seen so far (their amount per unit of time, times the time left);
// when that exceeds what the team has left, it keeps the budget for the
// cheapest share of them: the cutoff is the price below which the
// purchases seen make up the affordable share of the money asked. It is
// +Inf when the budget is not projected to run out, or there is too
// little to go on.
func (p *Planner) cutoff(o org.Observation) float64 {
	b := o.Budget
	if b == nil || len(p.seen) < minSeen || o.Time <= 0 || o.Horizon <= o.Time {
		return math.Inf(1)
	}
	if len(p.byPrice) != len(p.seen) {
		ps := make([]purchase, 0, len(p.seen))
		var total float64
		for _, id := range slices.Sorted(maps.Keys(p.seen)) {
			ps = append(ps, p.seen[id])
			total += float64(p.seen[id].amount)
		}
		slices.SortStableFunc(ps, func(x, y purchase) int { return cmp.Compare(x.price(), y.price()) })
		p.byPrice, p.seenTotal = ps, total
	}
	ps, total := p.byPrice, p.seenTotal
	ahead := total / float64(o.Time) * float64(o.Horizon-o.Time)
	if ahead <= float64(b.Remaining) {
		return math.Inf(1)
	}
	share := float64(b.Remaining) / ahead
	var sum float64
	for i, x := range ps {
		sum += float64(x.amount) / total
		if sum > share {
			if i == 0 {
				return 0
			}
			return ps[i-1].price()
		}
	}
	return math.Inf(1)
}

// minSeen is how many purchases the planner must have seen before it budgets.
const minSeen = 5

// stint is how long to work on t in one go: a ticket to the end of its
// effort (it is urgent, and every turn in between costs a minute), other
// work in the configured stints, so that it looks up now and then.
func (p *Planner) stint(t org.TaskView) string {
	if t.Kind == org.KindTicket {
		if left := t.Effort - t.Spent; left > 0 {
			return left.String()
		}
	}
	return p.cfg.stint
}

// Task classes, most urgent first.
const (
	classTicket   = iota // a ticket within its SLA
	classOnTime          // a project task whose deadline has not passed
	classOpen            // a task with no deadline
	classLate            // a project task past its deadline
	classBreached        // a ticket past its SLA
)

// plan is what the planner derives from one observation.
type plan struct {
	o   org.Observation
	cfg plannerConfig
	// cutoff is the money per unit of value above which a purchase is
	// not worth funding now (+Inf: any is).
	cutoff float64
	// The chains the tails are worked out on, indexed at the first tail
	// asked for (chains; place is nil before): a decision among tickets
	// alone asks none.
	place map[string]int32 // visible task -> its place, in the order first listed
	left  []clock.Duration // by place: the effort left on the task (as first listed)
	from  []int32          // by place: kids[from[i]:from[i+1]] are the places of the visible tasks that depend on it
	kids  []int32
	tails []clock.Duration // by place: its tail once worked out (done)
	done  []uint8          // by place: 0 not yet, 1 being worked out, 2 done
}

func newPlan(o org.Observation, cfg plannerConfig) *plan {
	return &plan{o: o, cfg: cfg, cutoff: math.Inf(1)}
}

// chains indexes the visible tasks (Assigned, Available, Upcoming; a task
// listed twice as first listed) and who depends on whom among them. Views
// are read in place, never copied (each is about 300 bytes), and the
// dependents are one list cut by place, not a list a task.
func (pl *plan) chains() {
	lists := [...][]org.TaskView{pl.o.Assigned, pl.o.Available, pl.o.Upcoming}
	n := len(lists[0]) + len(lists[1]) + len(lists[2])
	pl.place = make(map[string]int32, n)
	pl.left = make([]clock.Duration, 0, n)
	firsts := make([]*org.TaskView, 0, n)
	for _, list := range lists {
		for i := range list {
			t := &list[i]
			if _, dup := pl.place[t.ID]; dup {
				continue
			}
			pl.place[t.ID] = int32(len(firsts))
			pl.left = append(pl.left, max(0, t.Effort-t.Spent))
			firsts = append(firsts, t)
		}
	}
	// Count each task's dependents, cut the list by those counts, then
	// fill it in listing order.
	pl.from = make([]int32, len(firsts)+1)
	edges := 0
	for _, t := range firsts {
		for _, d := range t.Deps {
			if k, ok := pl.place[d]; ok {
				pl.from[k+1]++
				edges++
			}
		}
	}
	for k := range firsts {
		pl.from[k+1] += pl.from[k]
	}
	pl.kids = make([]int32, edges)
	next := slices.Clone(pl.from[:len(firsts)])
	for c, t := range firsts {
		for _, d := range t.Deps {
			if k, ok := pl.place[d]; ok {
				pl.kids[next[k]] = int32(c)
				next[k]++
			}
		}
	}
	pl.tails = make([]clock.Duration, len(firsts))
	pl.done = make([]uint8, len(firsts))
}

// fund reports whether a purchase task is worth its money now: the budget
// covers it and, for a ticket its own team pays for, its price is within
// the cutoff. (Project purchases are always worth it: the project's other
// tasks wait on them.)
func (pl *plan) fund(t org.TaskView, budget int64) bool {
	switch {
	case t.Purchase <= 0:
		return true
	case t.Purchase > budget:
		return false
	case t.Kind != org.KindTicket || t.Charges != nil:
		return true // the cutoff rations its own team's budget
	}
	return t.Value > 0 && float64(t.Purchase)/t.Value <= pl.cutoff
}

// canPark reports whether holding one more ticket of queue without working
// on it leaves the queue at least two free places under its WIP limit.
func (pl *plan) canPark(queue string) bool {
	for _, q := range pl.o.Queues {
		if q.ID == queue {
			return q.WIP == 0 || q.InProgress+3 <= q.WIP
		}
	}
	return false
}

// awaiting reports whether a question about topic to member is still unanswered.
func (pl *plan) awaiting(member, topic string) bool { return asked(pl.o, member, topic) }

// ready reports whether a held task whose effort is spent may be completed.
func (pl *plan) ready(t org.TaskView) bool {
	if len(t.Waiting) > 0 {
		return false
	}
	if in := t.NeedsInfo; in != nil && !in.Known {
		return false
	}
	return t.Approval == "" || t.Approval == org.RequestApproved
}

func (pl *plan) class(t org.TaskView) int {
	t.Deadline = pl.deadline(t)
	late := t.Deadline != 0 && t.Deadline <= pl.o.Time
	switch {
	case t.Kind == org.KindTicket && late && !pl.backlog(t.Queue):
		// Past its SLA with nothing behind it. (A late ticket heading a
		// queue with others waiting stays urgent: it holds them up.)
		return classBreached
	case t.Kind == org.KindTicket:
		return classTicket
	case t.Deadline == 0:
		return classOpen
	case late:
		return classLate
	}
	return classOnTime
}

// deadline is when t is due: a case step's case's SLA, when it comes
// before the case's deadline; any other task's deadline.
func (pl *plan) deadline(t org.TaskView) clock.Time {
	if t.Case == "" {
		return t.Deadline
	}
	for _, c := range pl.o.Cases {
		if c.ID == t.Case && c.Due != 0 && (t.Deadline == 0 || c.Due < t.Deadline) {
			return c.Due
		}
	}
	return t.Deadline
}

// downUntil is when queue is back if it is down now, else 0.
func (pl *plan) downUntil(queue string) clock.Time {
	for _, q := range pl.o.Queues {
		if q.ID == queue && q.DownUntil > pl.o.Time {
			return q.DownUntil
		}
	}
	return 0
}

// backlog reports whether more than one ticket waits in queue.
func (pl *plan) backlog(queue string) bool {
	for _, q := range pl.o.Queues {
		if q.ID == queue {
			return q.Open > 1
		}
	}
	return false
}

// tail is the work on the longest chain from t through the tasks it can
// see waiting on it: an estimate of t's critical path to the goal. A task
// not visible has none.
func (pl *plan) tail(id string) clock.Duration {
	if pl.place == nil {
		pl.chains()
	}
	k, ok := pl.place[id]
	if !ok {
		return 0
	}
	return pl.tailAt(k)
}

// tailAt is the tail of the task at place k.
func (pl *plan) tailAt(k int32) clock.Duration {
	switch pl.done[k] {
	case 1:
		return 0 // cycles cannot happen in a valid world; this guards anyway
	case 2:
		return pl.tails[k]
	}
	pl.done[k] = 1
	var best clock.Duration
	for _, c := range pl.kids[pl.from[k]:pl.from[k+1]] {
		best = max(best, pl.tailAt(c))
	}
	pl.tails[k], pl.done[k] = pl.left[k]+best, 2
	return pl.tails[k]
}

// compare orders tasks most urgent first.
func (pl *plan) compare(a, b org.TaskView) int {
	ca, cb := pl.class(a), pl.class(b)
	if c := cmp.Compare(ca, cb); c != 0 {
		return c
	}
	switch ca {
	case classTicket:
		return cmp.Or(-cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Deadline, b.Deadline), -cmp.Compare(a.Value, b.Value))
	case classOnTime, classOpen:
		return cmp.Or(cmp.Compare(pl.deadline(a), pl.deadline(b)), -cmp.Compare(pl.tail(a.ID), pl.tail(b.ID)),
			-cmp.Compare(a.Dependents, b.Dependents), -cmp.Compare(a.Priority, b.Priority), -cmp.Compare(a.Value, b.Value))
	case classLate:
		return cmp.Or(-cmp.Compare(a.Dependents, b.Dependents), -cmp.Compare(density(a), density(b)), cmp.Compare(a.Deadline, b.Deadline))
	default:
		return cmp.Or(-cmp.Compare(a.Value, b.Value), cmp.Compare(a.Deadline, b.Deadline))
	}
}

// density is a task's value per hour of the effort left.
func density(t org.TaskView) float64 {
	left := max(t.Effort-t.Spent, clock.Minute)
	return t.Value / (float64(left) / float64(clock.Hour))
}

// equal reports whether a and b are as urgent as each other, give or take.
func (pl *plan) equal(a, b org.TaskView) bool {
	if pl.class(a) != pl.class(b) || a.Priority != b.Priority {
		return false
	}
	switch pl.class(a) {
	case classTicket, classBreached:
		return a.Value == b.Value
	case classOnTime, classOpen:
		d := pl.tail(a.ID) - pl.tail(b.ID)
		return a.Deadline == b.Deadline && d <= pl.cfg.nearTail && -d <= pl.cfg.nearTail &&
			(a.Dependents > 0) == (b.Dependents > 0) && near(a.Value, b.Value)
	}
	return a.Dependents == b.Dependents && near(density(a), density(b))
}

// near reports whether x and y are within a quarter of each other.
func near(x, y float64) bool {
	return x == y || math.Abs(x-y) <= 0.25*max(math.Abs(x), math.Abs(y))
}

func (pl *plan) sort(ts []org.TaskView) {
	slices.SortStableFunc(ts, pl.compare)
}

// spread returns the index of the option member takes among those as good
// as the first (ts sorted by compare): see leastHashed.
func (pl *plan) spread(member string, ts []org.TaskView) int {
	n := 1
	for n < len(ts) && pl.equal(ts[0], ts[n]) {
		n++
	}
	return leastHashed(member, ts[:n])
}
