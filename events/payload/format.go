package payload

import (
	"errors"
	"fmt"
)

// LogFormat is the format of the logs this package writes and reads,
// recorded in every session.started (SessionStarted.Format). It changes
// when a payload's stored form does, so that a log is never read as what
// it is not.
//
//   - 1: task.created stored the world's task struct untagged, keyed by
//     its Go field names ("ID", "Title", "Effort", …); session.started did
//     not record a format.
//   - 2: every payload is a type of this package with snake_case keys
//     (task.created's task is a TaskSpec: "id", "title", "effort", …).
//   - 3: a simulated colleague serving queues records a ticket's life in
//     two events instead of five or six: ticket.served (its turn,
//     task.claimed and work.started) and ticket.resolved (work.finished,
//     its turn and task.completed), and waits without a turn
//     (member.waiting with "seen"). Every format-2 event type means what
//     it meant, so a format-2 log replays as it did, and a format-2
//     session resumed or forked goes on writing format 2.
//   - 4: the events are format 3's; the state they make retires a plain
//     ticket at the event after its completion (org's retire.go): its
//     snapshot is chained into a digest that the state's snapshot and hash
//     carry, with the rubric's totals of the retired tickets. The events
//     mean what they meant; the state hashes they are checked against do
//     not, so a format-3 session goes on in format 3.
//   - 5: a simulated colleague's ticket.resolved carries the step it takes
//     next at the same instant, when nothing happens between: the ticket
//     it serves next or its wait (TicketResolved.Then), which format 4
//     records as the next event, a ticket.served or member.waiting seen
//     at the resolve. Two of a served ticket's three or four events become
//     one (3.44 events a ticket at support-desk-bench become 2.44). The
//     colleagues do the same work at the same instants; the seqs, and so
//     the state hashes, differ, so a format-4 session goes on in format 4.
//   - 6: the events are format 5's; a reply outcome is judged on all that
//     the step's doer told the requester about the case since the step's
//     task was created (a redone step: since the reopening), and carries a
//     number only when they state it and no other amount, another value
//     only when they state no other value the reply's rule can give (org's
//     ReplyFormat): a reply listing every amount the answer might be, or
//     hedging over two messages, no longer carries the right one. The
//     outcome is part of the state, so a format-5 session goes on in
//     format 5, judged as it was.
//   - 7: the events are format 6's; a case's expected outcomes
//     (case.opened's expected) are computed from the records as the seed
//     and the cases' own steps left them, not from what collateral writes
//     (record.written with collateral) made of them since (org's
//     TruthFormat): a member who wrote every invoice's amount to 0 ahead
//     of its cases no longer made "refund 0" their right outcome. The
//     state keeps each record's truth once a collateral write changes it,
//     so a format-6 session goes on in format 6, judged as it was. And a
//     case step that stood when its requester reopened the case depends
//     on the task that redoes a reopened dependency, not on the replaced
//     one, which never counts again (org's RedoDepsFormat).
//   - 8: the events are format 7's; session.started carries a draw key
//     (draw_key, from an operator's secret: NewDrawKey), and every random
//     draw of the session, its hidden rules and facts included, is made
//     with AES-256 under that key (worlds.Draws) instead of from the
//     seed alone, so that knowing a session's seed, or some of its draws,
//     no longer gives its hidden truth away. A
//     session without a key is written in format 7, byte for byte: only a
//     keyed session needs this build (or a newer one) to be read, and an
//     older build refuses it by name rather than replaying it with the
//     seed's draws.
//   - 9: the events are format 8's (a draw key optional); a requirement
//     change (task.changed, an interruption) that lands on a task already
//     done does not apply to it: the work was delivered before the
//     change, and stands (org's ChangeFormat). In format 8 and before the
//     task took the new effort and lost its verification, and its
//     dependents theirs, with no reward event to say so: the rewards
//     summed to more than the team score, and nothing could redo the
//     task. The state differs, so a format-8 (or 7) session goes on in
//     its format. Every new session is written in format 9, keyed or not.
const LogFormat = 9

// DrawKeyFormat is the first format whose session.started may carry a
// draw key (SessionStarted.DrawKey); a new session without one is written
// in the format before it.
const DrawKeyFormat = 8

// OldestLogFormat is the oldest format this package still reads.
const OldestLogFormat = 2

// ErrLogFormat is wrapped by CheckFormat's errors.
var ErrLogFormat = errors.New("payload: log format not supported")

// CheckFormat reports whether this build reads a log that p opens. A log
// of another format is refused with a sentence naming its format and what
// to do, never misread, and never continued (resumed or forked) in another
// form than its older events.
func (p *SessionStarted) CheckFormat() error {
	f := p.Format
	if len(p.DrawKey) > 0 && (f < DrawKeyFormat || len(p.DrawKey) != DrawKeyBytes) {
		return fmt.Errorf("%w: the log is format %d with a draw key of %d bytes; only format %d and later carry one, of %d bytes", ErrLogFormat, f, len(p.DrawKey), DrawKeyFormat, DrawKeyBytes)
	}
	if f >= OldestLogFormat && f <= LogFormat {
		return nil
	}
	if f == 0 {
		f = 1 // format 1 did not record its number
	}
	again := fmt.Sprintf("corpsim run --world %s --seed %d", p.World, p.Seed)
	if f > LogFormat {
		return fmt.Errorf("%w: the log is format %d, newer than this build's format %d: read it with the corpsim that wrote it, or a newer one", ErrLogFormat, f, LogFormat)
	}
	return fmt.Errorf("%w: the log is format %d (task.created keyed by Go field names: \"ID\", \"Title\", …); this build reads formats %d to %d. "+
		"Replay, score or fork it with the corpsim that recorded it, or record it again with this one: %s (with the same agents); corpsim log still prints its events", ErrLogFormat, f, OldestLogFormat, LogFormat, again)
}
