package sim

import (
	"fmt"
	"strconv"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file opens cases (format 2): an arrival, a schedule or a member
// opens an instance of a case template, with attributes and facts drawn
// per case from the seed, and the steps that apply to it.

// drawAttrs draws a template's attributes (or facts) for case id; given
// ones (a member's open_case) are kept. A drawn amount is held within
// bounds, when given (a member's case: what it does not give must be
// within the bounds too, or the case would be refused when applied).
func (e *Engine) drawAttrs(list []worlds.Attr, id, kind string, given payload.Attrs, bounds map[string]worlds.Bound, vars map[string]any) payload.Attrs {
	out := payload.Attrs{}
	seed := e.draws
	for _, a := range list {
		if v, ok := given[a.Name]; ok {
			out[a.Name] = v
			continue
		}
		key := "case/" + id + "/" + kind + "/" + a.Name
		switch a.Kind {
		case worlds.AttrAmount:
			x := a.Amount.Sample(unit(seed, key+"/u"), expo(seed, key+"/e"))
			if b, ok := bounds[a.Name]; ok {
				x = min(max(x, b.Min), b.Max)
			}
			out[a.Name] = x
		case worlds.AttrRecord:
			out[a.Name] = e.drawRecord(a.Record, key)
		case worlds.AttrChoice:
			total := 0
			for _, c := range a.Choices {
				total += c.Weight
			}
			x := int(unit(seed, key) * float64(total))
			for _, c := range a.Choices {
				if x < c.Weight {
					out[a.Name] = c.Value
					break
				}
				x -= c.Weight
			}
		}
	}
	// Text attributes read the others.
	for k, v := range out { // order: each entry is copied on its own
		if x, ok := v.(int64); ok {
			vars[k] = int(x)
		} else {
			vars[k] = v
		}
	}
	for _, a := range list {
		if _, ok := given[a.Name]; ok || a.Kind != worlds.AttrText {
			continue
		}
		out[a.Name] = a.Text.Render(vars)
		vars[a.Name] = out[a.Name]
	}
	return out
}

// openCase builds the case.opened of a new case of template tpl.
// member tells whether a member opens it (its amounts are then within the
// template's open bounds).
func (e *Engine) openCase(tpl *worlds.CaseTemplate, id string, given payload.Attrs, member bool) payload.CaseOpened {
	vars := map[string]any{"case": id}
	var bounds map[string]worlds.Bound
	if member && tpl.Open != nil {
		bounds = tpl.Open.Bounds
	}
	attrs := e.drawAttrs(tpl.Attrs, id, "attr", given, bounds, vars)
	facts := e.drawAttrs(tpl.Facts, id, "fact", nil, nil, vars)
	attrVars := payload.Vars(id, attrs)
	p := payload.CaseOpened{Case: id, Template: tpl.ID, Title: tpl.Title.Render(attrVars), Value: tpl.Value,
		Attributes: attrs, Facts: facts}
	if len(facts) == 0 {
		p.Facts = nil
	}
	p.Queue = tpl.QueueBy.Pick(attrVars, tpl.Queue)
	team := tpl.Team
	if team == "" {
		team = e.ticketTeam(&worlds.Template{}, p.Queue)
	}
	p.Team = team
	switch {
	case tpl.PriorityExpr != nil:
		p.Priority = tpl.PriorityExpr.Int(attrVars)
	case len(tpl.Priority) > 0:
		p.Priority = pickWeighted(tpl.Priority, unit(e.draws, "case/"+id+"/priority"))
	}
	cal := e.teamSchedule(team)
	if tpl.Deadline > 0 {
		p.Deadline = cal.AddWork(e.now, tpl.Deadline)
	}
	if sla := tpl.SLAFor(p.Priority); sla > 0 {
		p.Due = cal.AddWork(e.now, sla)
	}
	applies := map[string]bool{}
	for i := range tpl.Steps {
		st := &tpl.Steps[i]
		if st.When != nil && !st.When.Bool(attrVars) {
			p.Skipped = append(p.Skipped, st.ID)
			continue
		}
		applies[st.ID] = true
	}
	for i := range tpl.Steps {
		st := &tpl.Steps[i]
		if !applies[st.ID] {
			continue
		}
		tid := org.StepTaskID(id, st.ID)
		def := worlds.Task{ID: tid, Title: st.Title, Role: st.RoleBy.Pick(attrVars, st.Role), Skill: st.Skill, Value: st.Value,
			Chain: st.Chain, Priority: p.Priority, Case: id, Step: st.ID, NPC: st.NPC}
		if st.NPC == "" {
			key := "case/" + tid + "/effort"
			def.Effort = clock.Duration(st.Effort.Sample(unit(e.draws, key+"/u"), expo(e.draws, key+"/e")))
		}
		for _, d := range st.Deps {
			if applies[d] {
				def.Deps = append(def.Deps, org.StepTaskID(id, d))
			}
		}
		if st.Charge != "" {
			def.Purchase, _ = attrs.Int(st.Charge)
		}
		if st.Chain != "" {
			if c, ok := e.cfg.World.Chain(st.Chain); ok && c.Attribute != "" {
				def.Amount, _ = attrs.Int(c.Attribute)
			} else {
				def.Amount = def.Purchase
			}
		}
		p.Steps = append(p.Steps, org.TaskSpecOf(&def))
	}
	e.expected(tpl, &p)
	e.expectMeetings(tpl, &p)
	return p
}

// pickWeighted draws a priority by weight with u in [0, 1).
func pickWeighted(ws []worlds.Weighted, u float64) int {
	total := 0
	for _, w := range ws {
		total += w.Weight
	}
	if total <= 0 {
		return 0
	}
	x := int(u * float64(total))
	for _, w := range ws {
		if x < w.Weight {
			return w.Priority
		}
		x -= w.Weight
	}
	return 0
}

// arrivalCase opens the next case of arrival a (its n-th, 0-based).
func (e *Engine) arrivalCase(a *worlds.Arrival, n int, cause uint64) {
	tpl, _ := e.cfg.World.CaseTemplate(a.Case)
	at := e.now
	for {
		id := a.ID + "-" + strconv.Itoa(n+1)
		next, more := e.arrivalAt(a, n+1, at)
		p := e.openCase(tpl, id, nil, false)
		p.Arrival = a.ID
		p.SetNext(next, more)
		e.emit(payload.EvCaseOpened, "", cause, p)
		n++
		if !more || next != e.now || !e.room(1) {
			break
		}
	}
}

// memberCase is the id of the k-th case (1-based) member opens of template.
func memberCase(template, member string, k int) string {
	return fmt.Sprintf("%s-%s-%d", template, member, k)
}

// npcStep is what an NPC asked to perform step t (by message msg) does:
// claim it, complete it and reply with its answer for the case.
func (e *Engine) npcStep(msg *org.Message, t *org.Task) []org.Action {
	c := e.st.CaseOf(t)
	tpl, _ := e.cfg.World.CaseTemplate(c.Template)
	step, _ := tpl.Step(t.Spec.Step)
	acts := []org.Action{}
	if t.Assignee == "" {
		acts = append(acts, org.Action{Type: org.ActClaim, Task: t.ID})
	}
	acts = append(acts, org.Action{Type: org.ActComplete, Task: t.ID},
		org.Action{Type: org.ActMessage, To: msg.From, ReplyTo: msg.ID, Text: clip(step.Answer.Render(c.Vars(true)), e.st.Limits.MessageBytes)})
	return acts
}

func clip(s string, n int) string {
	if n > 0 && len(s) > n {
		return s[:n]
	}
	if s == "" {
		return "Done."
	}
	return s
}
