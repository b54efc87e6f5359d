package org

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/corpsim/corpsim/clock"
)

// ScanView is View as it was before the offer index: it looks at every
// task of every queue the member serves. Tests use it as the reference the
// indexed View must match.
func (s *State) ScanView(id string) Observation {
	m := s.members[id]
	o := Observation{Member: id, Time: s.Now, Wall: s.World.Calendar.Wall(s.Now).Format("2006-01-02T15:04:05Z07:00"),
		Horizon: s.World.Horizon, Assigned: []TaskView{}, Available: []TaskView{}, Upcoming: []TaskView{},
		Approvals: []RequestView{}, Requests: []RequestView{}, Inbox: []MessageView{}, Projects: []ProjectView{}}
	if m == nil {
		return o
	}
	o.Role, o.Team, o.Turn, o.OnLeave = m.Role, m.Team, m.Turn+1, m.OnLeave
	o.Queues = []*QueueView{}
	o.Rejected = m.Rejected
	o.News = s.news() // not indexed: the view's own
	type ranked struct {
		t       *Task
		pending int
	}
	var avail, candidates []*Task
	var upcoming []ranked
	queues := map[string]*QueueView{}
	for _, q := range s.World.Queues {
		if s.Serves(m.Role, q.ID) || s.NPCServes(id, q.ID) {
			qv := &QueueView{ID: q.ID, Order: q.Order, WIP: q.WIP, DownUntil: s.queues[q.ID].DownUntil}
			queues[q.ID] = qv
			o.Queues = append(o.Queues, qv)
		}
	}
	heads := map[string]bool{} // queue -> its head ticket for this role is listed
	full := map[string]bool{}  // queues at their WIP limit
	for _, q := range s.World.Queues {
		if q.WIP > 0 && queues[q.ID] != nil && s.InProgress(q.ID) >= q.WIP {
			full[q.ID] = true
		}
	}
	// Only the member's own tasks and the queues it serves can show: look
	// at those, not at every task of the session.
	held := slices.Clone(s.Held(id))
	slices.SortFunc(held, func(a, b *Task) int { return a.ord - b.ord })
	for _, t := range held {
		if !t.Hidden {
			if len(o.Assigned) == s.limits().Listed {
				o.AssignedMore++
				continue
			}
			o.Assigned = append(o.Assigned, s.taskView(t, m))
		}
	}
	for _, q := range s.World.Queues {
		qv := queues[q.ID]
		if qv == nil {
			continue
		}
		// In a queue served in arrival order only its first ticket this
		// member may take can be offered (see QueueAhead): once it is a
		// candidate, the queue's other tickets are only counted, so a long
		// backlog costs a count, not a check per ticket.
		fifo, headSeen := q.Order != "priority", false
		for _, t := range s.Tasks() {
			if t.Queue != q.ID || t.Status == StatusDone || t.Hidden {
				continue
			}
			if t.Assignee == "" {
				qv.Open++
			} else {
				qv.InProgress++
			}
			if t.Kind == KindTicket && fifo && headSeen {
				continue
			}
			if t.Assignee != id && t.Status == StatusOpen && s.CanTake(id, t) && s.Serves(m.Role, t.Queue) {
				candidates = append(candidates, t)
				headSeen = headSeen || t.Kind == KindTicket
			}
		}
	}
	// In Tasks order, as if every task had been looked at in turn (the
	// sorts below are stable).
	slices.SortFunc(candidates, func(a, b *Task) int { return a.ord - b.ord })
	for _, t := range candidates {
		switch {
		case !s.DepsDone(t):
			upcoming = append(upcoming, ranked{t, s.pendingCount(t)})
		case s.queues[t.Queue].Down(s.Now) || full[t.Queue]:
			// An outage or the WIP limit blocks it: it is counted in Queues, not offered.
		case t.Kind == KindTicket:
			// Only the tickets the queue's order lets this member take now.
			if !heads[t.Queue] && s.QueueAhead(t, id) == nil {
				heads[t.Queue] = true
				avail = append(avail, t)
			}
		default:
			avail = append(avail, t)
		}
	}
	listed := s.limits().Listed
	// Long lists are cut to the listed limit, most valuable (and, upcoming, nearest)
	// first; *More say how many were left out. The tickets at the heads of
	// the queues (one per queue) are never cut: a queue must not starve
	// because its tickets are worth less than the project work.
	// Tasks whose purchase the budget they charge cannot pay come after
	// the rest (tickets are never dear: a queue's head stays its head).
	dear := func(t *Task) bool { return t.Kind != KindTicket && !s.payable(t) }
	sort.SliceStable(avail, func(i, j int) bool {
		ti, tj := avail[i].Kind == KindTicket, avail[j].Kind == KindTicket
		if ti != tj && len(avail) > listed {
			return ti
		}
		if di, dj := dear(avail[i]), dear(avail[j]); di != dj {
			return dj
		}
		return avail[i].Value > avail[j].Value
	})
	sort.SliceStable(upcoming, func(i, j int) bool {
		a, b := upcoming[i], upcoming[j]
		if a.pending != b.pending {
			return a.pending < b.pending
		}
		return a.t.Value > b.t.Value
	})
	for i, t := range avail {
		if i == listed {
			o.AvailableMore = len(avail) - i
			break
		}
		o.Available = append(o.Available, s.openView(t, m))
	}
	for i, r := range upcoming {
		if i == listed {
			o.UpcomingMore = len(upcoming) - i
			break
		}
		o.Upcoming = append(o.Upcoming, s.openView(r.t, m))
	}
	var mine []*Request
	for _, r := range s.Requests {
		if r.Status == RequestPending && r.Steps[r.Current].Approver == id {
			o.Approvals = append(o.Approvals, s.requestView(r, m))
		}
		if r.Requester == id {
			mine = append(mine, r)
		}
	}
	// Its own requests: the pending ones first (to the limit), then the
	// latest decided, in the order made; the rest counted.
	pending := 0
	for _, r := range mine {
		if r.Status == RequestPending {
			pending++
		}
	}
	showPending := min(pending, listed)
	skipDecided := len(mine) - pending - min(len(mine)-pending, listed-showPending)
	for _, r := range mine {
		if r.Status == RequestPending {
			if showPending > 0 {
				showPending--
				o.Requests = append(o.Requests, s.requestView(r, m))
			}
		} else if skipDecided > 0 {
			skipDecided--
		} else {
			o.Requests = append(o.Requests, s.requestView(r, m))
		}
	}
	o.RequestsMore = len(mine) - len(o.Requests)
	for _, msg := range s.Messages {
		if msg.From == id && !msg.Answered {
			o.Awaiting = append(o.Awaiting, MessageView{ID: msg.ID, From: msg.To, Text: msg.Text, SentAt: msg.SentAt})
		}
	}
	inbox := m.Inbox
	if lim := s.limits().Inbox; len(inbox) > lim {
		inbox, o.InboxMore = inbox[:lim], len(inbox)-lim
	}
	for _, mid := range inbox {
		msg := s.messages[mid]
		o.Inbox = append(o.Inbox, MessageView{ID: msg.ID, From: msg.From, Text: msg.Text, Topic: msg.Topic, SentAt: msg.SentAt})
	}
	if b := s.budgets[m.Team]; b != nil {
		o.Budget = b.view()
	}
	for i := range s.World.Projects {
		p := &s.World.Projects[i]
		o.Projects = append(o.Projects, ProjectView{ID: p.ID, Title: p.Title, Deadline: p.Deadline, Tasks: len(p.Tasks), Done: s.doneIn[p.ID]})
	}
	return o
}

