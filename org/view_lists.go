package org

// The view lists index the requests and messages a view shows, so that a
// view costs the member's own requests and the requests still pending, not
// a scan of every request and message of the session:
//
//   - mine: each member's requests (Observation.Requests), in the order of
//     State.Requests;
//   - pending: the requests that were pending when last looked at, in the
//     order of State.Requests (Approvals come from them: a pending
//     request's approver changes as it moves along and is escalated, so it
//     is not filed by approver);
//   - awaiting: each member's messages that had no reply when last looked
//     at (Observation.Awaiting), in the order of State.Messages;
//   - inbox: the messages to each member that had no reply when last
//     looked at, in the order of State.Messages (a simulated colleague
//     answers them: Unanswered);
//   - about: the messages that name a task (asking its NPC to perform it),
//     by task, in the order of State.Messages.
//
// Requests and messages are only ever appended, a request leaves pending
// for good and a message once answered stays answered, so the lists are
// filled lazily: each view files what was appended since the last one and
// drops from pending, awaiting and inbox what it finds decided or
// answered. (The cases a view looks at are filed by case.go: each
// member's, and those with a colleague's step ready.) They are derived,
// never hashed nor in snapshots; a state whose slices were replaced
// (Restore builds a new state) starts them again.
type viewLists struct {
	reqs     filed[Request] // of State.Requests
	msgs     filed[Message] // of State.Messages
	mine     map[string][]*Request
	pending  []*Request
	awaiting map[string][]*Message
	inbox    map[string][]*Message
	about    map[string][]*Message
	dropped  map[string]int // decided requests left out of mine for good, by member (listRequests)
}

// filed is how much of an append-only slice an index has filed: its
// first n elements, the last of which was last.
type filed[T any] struct {
	n    int
	last *T
}

// of reports whether list is the slice f filed from: as long, or longer,
// with the same last element filed.
func (f *filed[T]) of(list []*T) bool {
	return f.n <= len(list) && (f.n == 0 || list[f.n-1] == f.last)
}

// take returns list's elements appended since the last take, and notes
// them as filed.
func (f *filed[T]) take(list []*T) []*T {
	fresh := list[f.n:]
	if f.n = len(list); f.n > 0 {
		f.last = list[f.n-1]
	}
	return fresh
}

// catchUp files the requests and messages appended since the last view.
func (s *State) catchUp() {
	l := &s.lists
	if !l.reqs.of(s.Requests) || !l.msgs.of(s.Messages) {
		*l = viewLists{} // not the slices they were filed from
	}
	if l.mine == nil {
		l.mine, l.awaiting, l.about = map[string][]*Request{}, map[string][]*Message{}, map[string][]*Message{}
		l.inbox = map[string][]*Message{}
	}
	for _, r := range l.reqs.take(s.Requests) {
		l.mine[r.Requester] = append(l.mine[r.Requester], r)
		if r.Status == RequestPending {
			l.pending = append(l.pending, r)
		}
	}
	for _, msg := range l.msgs.take(s.Messages) {
		if !msg.Answered {
			l.awaiting[msg.From] = append(l.awaiting[msg.From], msg)
			l.inbox[msg.To] = append(l.inbox[msg.To], msg)
		}
		if msg.Task != "" {
			l.about[msg.Task] = append(l.about[msg.Task], msg)
		}
	}
}

// listApprovals appends to o the requests waiting for member m's decision,
// in the order of State.Requests, and drops the decided ones from pending.
func (s *State) listApprovals(o *Observation, m *Member) {
	for _, r := range s.stillPending() {
		if r.Steps[r.Current].Approver == m.ID {
			o.Approvals = append(o.Approvals, s.requestView(r, m))
		}
	}
}

// PendingRequests returns the requests pending, in the order of
// State.Requests. The slice is the state's, valid until the next event;
// the caller must not change it.
func (s *State) PendingRequests() []*Request {
	s.catchUp()
	return s.stillPending()
}

// stillPending drops the decided requests from pending and returns it.
func (s *State) stillPending() []*Request {
	l := &s.lists
	l.pending = prune(l.pending, func(r *Request) bool { return r.Status == RequestPending })
	return l.pending
}

// Unanswered returns the messages to member id that have no reply yet,
// delivered or not, in the order of State.Messages. The slice is the
// state's, valid until the next event; the caller must not change it.
func (s *State) Unanswered(id string) []*Message {
	s.catchUp()
	return pruneOf(s.lists.inbox, id, unanswered)
}

