package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// toolParam is one argument of a tool.
type toolParam struct {
	name     string
	typ      string // JSON Schema type: "string", "integer", "object" or "array" (of strings)
	desc     string
	required bool
	set      func(a *org.Action, v any)
}

// toolSpec is one action type as a tool.
type toolSpec struct {
	name   string
	desc   string
	params []toolParam
}

var (
	paramTask = func(what string) toolParam {
		return toolParam{name: "task", typ: "string", required: true, desc: what,
			set: func(a *org.Action, v any) { a.Task = v.(string) }}
	}
	paramRequest = toolParam{name: "request", typ: "string", required: true,
		desc: `ID of a request listed in your observation's "approvals" (requests waiting for your decision), e.g. "r3".`,
		set:  func(a *org.Action, v any) { a.Request = v.(string) }}
)

// toolSpecs describes every action type, in org.ActionTypes order. The costs
// and rules are those of sim (check, perform, the action costs) and
// policies.Default; keep them in step.
var toolSpecs = []toolSpec{
	{
		name: org.ActClaim,
		desc: "Take an open task or ticket so that you hold it. Costs 5 minutes of working time. " +
			"Take one from your observation's \"available\" list (its dependencies are done); you may also claim one from \"upcoming\" (unless its queue has a WIP limit), " +
			"but you cannot work on it until its dependencies are done. A task you hold stays yours until you complete it or hand it off, " +
			"and nobody else can take it. Refused when someone already holds it or the queue is down, and as a policy violation " +
			"(each costs the team a penalty) when you lack the task's role (role-required) or skill (skill-required), when a ticket would jump " +
			"its queue's order (queue-order: fifo takes the oldest first, priority the highest priority then the oldest), " +
			"or when the queue is at its WIP limit or has one and the task's dependencies are not done (wip-limit).",
		params: []toolParam{paramTask(`ID of the task or ticket to take, e.g. "api".`)},
	},
	{
		name: org.ActWork,
		desc: "Work on a task you hold, spending its effort. The work lasts \"for\" (default 2h) or until the task's remaining effort " +
			"is spent, whichever is shorter, in working time on the company calendar. It ends your turn: actions after it in the same turn are refused, " +
			"and you are asked to decide again when the work finishes. Work by a role with an hourly rate is charged to your team's budget. " +
			"Refused when you do not hold the task, it is already being worked on, it has no effort left (complete it instead) or its queue is down, " +
			"and as a policy violation when its dependencies are not all done (dependencies-first) or you lack its role or skill.",
		params: []toolParam{
			paramTask(`ID of a task you hold (listed in "assigned").`),
			{name: "for", typ: "string", desc: `How long to work, in working time: a positive duration such as "30m", "2h" or "1d" ` +
				`(units: w, d, h, m, s, ms; "1d" is one working day). Default: 2h.`,
				set: func(a *org.Action, v any) { a.For = v.(string) }},
		},
	},
	{
		name: org.ActComplete,
		desc: "Mark a task you hold as done. Costs 15 minutes. It counts only when all of its rules hold, and each is refused as a policy " +
			"violation (a penalty for the team) otherwise: its whole effort is spent (work-done), its dependencies are done (dependencies-first), " +
			"you hold its role and skill, you have the information it needs from a colleague (info-required: see needs_info), " +
			"its purchase has an approved request (approval-required) and fits the remaining budget it is paid from (within-budget): your team's, " +
			"or the one its charges name. A completed purchase is charged to that budget. Completing unblocks the tasks that depend on this one.",
		params: []toolParam{paramTask(`ID of a task you hold whose effort is spent ("spent" equals "effort").`)},
	},
	{
		name: org.ActHandoff,
		desc: "Give a task you hold, and are not working on right now, back to its queue (no \"to\") or to a colleague (\"to\"). " +
			"The effort already spent stays with the task. Costs 5 minutes of working time. Refused when you do not hold it, when it is " +
			"being worked on, or when the colleague cannot take it (role, skill, on leave).",
		params: []toolParam{paramTask(`ID of the task you hold.`),
			{name: "to", typ: "string", desc: "Member ID of the colleague who takes it; leave it out to put the task back in its queue.",
				set: func(a *org.Action, v any) { a.To = v.(string) }}},
	},
	{
		name: org.ActRequestApproval,
		desc: "Ask for the purchase approval a task you hold needs (its \"approval\" is \"needed\", or \"rejected\" to ask again). Costs 10 minutes. " +
			"The request goes through the approval chain's steps in order, each decided by a colleague holding the step's role " +
			"(never you); you are asked to decide again when it is decided. Ask as soon as you hold the task: approval takes time, " +
			"and you can work while you wait. Refused when the task needs no approval, already has a pending or approved request, " +
			"or nobody else can approve it.",
		params: []toolParam{paramTask(`ID of a task you hold whose "approval" is "needed" or "rejected".`)},
	},
	{
		name: org.ActApprove,
		desc: "Approve a request waiting for your decision (listed in \"approvals\"). Costs 10 minutes. Approve only a valid request: " +
			"the requester holds the task (task_assignee equals requester), the amount equals the task's purchase (task_purchase), " +
			"and the remaining budget it is paid from covers it (your team's, or the one its task_charges name); otherwise reject it with a reason. " +
			"Refused as a policy violation when it is your own request (separation-of-duties), when you stand in for a colleague on leave and it is beyond the leave's delegation limit (delegation-limit), or when it waits for someone else (approver-authority).",
		params: []toolParam{paramRequest},
	},
	{
		name: org.ActReject,
		desc: "Reject a request waiting for your decision (listed in \"approvals\"), saying why. Costs 10 minutes. The requester may ask again. " +
			"Refused as a policy violation when it is your own request (separation-of-duties), when you stand in for a colleague on leave and it is beyond the leave's delegation limit (delegation-limit), or when it waits for someone else (approver-authority).",
		params: []toolParam{paramRequest,
			{name: "reason", typ: "string", required: true, desc: "Why the request is rejected, in a sentence (required, not blank).",
				set: func(a *org.Action, v any) { a.Reason = v.(string) }}},
	},
	{
		name: org.ActEscalate,
		desc: "Move the current step of your own pending approval request from its approver to the approver's manager (or, " +
			"while the approver is on leave, their delegate). Costs 5 minutes of working time. Refused for a request that is not " +
			"yours or not pending, or when nobody stands above the approver.",
		params: []toolParam{{name: "request", typ: "string", required: true,
			desc: `ID of one of your own pending requests (your observation's "requests"), e.g. "r3".`,
			set:  func(a *org.Action, v any) { a.Request = v.(string) }}},
	},
	{
		name: org.ActMessage,
		desc: "Send a message to a colleague (any member but yourself). Costs 5 minutes; it is delivered 10 minutes later, and you are " +
			"asked to decide again when an answer arrives. To get information a task needs (its needs_info), ask the colleague named in " +
			"needs_info.from and name the topic (needs_info.topic) in your text; their answer gives it to you. " +
			"Do not ask again while the question is listed in \"awaiting\". Text: at most 4000 bytes.",
		params: []toolParam{
			{name: "to", typ: "string", required: true, desc: "Member ID of the recipient.",
				set: func(a *org.Action, v any) { a.To = v.(string) }},
			{name: "text", typ: "string", required: true, desc: "The message (not blank, at most 4000 bytes).",
				set: func(a *org.Action, v any) { a.Text = v.(string) }},
			{name: "reply_to", typ: "string", desc: `ID of a message in your "inbox" that this one answers.`,
				set: func(a *org.Action, v any) { a.ReplyTo = v.(string) }},
			{name: "task", typ: "string", desc: `ID of a case step the recipient, an NPC, performs when asked (your observation's "ask"): ` +
				`it does the step after its reply latency and answers with its result for the case.`,
				set: func(a *org.Action, v any) { a.Task = v.(string) }},
		},
	},
	{
		name: org.ActWait,
		desc: "Do nothing more this turn. Without arguments you are asked again when something you can see changes " +
			"(a message arrives, a request is decided or waits for you, a task you could take becomes available, your work finishes; " +
			"a new ticket, or a task handed back to its queue, wakes only those holding nothing: while you hold a task you cannot work on yet, " +
			"wait with \"for\" to look again); " +
			"with \"for\" or \"until\" you are asked again then at the latest. It ends your turn. Every turn costs at least 1 minute.",
		params: []toolParam{
			{name: "for", typ: "string", desc: `Wait this long, in working time: a positive duration such as "30m" or "2h".`,
				set: func(a *org.Action, v any) { a.For = v.(string) }},
			{name: "until", typ: "integer", desc: `Wait until this simulated time (milliseconds since the world's start, like the observation's "time"); it must be in the future.`,
				set: func(a *org.Action, v any) { a.Until = v.(int64) }},
		},
	},
	{
		name: org.ActOpenCase,
		desc: "Open a case of a template your role may open (your observation's \"open\", with how many you may still open and " +
			"the bounds of each amount). Costs 5 minutes. Attributes you leave out are drawn. Refused as a policy violation " +
			"(open-case) past your quota, outside the bounds, or for a template your role may not open.",
		params: []toolParam{
			{name: "template", typ: "string", required: true, desc: `The case template, e.g. "claim".`,
				set: func(a *org.Action, v any) { a.Template = v.(string) }},
			{name: "attributes", typ: "object", desc: `Attribute values, e.g. {"amount": 4000, "line": "motor"}: amounts are whole numbers, categories one of their values.`,
				set: func(a *org.Action, v any) { a.Attributes = v.(payload.ActionAttrs) }},
		},
	},
}

