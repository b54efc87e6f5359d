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
// one whose steps make none.
func decideFor(w *worlds.World, defs []Tool) []Tool {
	var options []string
	for _, c := range w.Cases {
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