// listAwaiting appends to o member id's messages that have no reply yet,
// oldest first, and drops the answered ones from its list.
func (s *State) listAwaiting(o *Observation, id string) {
	for _, msg := range pruneOf(s.lists.awaiting, id, unanswered) {
		o.Awaiting = append(o.Awaiting, MessageView{ID: msg.ID, From: msg.To, Text: msg.Text, SentAt: msg.SentAt})
	}
}

func unanswered(msg *Message) bool { return !msg.Answered }

// prune keeps, in order and in list's own array, the elements keep
// accepts, and clears the rest of the array, so that it holds no
// reference to those dropped.
func prune[T any](list []*T, keep func(*T) bool) []*T {
	out := list[:0]
	for _, x := range list {
		if keep(x) {
			out = append(out, x)
		}
	}
	clear(list[len(out):])
	return out
}

// pruneOf prunes lists[key] (see prune), and drops the key when nothing
// is kept.
func pruneOf[T any](lists map[string][]*T, key string, keep func(*T) bool) []*T {
	list := lists[key]
	if len(list) == 0 {
		return nil
	}
	kept := prune(list, keep)
	switch {
	case len(kept) == 0:
		delete(lists, key)
		return nil
	case len(kept) < len(list):
		lists[key] = kept
	}
	return kept
}

// askedBy returns who last asked t's NPC to perform it, or "" (the
// messages about t must be filed: catchUp).
func (s *State) askedBy(t *Task) string {
	list := s.lists.about[t.ID]
	for i := len(list) - 1; i >= 0; i-- {
		if msg := list[i]; msg.To == t.Spec.NPC {
			return msg.From
		}
	}
	return ""
}

// asked reports whether someone has asked t's NPC to perform it and the
// NPC has not answered yet (the messages about t must be filed: catchUp).
func (s *State) asked(t *Task) bool {
	for _, msg := range s.lists.about[t.ID] {
		if msg.To == t.Spec.NPC && !msg.Answered {
			return true
		}
	}
	return false
}

// stepsOf returns the tasks of c's steps (Case.Steps), looked up once per
// case and again after a reopening replaced some (dropSteps).
func (s *State) stepsOf(c *Case) []*Task {
	if len(c.steps) != len(c.Steps) {
		c.steps = make([]*Task, len(c.Steps))
		for i, id := range c.Steps {
			c.steps[i] = s.tasks[id]
		}
	}
	return c.steps
}

// listRequests lists member m's requests in its view, in the order made,
// at most the listed limit of them: its pending ones first (up to the
// limit), then the latest decided ones; RequestsMore counts the rest. A
// member that made hundreds of requests over a long session was shown
// every one, decided or not, every turn (a 320-day wind-ops planner's
// view was 112 KB, 97 of them requests). A decided request never pends
// again and requests are only appended, so the decided ones older than
// the latest listed-limit of them are never listed again: they leave the
// member's list (counted in dropped), and a view costs the member's
// pending requests and the limit.
func (s *State) listRequests(o *Observation, m *Member) {
	mine := s.lists.mine[m.ID]
	listed := s.limits().Listed
	pending := 0
	for _, r := range mine {
		if r.Status == RequestPending {
			pending++
		}
	}
	if drop := len(mine) - pending - listed; drop > 0 { // the oldest decided ones, never shown again
		if s.lists.dropped == nil {
			s.lists.dropped = map[string]int{}
		}
		s.lists.dropped[m.ID] += drop
		keep := mine[:0]
		for _, r := range mine {
			if r.Status != RequestPending && drop > 0 {
				drop--
				continue
			}
			keep = append(keep, r)
		}
		clear(mine[len(keep):])
		mine = keep
		s.lists.mine[m.ID] = mine
	}
	showPending := min(pending, listed)
	decided := len(mine) - pending
	skipDecided := decided - min(decided, listed-showPending) // the oldest decided ones not shown
	for _, r := range mine {
		switch {
		case r.Status == RequestPending:
			if showPending == 0 {
				continue
			}
			showPending--
		case skipDecided > 0:
			skipDecided--
			continue
		}
		o.Requests = append(o.Requests, s.requestView(r, m))
	}
	o.RequestsMore = s.lists.dropped[m.ID] + len(mine) - len(o.Requests)
}
