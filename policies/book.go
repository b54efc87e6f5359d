package policies

import (
	"slices"

	"github.com/corpsim/corpsim/org"
)

// Scoped is a Rule that can refuse only actions of the types Acts lists.
// A Book asks it about no other action; a rule that is not Scoped is asked
// about every action.
type Scoped interface {
	Acts() []string
}

// Book is a Set filed by action type, for an engine that checks many
// actions: Check asks only the rules that may refuse an action of the type
// at hand, in the Set's order, so that it refuses exactly as the Set does.
// A simulated colleague's ticket is checked for its claim, its work and its
// completion; the Set asked all thirteen default rules each time, the Book
// asks five, four and eight.
type Book struct {
	by   []filed   // the types some Scoped rule lists, with their rules
	rest []checker // the rules asked about any other type (those not Scoped)
}

type filed struct {
	act   string
	rules []checker
}

// checker is a rule as a Book asks it. A default rule's check skips the
// test of the action's type that its Check makes: the Book filed it by
// that type already.
type checker interface {
	check(s *org.State, member string, a *org.Action) *org.Rejection
}

// scoped is a default rule: Scoped, with a check of the actions of the
// types it lists.
type scoped interface {
	Scoped
	checker
}

// checkScoped is a default rule's Check: r's check of an action of a type
// it lists, nil for any other.
func checkScoped(r scoped, s *org.State, member string, a *org.Action) *org.Rejection {
	if !concerns(r, a) {
		return nil
	}
	return r.check(s, member, a)
}

// asked is a rule from outside this package, which a Book asks by Check.
type asked struct{ Rule }

func (r asked) check(s *org.State, member string, a *org.Action) *org.Rejection {
	return r.Check(s, member, a)
}

// checkerOf returns how a Book asks rule r.
func checkerOf(r Rule) checker {
	if sc, ok := r.(scoped); ok {
		return sc
	}
	return asked{r}
}

// Compile files set's rules by the action types they concern.
func (set Set) Compile() *Book {
	b := &Book{}
	var acts []string
	for _, r := range set {
		if sc, ok := r.(Scoped); ok {
			for _, a := range sc.Acts() {
				if !slices.Contains(acts, a) {
					acts = append(acts, a)
				}
			}
		} else {
			b.rest = append(b.rest, checkerOf(r))
		}
	}
	for _, a := range acts {
		f := filed{act: a}
		for _, r := range set {
			if sc, ok := r.(Scoped); !ok || slices.Contains(sc.Acts(), a) {
				f.rules = append(f.rules, checkerOf(r))
			}
		}
		b.by = append(b.by, f)
	}
	return b
}

// Check runs the rules that concern a's type in order; the first that
// refuses wins.
func (b *Book) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	rules := b.rest
	for i := range b.by {
		if b.by[i].act == a.Type {
			rules = b.by[i].rules
			break
		}
	}
	for _, r := range rules {
		if rej := r.check(s, member, a); rej != nil {
			return rej
		}
	}
	return nil
}

// The action types each default rule concerns: its Check allows every
// other action. TestBookRefusesAsTheSet holds each list to its Check.

var (
	taskActs     = []string{org.ActClaim, org.ActWork, org.ActComplete}
	progressActs = []string{org.ActWork, org.ActComplete}
	decideActs   = []string{org.ActApprove, org.ActReject}
	claimActs    = []string{org.ActClaim}
	completeActs = []string{org.ActComplete}
	caseActs     = []string{org.ActClaim, org.ActWork, org.ActComplete, org.ActApprove, org.ActReject, org.ActHandoff}
)

// Acts implements Scoped.
func (RoleRequired) Acts() []string { return taskActs }

// Acts implements Scoped.
func (SkillRequired) Acts() []string { return taskActs }

// Acts implements Scoped.
func (QueueOrder) Acts() []string { return claimActs }

// Acts implements Scoped.
func (WIPLimit) Acts() []string { return claimActs }

// Acts implements Scoped.
func (DependenciesFirst) Acts() []string { return progressActs }

// Acts implements Scoped.
func (WorkDone) Acts() []string { return completeActs }

// Acts implements Scoped.
func (InfoRequired) Acts() []string { return completeActs }

// Acts implements Scoped.
func (ApprovalRequired) Acts() []string { return completeActs }

// Acts implements Scoped.
func (WithinBudget) Acts() []string { return completeActs }

// Acts implements Scoped.
func (SeparationOfDuties) Acts() []string { return decideActs }

// Acts implements Scoped.
func (CaseSeparation) Acts() []string { return caseActs }

// Acts implements Scoped.
func (DelegationLimit) Acts() []string { return decideActs }

// Acts implements Scoped.
func (ApproverAuthority) Acts() []string { return decideActs }

// concerns reports whether a is of a type rule r lists: a rule's Check
// allows every other action, by this, so that a Book leaving it out of
// the other types refuses as the Set does.
func concerns(r Scoped, a *org.Action) bool { return slices.Contains(r.Acts(), a.Type) }
