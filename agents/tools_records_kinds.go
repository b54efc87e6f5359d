package agents

import (
	"slices"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// The decide tool (format 2 outcome kinds): choose an option on a case
// step you hold. It follows the record tools in org.ActionTypes order.
func init() { toolSpecs = append(toolSpecs, decideToolSpec) }

var decideToolSpec = toolSpec{
	name: org.ActDecide,
	desc: "Choose an option on a case step you hold whose outcome is a decision (its \"outcome\" has kind \"decision\" and lists the options). " +
		"Costs what approving does. The last choice before you complete the step counts; it is checked against the option the policy gives.",
	params: []toolParam{paramTask(`The step's task, e.g. "requests-3.review".`),
		{name: "option", typ: "string", required: true, desc: "One of the step's options.",
			set: func(a *org.Action, v any) { a.Option = v.(string) }}},
}

// decideFor keeps the decide tool for a world whose case steps make
// decisions, with their options as the option's enum, and drops it for
// one whose steps make none. In a world with facts held by colleagues or
// requesters, the message tool says how to ask for a fact and reply.
func decideFor(w *worlds.World, defs []Tool) []Tool {
	var options []string
	facts, replies := false, false
	for _, c := range w.Cases {
		replies = replies || c.Requester != ""
		for _, f := range c.Facts {
			facts = facts || f.HeldBy != ""
		}
		for _, s := range c.Steps {
			if s.Decision == nil {
				continue
			}
			for _, o := range s.Decision.Options {
				if !slices.Contains(options, o) {
					options = append(options, o)
				}
			}
		}
	}
	for i := range defs {
		fn := &defs[i].Function
		if fn.Name != org.ActMessage {
			continue
		}
		if facts {
			fn.Description += " A value of a case that no system holds is known to the colleague its case's \"ask\" names: message them " +
				"naming the case id and the fact; their answer shows the value under the case's \"told\"."
		}
		if replies {
			fn.Description += " A step whose outcome is a reply (kind \"reply\") is a message to the case's requester (the outcome's \"to\") " +
				"that names the case id and contains the value the rule gives, as a word of its own."
		}
	}
	if len(options) == 0 {
		return slices.DeleteFunc(defs, func(t Tool) bool { return t.Function.Name == org.ActDecide })
	}
	for i := range defs {
		if fn := &defs[i].Function; fn.Name == org.ActDecide {
			p := fn.Parameters.Properties["option"]
			p.Enum = options
			fn.Parameters.Properties["option"] = p
		}
	}
	return defs
}
