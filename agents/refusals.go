package agents

import "github.com/corpsim/corpsim/org"

// MatchRefusals finds the refusal of each of acts, the actions of one
// reply in order, among rejected, the refusals the next observation lists
// for it (nil for an action taken). A refusal carries the action, not its
// place in the reply, so each goes to an action equal to it. One because
// the turn had already ended (org.ReasonTurnEnded) is a later action's: of
// two identical waits the engine takes the first and refuses the second.
// Any other goes to the first such action (work before its claim, then
// the same work after it: the first is refused). Identical actions
// refused for other reasons are told apart by this order alone.
func MatchRefusals(acts []org.Action, rejected []org.RejectedView) []*org.RejectedView {
	used := make([]bool, len(rejected))
	refusal := make([]*org.RejectedView, len(acts))
	for _, late := range []bool{true, false} {
		for k := range acts {
			i := k
			if late {
				i = len(acts) - 1 - k
			}
			if refusal[i] != nil {
				continue
			}
			for j := range rejected {
				if !used[j] && rejected[j].Action == acts[i] && (rejected[j].Reason == org.ReasonTurnEnded) == late {
					used[j], refusal[i] = true, &rejected[j]
					break
				}
			}
		}
	}
	return refusal
}
