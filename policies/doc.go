// Package policies holds the company's rules and the rubric that scores a team.
//
// Rules are blocking checks: the engine asks Check before it lets an action
// change anything, and a failed check becomes an action.rejected event with
// the rule's name and a sentence saying why. The rubric (Score) reads the
// final state and verifies every outcome itself — a task counts only if it was
// completed after its dependencies, by a member allowed to do it, with its
// effort spent and every approval granted — instead of trusting anyone's claim.
//
//	if rej := policies.Default().Check(st, "bob", &org.Action{Type: "work", Task: "api"}); rej != nil {
//		fmt.Println(rej.Rule, rej.Reason) // dependencies-first: task "api" waits on spec
//	}
//	card := policies.Score(st)
//
// An engine that checks many actions compiles its Set once into a Book
// (Set.Compile): each default rule lists the action types it concerns
// (Scoped), and the Book asks only those rules, in the Set's order, so
// that it refuses exactly as the Set does.
//
// The package is part of the deterministic core: no I/O, no clock, no randomness.
package policies