// ScanLists are the approvals, requests and awaited replies of member id's
// view as View found them before the view lists (view_lists.go): by a scan
// of every request and message. Tests use them as the reference.
func (s *State) ScanLists(id string) (approvals, requests []RequestView, awaiting []MessageView) {
	approvals, requests = []RequestView{}, []RequestView{}
	m := s.members[id]
	for _, r := range s.Requests {
		if r.Status == RequestPending && r.Steps[r.Current].Approver == id {
			approvals = append(approvals, s.requestView(r, m))
		}
		if r.Requester == id {
			requests = append(requests, s.requestView(r, m))
		}
	}
	for _, msg := range s.Messages {
		if msg.From == id && !msg.Answered {
			awaiting = append(awaiting, MessageView{ID: msg.ID, From: msg.To, Text: msg.Text, SentAt: msg.SentAt})
		}
	}
	return approvals, requests, awaiting
}

// StaleDependents returns a task whose count of dependents (which views
// show) is not the length of its dependents' list, or "".
func (s *State) StaleDependents() string {
	for _, t := range s.Tasks() {
		if int(t.dependents) != len(s.dependents[t.ID]) {
			return t.ID
		}
	}
	return ""
}

// OpenFor is openFor of member id and, as the reference, the walk it was
// before the live offer sets: every queue its role serves in the world's
// order, each queue's offer sets by skill, then its head ticket. They give
// the IDs of the tasks found ("" for none).
func (s *State) OpenFor(id string) (got, want string) {
	m := s.members[id]
	if t := s.openFor(m); t != nil {
		got = t.ID
	}
	serves := s.roleServes[m.Role]
	var skills []string
	if w, ok := s.World.Member(m.ID); ok {
		skills = w.Skills
	}
	for i := range s.World.Queues {
		if i >= len(serves) || !serves[i] {
			continue
		}
		q := &s.World.Queues[i]
		if s.queues[q.ID].Down(s.Now) || q.WIP > 0 && s.InProgress(q.ID) >= q.WIP {
			continue
		}
		for _, o := range s.offersFor(s.roleOffers[m.Role], i, skills) {
			// Ready tasks, dear or not (firstPayable moves them apart).
			ready := append(slices.Clone(o.ready), o.dear...)
			if len(ready) > 0 {
				return got, slices.MinFunc(ready, readyCmp).ID
			}
		}
		if t := s.queueHead(i, m); t != nil {
			return got, t.ID
		}
	}
	return got, ""
}

