package org

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Retirement (log format 4): finished work leaves the state, so that a
// session running for weeks of simulated time keeps only what is live.
//
// A plain ticket (no case, dependencies, dependents, purchase, approval
// chain or information to learn) verifies by itself alone once it is done:
// nothing any later event changes can change what it earned. At the first
// event applied after its completion (so that the completion's own reward
// and checks still see it) it retires:
//
//   - its snapshot bytes, exactly as the state's snapshot would list them
//     (from format 5, its binary record: the same fields, appendRecord),
//     are chained into a digest, d₍ₙ₊₁₎ = SHA-256(dₙ ‖ bytes), which the
//     snapshot (and so the state hash) carries with the count;
//   - the rubric's verdict on it (Judge) is folded into the totals the
//     scorecard continues from (RetiredTickets);
//   - it leaves Tasks and the lookups: State.Task does not find it, as for
//     a task that never was.
//
// What decides retirement is the state alone, so a state restored from a
// checkpoint retires the same tickets at the same events. An analysis that
// needs every ticket (trace, report) keeps the retired ones aside
// (KeepRetired); its hashes and scores are the same, since the snapshot
// and the scorecard read the same digest and totals either way.

// RetiringFormat is the first log format whose states retire done tickets.
const RetiringFormat = 4

// RecordFormat is the first log format whose retired digest chains a
// ticket's binary record (Task.appendRecord) instead of its snapshot's
// JSON: the same fields, a fifth of the bytes to encode and hash.
const RecordFormat = 5

// A Judge is the rubric's verdict on a done ticket as it retires: what it
// earned, whether within its SLA, and why it does not count ("" when it
// does). The policies package provides the one the scorecard agrees with.
type Judge interface {
	Judge(s *State, t *Task) (earned float64, onTime bool, why string)
}

// RetiredTickets is what a state keeps of the tickets it retired: their
// digest and count, and the totals the rubric scores them by, summed in
// retirement order.
type RetiredTickets struct {
	N        int    `json:"n"`
	Digest   string `json:"digest"` // hex SHA-256 chain, d₁ = SHA-256(32 zero bytes ‖ the first); "" before it
	Breached int    `json:"breached"`
	// Resolved counts those that verified, InSLA those of them on time,
	// Delivered what they earned, and Credit what each member earned.
	Resolved  int                `json:"resolved"`
	InSLA     int                `json:"in_sla"`
	Delivered float64            `json:"delivered"`
	Credit    map[string]float64 `json:"credit,omitempty"`
	// ByPriority counts them by priority, in order of priority.
	ByPriority []RetiredPriority `json:"by_priority,omitempty"`
	// Unverified are those that did not verify, each "id: why".
	Unverified []string `json:"unverified,omitempty"`

	digest       [32]byte
	lastPriority int // the index in ByPriority last counted
}

// RetiredPriority counts the retired tickets of one priority.
type RetiredPriority struct {
	Priority int `json:"priority"`
	Tickets  int `json:"tickets"`
	Breached int `json:"breached"`
}

// Retiring reports whether the state retires done tickets (its session's
// log format is 4 or later).
func (s *State) Retiring() bool { return s.Format >= RetiringFormat }

// Retired returns what the state keeps of the tickets it retired (nil when
// it does not retire). The caller must not change it.
func (s *State) Retired() *RetiredTickets {
	if !s.Retiring() {
		return nil
	}
	s.settleChain()
	if r := &s.retired; r.N > 0 {
		r.Digest = hex.EncodeToString(r.digest[:]) // spelt out when asked, not at every retirement
	}
	return &s.retired
}

// SetJudge sets the rubric's verdict that retiring tickets are folded by. A
// retiring state without one refuses the first event that would retire a
// ticket.
func (s *State) SetJudge(j Judge) { s.judge = j }

// KeepRetired makes the state keep the tickets it retires, for AllTasks and
// Task to find (an analysis of a session). It changes nothing that the
// snapshot, the hash or the scorecard read.
func (s *State) KeepRetired() { s.keep = true }

