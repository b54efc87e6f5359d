package org

// Verdicts: the rubric's memory of the done tasks whose verification can no
// longer change (policies.Verify decides which those are and what it
// remembers). A verdict is kept beside the state, not in it: it is part of
// no snapshot and no hash, a restored or rebuilt state starts without any
// and fills them again by the same calls, and Apply forgets them all when
// an event changes a task that is already done (an interruption adding
// effort to it), the one change to a done task that verification reads.

// verdict is a remembered verification: why it does not count ("" when it
// does); set says there is one.
type verdict struct {
	why string
	set bool
}

// Verdict returns the verification remembered for done task t by
// RememberVerdict; ok is false when there is none.
func (s *State) Verdict(t *Task) (why string, ok bool) {
	if t.ord < len(s.verdicts) && s.verdicts[t.ord].set && s.Tasks[t.ord] == t {
		return s.verdicts[t.ord].why, true
	}
	return "", false
}

// RememberVerdict remembers why done task t does not count ("" when it
// does), for Verdict to return until an event changes a done task. The
// caller (the rubric) must only remember a result that no later event can
// change but that one.
func (s *State) RememberVerdict(t *Task, why string) {
	if t.Status != StatusDone || t.ord >= len(s.Tasks) || s.Tasks[t.ord] != t {
		return
	}
	if t.ord >= len(s.verdicts) {
		s.verdicts = append(s.verdicts, make([]verdict, len(s.Tasks)-len(s.verdicts))...)
	}
	s.verdicts[t.ord] = verdict{why: why, set: true}
}

// forgetVerdicts drops every remembered verdict.
func (s *State) forgetVerdicts() { s.verdicts = nil }
