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
//     at (Observation.Awaiting), in the order of State.Messages.
//
// Requests and messages are only ever appended, a request leaves pending
// for good and a message once answered stays answered, so the lists are
// filled lazily: each view files what was appended since the last one and
// drops from pending and awaiting what it finds decided or answered. They
// are derived, never hashed nor in snapshots; a state whose slices were
// replaced (Restore builds a new state) starts them again.
type viewLists struct {
	reqs     int      // State.Requests[:reqs] are filed
	lastReq  *Request // State.Requests[reqs-1] when they were
	msgs     int      // State.Messages[:msgs] are filed
	lastMsg  *Message // State.Messages[msgs-1] when they were
	mine     map[string][]*Request
	pending  []*Request
	awaiting map[string][]*Message
}

// catchUp files the requests and messages appended since the last view.
func (s *State) catchUp() {
	l := &s.lists
	if l.reqs > len(s.Requests) || l.reqs > 0 && s.Requests[l.reqs-1] != l.lastReq ||
		l.msgs > len(s.Messages) || l.msgs > 0 && s.Messages[l.msgs-1] != l.lastMsg {
		*l = viewLists{} // not the slices they were filed from
	}
	if l.mine == nil {
		l.mine, l.awaiting = map[string][]*Request{}, map[string][]*Message{}
	}
	for _, r := range s.Requests[l.reqs:] {
		l.mine[r.Requester] = append(l.mine[r.Requester], r)
		if r.Status == RequestPending {
			l.pending = append(l.pending, r)
		}
	}
	if l.reqs = len(s.Requests); l.reqs > 0 {
		l.lastReq = s.Requests[l.reqs-1]
	}
	for _, msg := range s.Messages[l.msgs:] {
		if !msg.Answered {
			l.awaiting[msg.From] = append(l.awaiting[msg.From], msg)
		}
	}
	if l.msgs = len(s.Messages); l.msgs > 0 {
		l.lastMsg = s.Messages[l.msgs-1]
	}
}

// listApprovals appends to o the requests waiting for member id's decision,
// in the order of State.Requests, and drops the decided ones from pending.
func (s *State) listApprovals(o *Observation, id string) {
	l := &s.lists
	keep := l.pending[:0]
	for _, r := range l.pending {
		if r.Status != RequestPending {
			continue
		}
		keep = append(keep, r)
		if r.Steps[r.Current].Approver == id {
			o.Approvals = append(o.Approvals, s.requestView(r))
		}
	}
	clear(l.pending[len(keep):])
	l.pending = keep
}

// listAwaiting appends to o member id's messages that have no reply yet,
// oldest first, and drops the answered ones from its list.
func (s *State) listAwaiting(o *Observation, id string) {
	l := &s.lists
	list := l.awaiting[id]
	if len(list) == 0 {
		return
	}
	keep := list[:0]
	for _, msg := range list {
		if msg.Answered {
			continue
		}
		keep = append(keep, msg)
		o.Awaiting = append(o.Awaiting, MessageView{ID: msg.ID, From: msg.To, Text: msg.Text, SentAt: msg.SentAt})
	}
	clear(list[len(keep):])
	if len(keep) == 0 {
		delete(l.awaiting, id)
	} else {
		l.awaiting[id] = keep
	}
}
