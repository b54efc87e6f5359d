package org

// Verdicts: the rubric's memory of the done tasks whose verification can no
// longer change (policies.Verify decides which those are and what it
// remembers). A verdict is kept on its task, apart from what events
// change: it is part of no snapshot and no hash, a restored or rebuilt
// state starts without any and fills them again by the same calls, and Apply forgets them all when
// an event changes a task that is already done (an interruption adding
// effort to it), the one change to a done task that verification reads.

// verdict is a remembered verification: why it does not count ("" when it
// does); it is set when epoch is the state's verdictEpoch + 1.
type verdict struct {
	why   string
	epoch uint64
}

// Verdict returns the verification remembered for done task t by
// RememberVerdict; ok is false when there is none.
func (s *State) Verdict(t *Task) (why string, ok bool) {
	if t.verdict.epoch == s.verdictEpoch+1 {
		return t.verdict.why, true
	}
	return "", false
}

// RememberVerdict remembers why done task t does not count ("" when it
// does), for Verdict to return until an event changes a done task. The
// caller (the rubric) must only remember a result that no later event can
// change but that one.
func (s *State) RememberVerdict(t *Task, why string) {
	if t.Status != StatusDone || s.Task(t.ID) != t {
		return
	}
	t.verdict = verdict{why: why, epoch: s.verdictEpoch + 1}
}

// forgetVerdicts drops every remembered verdict.
func (s *State) forgetVerdicts() { s.verdictEpoch++ }

// nextOrd is the ord of a task being created.
func (s *State) nextOrd() int {
	s.created++
	return s.created - 1
}
