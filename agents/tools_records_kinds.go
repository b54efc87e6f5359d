package agents

import "github.com/corpsim/corpsim/org"

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