// Tool is one tool definition in the OpenAI function-calling format.
type Tool struct {
	Type     string       `json:"type"` // always "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction is a tool's function: its name (an action type), what it
// does and costs, and the JSON Schema of its arguments.
type ToolFunction struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Parameters  ToolSchema `json:"parameters"`
}

// ToolSchema is the JSON Schema of a tool's arguments: an object.
type ToolSchema struct {
	Type                 string                  `json:"type"` // always "object"
	Properties           map[string]ToolProperty `json:"properties"`
	Required             []string                `json:"required"`
	AdditionalProperties bool                    `json:"additionalProperties"`
}

// ToolProperty is one argument's schema.
type ToolProperty struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	MinLength   int    `json:"minLength,omitempty"`
	Minimum     *int64 `json:"minimum,omitempty"`
	// Enum lists the values a world allows (ToolsFor: its record types).
	Enum []string `json:"enum,omitempty"`
	// Items are an array's elements (schedule_meeting's attendees).
	Items *ToolItems `json:"items,omitempty"`
}

// ToolItems is the type of an array property's elements.
type ToolItems struct {
	Type string `json:"type"`
}

// ToolDefs returns the actions as tool definitions, one per action type in
// org.ActionTypes order. Each call returns a fresh copy.
func ToolDefs() []Tool {
	out := make([]Tool, 0, len(toolSpecs))
	for _, s := range toolSpecs {
		sch := ToolSchema{Type: "object", Properties: map[string]ToolProperty{}, Required: []string{}}
		for _, p := range s.params {
			prop := ToolProperty{Type: p.typ, Description: p.desc}
			if p.typ == "string" && p.required {
				prop.MinLength = 1
			}
			if p.typ == "integer" {
				one := int64(1)
				prop.Minimum = &one
			}
			if p.typ == "array" {
				prop.Items = &ToolItems{Type: "string"}
			}
			sch.Properties[p.name] = prop
			if p.required {
				sch.Required = append(sch.Required, p.name)
			}
		}
		out = append(out, Tool{Type: "function", Function: ToolFunction{Name: s.name, Description: s.desc, Parameters: sch}})
	}
	return out
}