// AllTasks returns every task the session created, retired ones included
// when the state keeps them, in creation order. It is a new slice.
func (s *State) AllTasks() []*Task {
	if len(s.kept) == 0 {
		return slices.Clone(s.Tasks())
	}
	all := append(slices.Clone(s.Tasks()), s.kept...)
	slices.SortFunc(all, byOrd)
	return all
}

// retirable reports whether done task t verifies by itself alone, so that
// it may retire.
func (s *State) retirable(t *Task) bool {
	sp := t.Spec
	return t.Kind == KindTicket && t.Status == StatusDone && t.Case == "" && sp.Case == "" &&
		len(sp.Deps) == 0 && t.dependents == 0 && sp.Info == nil && sp.Purchase == 0 && sp.Chain == "" &&
		sp.Amount == 0 && t.Request == ""
}

// noteDone is called as task t is completed: a retiring state retires it
// at the next event.
func (s *State) noteDone(t *Task) {
	if s.Retiring() && s.retirable(t) {
		s.dueToRetire = append(s.dueToRetire, t)
	}
}

// retireDue retires the tickets completed before the event just applied,
// the first n of dueToRetire.
func (s *State) retireDue(n int) error {
	if n == 0 {
		return nil
	}
	if s.judge == nil {
		return errors.New("org: a state of log format 4 retires done tickets and needs the rubric's judge (State.SetJudge)")
	}
	for _, t := range s.dueToRetire[:n] {
		if err := s.retire(t); err != nil {
			return err
		}
	}
	rest := copy(s.dueToRetire, s.dueToRetire[n:])
	clear(s.dueToRetire[rest:])
	s.dueToRetire = s.dueToRetire[:rest]
	return nil
}

// retire folds done ticket t into the digest and totals and takes it out
// of the state.
func (s *State) retire(t *Task) error {
	r := &s.retired
	if s.Format >= RecordFormat {
		s.chainRecord(t)
	} else {
		// dₙ ‖ the ticket's snapshot JSON, hashed at once: no hasher to
		// make.
		s.settleChain()
		var buf [1024]byte
		b, ok := t.appendJSON(append(buf[:0], r.digest[:]...))
		if !ok {
			j, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("org: ticket %s does not encode: %w", t.ID, err)
			}
			b = append(append(buf[:0], r.digest[:]...), j...)
		}
		r.digest = sha256.Sum256(b)
		s.chain.digest = r.digest
	}
	r.N++
	earned, onTime, why := s.judge.Judge(s, t)
	if t.Breached {
		r.Breached++
	}
	r.countPriority(t.Spec.Priority, t.Breached)
	if why != "" {
		r.Unverified = append(r.Unverified, t.ID+": "+why)
	} else {
		r.Resolved++
		if onTime {
			r.InSLA++
		}
		r.Delivered += earned
		if r.Credit == nil {
			r.Credit = map[string]float64{}
		}
		r.Credit[t.DoneBy] += earned
	}
	// It stays in the list until enough have retired for a compaction
	// to cost what they do: a ticket in the middle of a long backlog
	// would cost the whole backlog's move.
	t.retired = true
	if s.holes++; s.holes*2 > len(s.list) {
		s.compact()
	}
	if s.keep {
		s.kept = append(s.kept, t)
		return nil
	}
	delete(s.tasks, t.ID)
	if s.lastTask == t {
		s.lastTask = nil
	}
	return nil
}

// Tasks returns the tasks in creation order: the world's in file order,
// then tickets as they arrive, without the retired tickets. The slice is
// the state's, valid until the next event; the caller must not change it.
func (s *State) Tasks() []*Task {
	if s.holes > 0 {
		s.compact()
	}
	return s.list
}

// compact takes the retired tickets out of the list. An empty list is nil,
// as a state's that never had a task: its snapshot says "tasks":null
// either way, and a restored state's says the same.
func (s *State) compact() {
	s.list = slices.DeleteFunc(s.list, func(t *Task) bool { return t.retired })
	s.holes = 0
	if len(s.list) == 0 {
		s.list = nil
	}
}

