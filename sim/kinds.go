package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file computes the outcome kinds of a new case (a decision, a reply
// to the requester, a created record), performs decide and a requester's
// reopen_case, and has an NPC tell the facts it holds about a case when a
// message asks it for one.

// recordEnv is the environment of a kind's expressions: vars and, when
// the kind reads a record attribute (from), that record's fields and the
// records its reference fields name.
func (e *Engine) recordEnv(vars map[string]any, p *payload.CaseOpened, from, typ string, srcs ...string) map[string]any {
	if from == "" {
		return worlds.RecordVars(vars, map[string]any{}, nil)
	}
	id, _ := p.Attributes[from].(string)
	env, ok := e.truthEnv(vars, typ, id, func(t *worlds.RecordType) []string { return worlds.RefFieldsOf(t, srcs...) })
	if !ok {
		return worlds.RecordVars(vars, map[string]any{}, nil)
	}
	return env
}

// truthEnv is the environment of a case's expressions about record
// typ/id: vars, the record's fields and those of the records its
// reference fields (refFields of its type) name, each as the seed and the
// cases' own steps left it (org.TruthOf); false if the record does not
// exist so.
func (e *Engine) truthEnv(vars map[string]any, typ, id string, refFields func(*worlds.RecordType) []string) (map[string]any, bool) {
	fields, ok := e.st.TruthOf(typ, id)
	if !ok {
		return nil, false
	}
	t, _ := e.cfg.World.RecordType(typ)
	refs := map[string]map[string]any{}
	for _, name := range refFields(t) {
		fd, _ := t.Field(name)
		ref, _ := fields[name].(string)
		if rf, ok := e.st.TruthOf(fd.To, ref); ok {
			refs[name] = rf
		}
	}
	return worlds.RecordVars(vars, fields, refs), true
}

// expectedKinds appends to a new case's expected outcomes those of its
// steps' decisions, replies and creates. An expression that fails expects
// what no member can give (an empty option or value).
func (e *Engine) expectedKinds(tpl *worlds.CaseTemplate, p *payload.CaseOpened, vars map[string]any) {
	applies := map[string]bool{}
	for _, s := range p.Steps {
		applies[s.Step] = true
	}
	text := func(x any, ok bool) string {
		if !ok || x == nil {
			return ""
		}
		return fmt.Sprint(x)
	}
	for i := range tpl.Steps {
		st := &tpl.Steps[i]
		if !applies[st.ID] {
			continue
		}
		switch {
		case st.Decision != nil:
			d := st.Decision
			env := e.recordEnv(vars, p, d.From, d.FromType, d.Correct.Source)
			p.Expected = append(p.Expected, payload.Expected{Step: st.ID, Kind: worlds.KindDecision,
				Fields: payload.Attrs{"option": text(d.Correct.Eval(env))}})
		case st.Reply != nil:
			r := st.Reply
			env := e.recordEnv(vars, p, r.From, r.FromType, r.Carries.Source)
			p.Expected = append(p.Expected, payload.Expected{Step: st.ID, Kind: worlds.KindReply,
				Fields: payload.Attrs{"carries": text(r.Carries.Eval(env))}})
		case st.Create != nil:
			c := st.Create
			env := e.recordEnv(vars, p, c.From, c.FromType, c.Sources()...)
			t, _ := e.cfg.World.RecordType(c.Type)
			x := payload.Expected{Step: st.ID, Kind: worlds.KindCreate, Record: c.Type, Fields: payload.Attrs{}}
			for _, f := range c.Set {
				out, ok := f.Expr.Eval(env)
				fd, _ := t.Field(f.Field)
				if v, err := fd.Normalize(out); ok && err == nil {
					x.Fields[f.Field] = v
				} else {
					x.Fields[f.Field] = fd.Zero()
				}
			}
			p.Expected = append(p.Expected, x)
		}
	}
}

// performKind emits the event of an accepted decide or reopen_case.
func (e *Engine) performKind(m *org.Member, c *org.Checked, cause uint64, cursor clock.Time) clock.Time {
	a := &c.Action
	switch a.Type {
	case org.ActDecide:
		cursor = e.schedule(m.ID).AddWork(cursor, e.cost(m, e.cfg.World.ActionCosts().Decide))
		e.emit(payload.EvCaseDecided, m.ID, cause, payload.CaseDecided{Task: a.Task, Option: a.Option, BusyUntil: cursor})
	case org.ActReopen:
		cs := e.st.Case(a.Case)
		e.emit(payload.EvCaseReopened, m.ID, cause, payload.CaseReopened{Case: cs.ID, Steps: cs.Unmet(), N: cs.Reopens + 1})
	}
	return cursor
}

// factReply is what NPC id replies to msg when it names a case whose
// facts it holds and one of those facts (by name, '_' read as a space or
// not): the fact's answer, with the topic that tells the asker the fact;
// or, when id is the case's requester, an acknowledgement. ok is false
// when msg is about none of those.
func (e *Engine) factReply(id string, msg *org.Message) (org.Action, bool) {
	if !slices.ContainsFunc(e.cfg.World.Cases, func(c worlds.CaseTemplate) bool { return len(c.HeldBy(id)) > 0 || c.Requester == id }) {
		return org.Action{}, false
	}
	text, words := strings.ToLower(msg.Text), org.WordsOf(msg.Text)
	for _, c := range e.st.CasesNamedBy(words) {
		tpl, _ := e.cfg.World.CaseTemplate(c.Template)
		held := tpl.HeldBy(id)
		if len(held) == 0 && tpl.Requester != id {
			continue
		}
		if len(held) == 0 {
			// A requester hearing about its case: it acknowledges (and
			// reopens the case later if an outcome is unmet).
			return org.Action{Type: org.ActMessage, To: msg.From, ReplyTo: msg.ID, Text: "Thank you, noted for " + c.ID + "."}, true
		}
		for _, f := range held {
			if strings.Contains(text, f.Name) || strings.Contains(text, strings.ReplaceAll(f.Name, "_", " ")) {
				return org.Action{Type: org.ActMessage, To: msg.From, ReplyTo: msg.ID, Topic: org.FactTopic(c.ID, f.Name),
					Text: clip(f.Answer.Render(c.Vars(true)), e.st.Limits.MessageBytes)}, true
			}
		}
	}
	return org.Action{}, false
}

// reopens appends the reopen_case of each case NPC id asked for that was
// closed with an outcome unmet, once its reply latency since the closing
// has passed (due reports that, and notes when the next one is).
func (e *Engine) reopens(id string, due func(since clock.Time, key string) bool) {
	if !slices.ContainsFunc(e.cfg.World.Cases, func(c worlds.CaseTemplate) bool { return c.Requester == id }) {
		return
	}
	for _, c := range e.st.Reopenable() {
		if tpl, _ := e.cfg.World.CaseTemplate(c.Template); tpl.Requester != id {
			continue
		}
		if due(c.DoneAt, fmt.Sprintf("npc/%s/reopen/%s/%d", id, c.ID, c.Reopens+1)) {
			e.acts = append(e.acts, org.Action{Type: org.ActReopen, Case: c.ID})
		}
	}
}