// Servers returns the members wakeServers would wake for t, found by the
// index (indexed) or by a look at every member.
func (s *State) Servers(t *Task, oneNPC, indexed bool) []string {
	var ids []string
	add := func(m *Member) { ids = append(ids, m.ID) }
	if indexed && s.queueOf(t).num < len(s.wakeIx.npcs) {
		s.servers(t, oneNPC, add)
	} else {
		s.serversScanned(t, oneNPC, add)
	}
	return ids
}

// CheckWakeIndex makes every wakeServers call hold its index to a look at
// every member (a mismatch panics), and returns a func restoring it.
func CheckWakeIndex() func() {
	checkWakeIndex = true
	return func() { checkWakeIndex = false }
}

// WakeChecks counts the calls of wakeServers checked in s.
func (s *State) WakeChecks() int { return s.wakeChecks }

// BusyScanned is Busy by a look at every record (the reference of the
// availability index).
func (s *State) BusyScanned(member string, from, to clock.Time) []BusySpan {
	a := s.World.Availability
	if a == nil {
		return nil
	}
	type span struct {
		b          BusySpan
		start, end clock.Time
	}
	var out []span
	for _, r := range s.Records {
		if r.Type != a.Record || r.Deleted || r.Fields["member"] != member {
			continue
		}
		st, _ := r.Fields["start"].(string)
		en, _ := r.Fields["end"].(string)
		b, ok1 := s.Instant(st)
		e, ok2 := s.Instant(en)
		if !ok1 || !ok2 || e <= from || b >= to {
			continue
		}
		mtg, _ := r.Fields["meeting"].(string)
		out = append(out, span{BusySpan{Start: st, End: en, Meeting: mtg}, b, e})
	}
	slices.SortStableFunc(out, func(x, y span) int { return cmp.Compare(x.start, y.start) })
	spans := make([]BusySpan, len(out))
	for i := range out {
		spans[i] = out[i].b
	}
	return spans
}

// CaseDerivedErrors lists the cases whose derived members who did a step,
// colleagues' steps left and ready differ from their steps' (deriveCase).
func (s *State) CaseDerivedErrors() []string {
	var errs []string
	for _, c := range s.Cases {
		doers, left, ready := slices.Sorted(slices.Values(c.doers)), c.npcLeft, c.npcReady
		s.deriveCase(c)
		if !slices.Equal(doers, slices.Sorted(slices.Values(c.doers))) || left != c.npcLeft || ready != c.npcReady {
			errs = append(errs, fmt.Sprintf("case %s: kept %v, %d colleagues' steps left and %d ready, its steps give %v, %d and %d", c.ID, doers, left, ready, c.doers, c.npcLeft, c.npcReady))
		}
	}
	return errs
}

// NPCReady is how many of c's colleagues' steps not done have every
// dependency done, as c keeps it.
func (c *Case) NPCReady() int { return c.npcReady }

// RetiredKept returns the records of the tickets the state retired and
// kept (KeepRetired), in retirement order.
func (s *State) RetiredKept() [][]byte {
	out := make([][]byte, len(s.kept))
	for i, t := range s.kept {
		out[i] = t.appendRecord(nil)
	}
	return out
}

// DoerCases is the list of open cases member id did a step of that a view
// looks at (doerCases), and DoerCasesScanned the same by a look at every
// case.
func (s *State) DoerCases(id string) []*Case { return s.doerCases(id) }

func (s *State) DoerCasesScanned(id string) []*Case {
	var out []*Case
	for _, c := range s.Cases {
		if !c.Done() && slices.Contains(c.doers, id) {
			out = append(out, c)
		}
	}
	return out
}

// ReadyCases is the list of open cases with a colleague's step ready that
// a view looks at (readyCases).
func (s *State) ReadyCases() []*Case { return s.readyCases() }