// Tools returns the actions as tool definitions in the OpenAI
// function-calling JSON format, one per action type in org.ActionTypes
// order, with their costs and rules. The output is the same on every call.
func Tools() []byte {
	b, err := json.MarshalIndent(ToolDefs(), "", "  ")
	if err != nil {
		panic("agents: tools do not encode: " + err.Error())
	}
	return b
}

func toolSpecFor(name string) (*toolSpec, bool) {
	for i := range toolSpecs {
		if toolSpecs[i].name == name {
			return &toolSpecs[i], true
		}
	}
	return nil, false
}

// ActionFromOfferedToolCall is ActionFromToolCall for a seat offered only
// the tools named offered (a world's, ToolNames of ToolDefsFor; nil: every
// action's): a call of any other is an unknown tool, and the error lists
// those offered, not every action's.
func ActionFromOfferedToolCall(offered []string, name string, argumentsJSON []byte) (org.Action, error) {
	if offered != nil && !slices.Contains(offered, name) {
		return org.Action{}, fmt.Errorf("unknown tool %q (tools: %s)", name, strings.Join(offered, ", "))
	}
	return ActionFromToolCall(name, argumentsJSON)
}

// ToolNames returns the names of defs, in their order.
func ToolNames(defs []Tool) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Function.Name
	}
	return names
}