func (r *RetiredTickets) countPriority(p int, breached bool) {
	i := r.lastPriority
	if i >= len(r.ByPriority) || r.ByPriority[i].Priority != p {
		var found bool
		i, found = slices.BinarySearchFunc(r.ByPriority, p, func(x RetiredPriority, p int) int { return cmp.Compare(x.Priority, p) })
		if !found {
			r.ByPriority = slices.Insert(r.ByPriority, i, RetiredPriority{Priority: p})
		}
		r.lastPriority = i
	}
	r.ByPriority[i].Tickets++
	if breached {
		r.ByPriority[i].Breached++
	}
}

// Retired reports whether the ticket has retired (a state that keeps
// retired tickets still finds it).
func (t *Task) Retired() bool { return t.retired }

// restoreRetired takes a snapshot's retired totals and finds the tickets
// due to retire: the retirable done ones still in the state, completed at
// its last event.
func (s *State) restoreRetired(r *RetiredTickets) error {
	s.settleChain()
	if r != nil {
		if r.Digest != "" {
			d, err := hex.DecodeString(r.Digest)
			if err != nil || len(d) != len(r.digest) {
				return fmt.Errorf("org: snapshot's retired digest %q is not a SHA-256", r.Digest)
			}
			copy(r.digest[:], d)
		}
		s.retired = *r
		s.chain.digest = r.digest
	}
	if !s.Retiring() {
		return nil
	}
	for _, t := range s.Tasks() {
		if s.retirable(t) {
			s.dueToRetire = append(s.dueToRetire, t)
		}
	}
	slices.SortStableFunc(s.dueToRetire, func(a, b *Task) int { return cmp.Compare(a.DoneSeq, b.DoneSeq) })
	return nil
}

// A Sequencer runs the functions given to Do one after another, in the
// order given, off the caller's goroutine; Wait returns once every one
// given so far has returned. A state hands it the hashing of the tickets
// it retires (see SetSequencer); the driver provides one (sim/workers'
// Chain), for the core starts no goroutine of its own.
type Sequencer interface {
	Do(f func())
	Wait()
}

// SetSequencer makes the state chain the records of the tickets it
// retires (format 5) into their digest by batches of retireBatch, each
// run by q after the one before, while the state goes on: a ticket that
// retires no longer changes, and nothing reads the digest but a snapshot
// (Retired), which waits for them. The digest is the same as hashing them
// one by one as they retire. Without a sequencer (nil) each batch is
// hashed at once.
func (s *State) SetSequencer(q Sequencer) {
	s.settleChain()
	s.seq = q
}

// retireChain is the running chain of the retired tickets' records:
// digest after the batches handed over (written by them, read once they
// are done), and the tickets not handed over yet.
type retireChain struct {
	digest [32]byte
	batch  []*Task
	handed bool // batches were handed to the sequencer since the last settle
}

// retireBatch is how many retired tickets are hashed at once: a batch
// handed over costs about what a ticket's record and hash do. A snapshot
// hashes the tickets not yet handed over on the state's own goroutine
// (settleChain); at 1,024 that was 47 ms of a durable support-desk-bench
// run's engine time at its checkpoints, at 128 it is 10 ms.
const retireBatch = 128

// chainRecord chains retired ticket t after the others.
func (s *State) chainRecord(t *Task) {
	c := &s.chain
	c.batch = append(c.batch, t)
	if len(c.batch) < retireBatch {
		return
	}
	batch := c.batch
	c.batch = make([]*Task, 0, retireBatch)
	if s.seq == nil {
		c.digest = chainRecords(c.digest, batch)
		return
	}
	c.handed = true
	s.seq.Do(func() { c.digest = chainRecords(c.digest, batch) })
}

// settleChain waits for the batches handed over and chains the tickets
// not handed over, so that the retired digest is the chain's after every
// ticket retired.
func (s *State) settleChain() {
	c := &s.chain
	if c.handed {
		s.seq.Wait()
		c.handed = false
	}
	if len(c.batch) > 0 {
		c.digest = chainRecords(c.digest, c.batch)
		clear(c.batch)
		c.batch = c.batch[:0]
	}
	s.retired.digest = c.digest
}

// chainRecords chains the records of tickets after digest d.
func chainRecords(d [32]byte, tickets []*Task) [32]byte {
	var buf [1024]byte
	for _, t := range tickets {
		d = sha256.Sum256(t.appendRecord(append(buf[:0], d[:]...)))
	}
	return d
}
