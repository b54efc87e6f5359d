package policies

import (
	"fmt"
	"slices"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file scores the outcome kinds beside record fields (format 2): a
// decision counts when the option chosen was the correct one at
// completion; a reply when a message from the step's doer to the case's
// requester, naming the case, contained the expected value
// (case-insensitively, as words of their own) by completion; a created record per field, as
// record fields do (at completion and at the end). A step a requester
// reopened earns nothing: the task that redoes it is what counts.

// reopenedStep is why step task t no longer counts: its case was reopened
// and t replaced by a new task; "" when t is still one of its case's steps.
func reopenedStep(c *org.Case, t *org.Task) string {
	if slices.Contains(c.Steps, t.ID) {
		return ""
	}
	return fmt.Sprintf("wrong outcome: the requester reopened case %s and the step was redone as a new task", c.ID)
}

// outcomeName names an outcome in a wrong outcome's reason.
func outcomeName(o *org.CaseOutcome) string {
	switch o.Kind {
	case worlds.KindDecision:
		return "the decision on step " + o.Step + ":"
	case worlds.KindReply:
		return "the reply of step " + o.Step + ":"
	case worlds.KindCreate:
		if o.Created == "" {
			return "the " + o.Record + " step " + o.Step + " creates (none created):"
		}
		return o.Record + " " + o.Created + " (created by step " + o.Step + ")"
	}
	return o.Record + " " + o.ID
}
