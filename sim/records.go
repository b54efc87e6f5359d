package sim

import (
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file performs the record tools (format 2 systems) and draws the
// records and expected outcomes of new cases.

// performRecord emits the event of an accepted record tool starting at
// cursor and returns when the member is next free. A read costs what a
// claim does; a write what a completion does.
func (e *Engine) performRecord(m *org.Member, c *org.Checked, cause uint64, cursor clock.Time) clock.Time {
	cal := e.schedule(m.ID)
	costs := e.cfg.World.ActionCosts()
	a := &c.Action
	switch a.Type {
	case org.ActGet, org.ActSearch:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Claim))
		p := payload.RecordRead{Op: a.Type, Record: a.Record, ID: a.ID, Page: a.Page, BusyUntil: cursor}
		if a.Type == org.ActSearch && len(c.Fields) > 0 {
			p.Filter = c.Fields
		}
		if a.Type == org.ActSearch {
			p.ID = ""
		}
		e.emit(payload.EvRecordRead, m.ID, cause, p)
	default:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Complete))
		p := e.st.RecordWrite(m, *a, c.Fields)
		p.BusyUntil = cursor
		e.emit(payload.EvRecordWritten, m.ID, cause, p)
	}
	return cursor
}

// drawRecord draws the record a case's record attribute names: one of the
// type's records no earlier case has named, else any.
func (e *Engine) drawRecord(typ, key string) string {
	var ids []string
	for _, r := range e.st.Records {
		if _, ok := r.TrueFields(); ok && r.Type == typ {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	start := int(unit(e.draws, key) * float64(len(ids)))
	for i := range ids {
		if id := ids[(start+i)%len(ids)]; !e.st.RecordNamed(typ, id) {
			return id
		}
	}
	return ids[start]
}

// expected computes the outcomes of a new case's steps from its
// attributes, facts and the records as the seed and the cases' own steps
// left them (org.TruthOf: from log format 7 on, what collateral writes
// changed is not what a case expects).
func (e *Engine) expected(tpl *worlds.CaseTemplate, p *payload.CaseOpened) {
	vars := payload.Vars(p.Case, p.Attributes, p.Facts)
	applies := map[string]bool{}
	for _, s := range p.Steps {
		applies[s.Step] = true
	}
	for i := range tpl.Steps {
		st := &tpl.Steps[i]
		if st.Outcome == nil || !applies[st.ID] {
			continue
		}
		id, _ := p.Attributes[st.Outcome.Attr].(string)
		env, ok := e.truthEnv(vars, st.Outcome.Type, id, st.Outcome.RefFields)
		if !ok {
			continue
		}
		t, _ := e.cfg.World.RecordType(st.Outcome.Type)
		truth, _ := e.st.TruthOf(st.Outcome.Type, id)
		x := payload.Expected{Step: st.ID, Record: st.Outcome.Type, ID: id, Fields: payload.Attrs{}}
		for _, f := range st.Outcome.Set {
			out, ok := f.Expr.Eval(env)
			fd, _ := t.Field(f.Field)
			if v, err := fd.Normalize(out); ok && err == nil {
				x.Fields[f.Field] = v
			} else {
				// An expression that fails expects the field untouched:
				// the value it holds, not its type's zero (a failed rule
				// on a refunded invoice expected it paid again).
				x.Fields[f.Field] = fd.Zero()
				if held, ok := truth[f.Field]; ok {
					x.Fields[f.Field] = held
				}
			}
		}
		p.Expected = append(p.Expected, x)
	}
	e.expectedKinds(tpl, p, vars)
}
