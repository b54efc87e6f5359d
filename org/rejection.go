package org

import "fmt"

// Rejection kinds. They are recorded in action.rejected events: renaming
// one changes the log.
const (
	KindMalformed = "malformed" // the action cannot be understood
	KindUnknown   = "unknown"   // it names something that does not exist
	KindState     = "state"     // it does not fit the current state (already claimed, not yours, …)
	KindPolicy    = "policy"    // a company rule forbids it; counted as a violation
)

// ReasonTurnEnded is why the engine refuses an action of a reply after
// the work or wait that ended the turn (of kind state). It is recorded in
// the log: changing it changes the log.
const ReasonTurnEnded = "the turn already ended with a work or wait action"

// Rejection says why an action was refused: a stable Kind, the Rule's name
// for KindPolicy, and a Reason that is a sentence. The engine records all
// three in an action.rejected event, so their text is part of the log.
type Rejection struct {
	Kind   string
	Rule   string // the rule's name for KindPolicy
	Reason string
}

func (r *Rejection) Error() string {
	if r.Rule != "" {
		return fmt.Sprintf("%s (%s): %s", r.Kind, r.Rule, r.Reason)
	}
	return r.Kind + ": " + r.Reason
}

// Reject makes a Rejection of a kind other than policy.
func Reject(kind, format string, args ...any) *Rejection {
	return &Rejection{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// Violation makes a Rejection of kind policy by the named rule.
func Violation(rule, format string, args ...any) *Rejection {
	return &Rejection{Kind: KindPolicy, Rule: rule, Reason: fmt.Sprintf(format, args...)}
}
