package report

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// Rejection classes: what kind of problem a refused action shows.
const (
	// ClassContention is a race for the same item: the task was already
	// held or done by another member, the request already decided by
	// another, by the time the action was applied. Benign under
	// concurrency; it counts the team's duplicated effort.
	ClassContention = "contention"
	// ClassPolicy is an attempted violation of a company rule (counted in
	// the scorecard's policy violations and penalised).
	ClassPolicy = "policy"
	// ClassOther is any other refusal: the member's own mistake against
	// the state (not claimed, on leave, a queue down…), a malformed action
	// or one naming nothing known.
	ClassOther = "other"
)

// RejectionGroup is a set of refused actions with one class and rule: a
// policy's rule name, or for the others the reason with its names and
// numbers taken out ("task ‹task› is held by ‹member›, not ‹member›").
type RejectionGroup struct {
	Class   string
	Kind    string // the refusals' kind (state, policy, malformed, unknown)
	Rule    string
	Action  string // the action type refused, for contention
	Count   int
	Items   int      // distinct tasks or requests named
	Members []string // who tried, in order of first try
	First   int64
	// FirstWall is First on the world's wall clock.
	FirstWall string
	Example   string // the first refusal's reason, as recorded
}

// Rejections is the refused actions of a session grouped by class and rule.
type Rejections struct {
	Contention, Policy, Other []RejectionGroup
	// Counts per class, whatever the rows shown.
	ContentionN, PolicyN, OtherN int
	Note                         string // what was left out
}

type rejectionKey struct{ class, kind, rule, action string }

type rejectionAcc struct {
	g     RejectionGroup
	items map[string]bool
}

var (
	quotedRE = regexp.MustCompile(`"[^"]*"`)
	wordRE   = regexp.MustCompile(`[A-Za-z0-9_.:-]+`)
	digitRE  = regexp.MustCompile(`[0-9]`)
)

// ruleOfReason takes the names and numbers out of a refusal's reason, so
// that refusals for the same rule on different items group together:
// quoted names and the words that are a member, task, request, queue or
// role of st become ‹member›, ‹task›…; other words with digits become ‹n›.
func ruleOfReason(st *org.State, reason string) string {
	name := func(w string) string {
		switch {
		case st.Member(w) != nil:
			return "‹member›"
		case st.Task(w) != nil:
			return "‹task›"
		case st.Request(w) != nil:
			return "‹request›"
		case st.Queue(w) != nil:
			return "‹queue›"
		}
		if _, ok := st.World.Role(w); ok {
			return "‹role›"
		}
		return ""
	}
	var b strings.Builder
	last := 0
	for _, loc := range quotedRE.FindAllStringIndex(reason, -1) {
		b.WriteString(words(reason[last:loc[0]], name))
		if n := name(reason[loc[0]+1 : loc[1]-1]); n != "" {
			b.WriteString(n)
		} else {
			b.WriteString("‹name›")
		}
		last = loc[1]
	}
	b.WriteString(words(reason[last:], name))
	return b.String()
}

func words(s string, name func(string) string) string {
	return wordRE.ReplaceAllStringFunc(s, func(w string) string {
		if n := name(w); n != "" {
			return n
		}
		if digitRE.MatchString(w) {
			return "‹n›"
		}
		return w
	})
}

// contended reports whether a refused action lost a race: the task it
// names is held or was done by another member, or the request it names was
// decided by another, in the state the refusal was applied to.
func contended(st *org.State, actor string, p *payload.ActionRejected) (item string, ok bool) {
	if p.Kind != org.KindState {
		return "", false
	}
	if id := p.Action.Task; id != "" {
		t := st.Task(id)
		if t == nil {
			return "", false
		}
		if t.Status == org.StatusDone {
			return "task " + id, t.DoneBy != "" && t.DoneBy != actor
		}
		return "task " + id, t.Assignee != "" && t.Assignee != actor
	}
	if id := p.Action.Request; id != "" {
		r := st.Request(id)
		if r == nil || r.Status == org.RequestPending {
			return "", false
		}
		for i := len(r.Steps) - 1; i >= 0; i-- {
			if s := r.Steps[i]; s.Status != org.RequestPending && s.Status != "" {
				return "request " + id, s.Approver != actor
			}
		}
	}
	return "", false
}

// addRejection files a refused action of actor at t.
func (b *Builder) addRejection(actor string, t int64, p *payload.ActionRejected) {
	k := rejectionKey{class: ClassOther, kind: p.Kind}
	item, race := contended(b.st, actor, p)
	switch {
	case race:
		k.class, k.action = ClassContention, p.Action.Type
		k.rule = ruleOfReason(b.st, p.Reason)
	case p.Kind == org.KindPolicy:
		k.class, k.rule = ClassPolicy, p.Rule
	default:
		k.rule = ruleOfReason(b.st, p.Reason)
		if item == "" {
			if p.Action.Task != "" {
				item = "task " + p.Action.Task
			} else if p.Action.Request != "" {
				item = "request " + p.Action.Request
			}
		}
	}
	if k.class == ClassPolicy && item == "" {
		if p.Action.Task != "" {
			item = "task " + p.Action.Task
		} else if p.Action.Request != "" {
			item = "request " + p.Action.Request
		}
	}
	a := b.rejections[k]
	if a == nil {
		a = &rejectionAcc{g: RejectionGroup{Class: k.class, Kind: k.kind, Rule: k.rule, Action: k.action, First: t, Example: p.Reason}, items: map[string]bool{}}
		b.rejections[k] = a
	}
	a.g.Count++
	if item != "" {
		a.items[item] = true
	}
	if !slices.Contains(a.g.Members, actor) && len(a.g.Members) < 50 {
		a.g.Members = append(a.g.Members, actor)
	}
}

// rejectionGroups sorts the groups of each class, most frequent first, and
// keeps at most MaxViolationRows rows of each.
func (b *Builder) rejectionGroups() Rejections {
	var r Rejections
	by := map[string][]RejectionGroup{}
	for _, a := range b.rejections { // order: each class is sorted below
		g := a.g
		g.Items = len(a.items)
		g.FirstWall = b.w.Calendar.Wall(clock.Time(g.First)).Format("Mon Jan 02 15:04")
		by[g.Class] = append(by[g.Class], g)
	}
	var notes []string
	for _, class := range []string{ClassContention, ClassPolicy, ClassOther} {
		gs := by[class]
		slices.SortFunc(gs, func(a, c RejectionGroup) int {
			return cmp.Or(cmp.Compare(c.Count, a.Count), cmp.Compare(a.Kind, c.Kind), cmp.Compare(a.Action, c.Action), cmp.Compare(a.Rule, c.Rule))
		})
		n := 0
		for _, g := range gs {
			n += g.Count
		}
		if len(gs) > b.o.MaxViolationRows {
			left := 0
			for _, g := range gs[b.o.MaxViolationRows:] {
				left += g.Count
			}
			notes = append(notes, fmt.Sprintf("%d more %s groups (%d refused actions) omitted", len(gs)-b.o.MaxViolationRows, class, left))
			gs = gs[:b.o.MaxViolationRows]
		}
		switch class {
		case ClassContention:
			r.Contention, r.ContentionN = gs, n
		case ClassPolicy:
			r.Policy, r.PolicyN = gs, n
		default:
			r.Other, r.OtherN = gs, n
		}
	}
	r.Note = strings.Join(notes, "; ")
	return r
}
