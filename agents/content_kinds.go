package agents

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file is how the baselines do the outcome kinds beside record
// fields (a decision, a reply to the requester, a created record) and the
// facts only a colleague knows. The diligent and oracle baselines ask the
// NPC holding each fact a step's rule reads, naming the case, and wait for
// the answer before they write, decide or reply; greedy and planner never
// ask: a value they lack is left unset, a decision they cannot compute
// takes the first option.

// caseView returns the observation's view of case id.
func caseView(o org.Observation, id string) (org.CaseView, bool) {
	for _, cv := range o.Cases {
		if cv.ID == id {
			return cv, true
		}
	}
	return org.CaseView{}, false
}

// reads reports whether one of the rule's expressions names name.
func reads(out *org.OutcomeView, name string) bool {
	for _, src := range out.Set { // order: a disjunction
		if slices.Contains(strings.FieldsFunc(src, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.')
		}), name) {
			return true
		}
	}
	return false
}

// askFacts asks the holders of the facts t's rule reads that the member
// has not been told, unless a question is already on its way; wait is
// true while one of them is missing.
func (c *content) askFacts(o org.Observation, t org.TaskView) (acts []org.Action, wait bool) {
	cv, ok := caseView(o, t.Case)
	if !ok || t.Outcome == nil {
		return nil, false
	}
	for _, name := range slices.Sorted(maps.Keys(cv.Ask)) {
		if _, told := cv.Told[name]; told || !reads(t.Outcome, name) {
			continue
		}
		wait = true
		who := cv.Ask[name]
		pending := slices.ContainsFunc(o.Awaiting, func(m org.MessageView) bool {
			return m.From == who && org.NamesCase(m.Text, t.Case) && strings.Contains(m.Text, name)
		})
		if !pending {
			acts = append(acts, org.Action{Type: org.ActMessage, To: who,
				Text: fmt.Sprintf("Hi %s, what is the %s for case %s? (%s)", who, name, t.Case, name)})
		}
	}
	return acts, wait
}

// vars are the case's attributes and the facts the member was told.
func caseVars(o org.Observation, id string) map[string]any {
	cv, ok := caseView(o, id)
	if !ok {
		return map[string]any{"case": id}
	}
	return payload.Vars(id, cv.Attributes, cv.Told)
}

// kindEnv is the environment of a kind's rule: the case's vars and, when
// the rule reads a record (out.From, "<type>/<id>"), its fields and those
// of the records its reference fields name, from the source the mode
// reads; reads are what it must read first (ready false).
func (c *content) kindEnv(o org.Observation, t org.TaskView) (env map[string]any, reads []org.Action, ready bool) {
	vars := caseVars(o, t.Case)
	typ, id, ok := strings.Cut(t.Outcome.From, "/")
	if !ok {
		return worlds.RecordVars(vars, map[string]any{}, nil), nil, true
	}
	view := *t.Outcome
	view.Record, view.ID = typ, id
	rec, refs, reads := c.records(o, &view)
	if len(reads) > 0 {
		return nil, reads, false
	}
	if rec == nil {
		rec = map[string]any{}
	}
	return worlds.RecordVars(vars, rec, refs), nil, true
}

// kindStep is step for a decision, a reply or a create.
func (c *content) kindStep(o org.Observation, t org.TaskView) ([]org.Action, bool) {
	out := t.Outcome
	env, reads, ready := c.kindEnv(o, t)
	if !ready {
		return reads, false
	}
	eval := func(src string) (any, bool) {
		v, err := expr.Eval(src, env)
		if n, ok := v.(int); ok {
			v = int64(n)
		}
		return v, err == nil && v != nil
	}
	switch out.Kind {
	case worlds.KindDecision:
		option := out.Options[0]
		if v, ok := eval(out.Set["option"]); ok && slices.Contains(out.Options, fmt.Sprint(v)) {
			option = fmt.Sprint(v)
		}
		return []org.Action{{Type: org.ActDecide, Task: t.ID, Option: option}}, true
	case worlds.KindReply:
		text := fmt.Sprintf("Hello %s, case %s is handled.", out.To, t.Case)
		if v, ok := eval(out.Set["carries"]); ok {
			text = fmt.Sprintf("Hello %s, case %s is handled: %v.", out.To, t.Case, v)
		}
		return []org.Action{{Type: org.ActMessage, To: out.To, Text: text}}, true
	case worlds.KindCreate:
		set := payload.Attrs{}
		for _, f := range slices.Sorted(maps.Keys(out.Set)) {
			if v, ok := eval(out.Set[f]); ok {
				set[f] = v
			}
		}
		return []org.Action{{Type: org.ActCreate, Record: out.Record, ID: t.Case + "-" + out.Record, Fields: payload.NewActionAttrs(set)}}, true
	}
	return nil, true
}