// ActionFromToolCall turns a tool call into an action, strictly: an unknown
// tool, arguments that are not one JSON object, an unknown argument, a
// missing or blank required one, or one of the wrong type is an error with
// a sentence saying what was wrong. Empty arguments mean {}. It does not
// check the action against the state: the engine does that.
func ActionFromToolCall(name string, argumentsJSON []byte) (org.Action, error) {
	spec, ok := toolSpecFor(name)
	if !ok {
		return org.Action{}, fmt.Errorf("unknown tool %q (tools: %s)", name, strings.Join(org.ActionTypes, ", "))
	}
	if len(argumentsJSON) > org.MaxReplyBytes {
		return org.Action{}, fmt.Errorf("arguments of %s are %d bytes; the limit is %d", name, len(argumentsJSON), org.MaxReplyBytes)
	}
	raw := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(argumentsJSON)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(argumentsJSON))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			return org.Action{}, fmt.Errorf("arguments of %s are not a JSON object: %v", name, err)
		}
		if obj == nil {
			return org.Action{}, fmt.Errorf("arguments of %s are null, not a JSON object", name)
		}
		if _, err := dec.Token(); err != io.EOF {
			return org.Action{}, fmt.Errorf("arguments of %s have trailing data after the JSON object", name)
		}
		raw = obj
	}
	a := org.Action{Type: spec.name}
	known := make([]string, len(spec.params))
	for i, p := range spec.params {
		known[i] = p.name
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		found := false
		for _, p := range spec.params {
			if p.name == k {
				found = true
				break
			}
		}
		if !found {
			if len(known) == 0 {
				return org.Action{}, fmt.Errorf("%s takes no arguments, but got %q", name, k)
			}
			return org.Action{}, fmt.Errorf("%s has no argument %q (arguments: %s)", name, k, strings.Join(known, ", "))
		}
	}
	for _, p := range spec.params {
		v, present := raw[p.name]
		if !present || string(bytes.TrimSpace(v)) == "null" {
			if p.required {
				return org.Action{}, fmt.Errorf("%s needs the argument %q", name, p.name)
			}
			continue
		}
		switch p.typ {
		case "string":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return org.Action{}, fmt.Errorf("argument %q of %s must be a string, got %s", p.name, name, clip(v))
			}
			if p.required && strings.TrimSpace(s) == "" {
				return org.Action{}, fmt.Errorf("argument %q of %s must not be blank", p.name, name)
			}
			p.set(&a, s)
		case "integer":
			var n int64
			if err := json.Unmarshal(v, &n); err != nil {
				return org.Action{}, fmt.Errorf("argument %q of %s must be an integer, got %s", p.name, name, clip(v))
			}
			p.set(&a, n)
		case "object":
			var attrs payload.ActionAttrs
			if err := json.Unmarshal(v, &attrs); err != nil {
				return org.Action{}, fmt.Errorf("argument %q of %s must be an object of attribute values, got %s", p.name, name, clip(v))
			}
			p.set(&a, attrs)
		case "array":
			var names payload.Names
			if err := json.Unmarshal(v, &names); err != nil {
				return org.Action{}, fmt.Errorf("argument %q of %s must be a list of member ids, got %s", p.name, name, clip(v))
			}
			p.set(&a, names)
		default:
			panic("agents: tool parameter of unknown type " + p.typ)
		}
	}
	return a, nil
}

func clip(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// ToolCallFromAction is the inverse of ActionFromToolCall: the tool name and
// the JSON arguments (a compact object, in the tool's parameter order, empty
// fields left out) that ActionFromToolCall turns back into a, exactly. It
// returns an error when a cannot be said as a tool call: an unknown type, a
// field its tool has no argument for (a message's topic, which only simulated
// colleagues give), or a required argument missing or blank. Trajectory
// exports use it to show recorded actions as the tool calls an LLM makes.
func ToolCallFromAction(a org.Action) (name string, argumentsJSON []byte, err error) {
	spec, ok := toolSpecFor(a.Type)
	if !ok {
		return "", nil, fmt.Errorf("action type %q is no tool (tools: %s)", a.Type, strings.Join(org.ActionTypes, ", "))
	}
	// The tools' argument names are org.Action's JSON names.
	// Text is kept as written (no \u003c for <), as a model would write it.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		return "", nil, fmt.Errorf("action %s: %w", a.Type, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &fields); err != nil {
		return "", nil, fmt.Errorf("action %s: %w", a.Type, err)
	}
	delete(fields, "type")
	args := []byte{'{'}
	for _, p := range spec.params {
		v, ok := fields[p.name]
		if !ok {
			continue
		}
		delete(fields, p.name)
		if len(args) > 1 {
			args = append(args, ',')
		}
		k, _ := json.Marshal(p.name)
		args = append(append(append(args, k...), ':'), v...)
	}
	args = append(args, '}')
	if len(fields) > 0 {
		return "", nil, fmt.Errorf("%s has no argument for the action's %s", a.Type, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
	}
	back, err := ActionFromToolCall(spec.name, args)
	if err != nil {
		return "", nil, err
	}
	if back != a {
		return "", nil, fmt.Errorf("action %+v does not survive as a tool call (it comes back as %+v)", a, back)
	}
	return spec.name, args, nil
}
