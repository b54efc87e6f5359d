package worlds

import (
	"reflect"

	"github.com/invopop/jsonschema"
)

// mappers give the schema of file types that read more than one shape
// (their UnmarshalYAML), beside distSchema and amountDistSchema.
var mappers = map[reflect.Type]func() *jsonschema.Schema{
	reflect.TypeFor[fileChoices](): func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "A category: a list of equally likely values, such as [auto, home], or weights, such as {auto: 5, home: 3}.",
			OneOf: []*jsonschema.Schema{
				{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: ptr[uint64](1)},
				{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "integer", Minimum: "0"}},
			},
		}
	},
	reflect.TypeFor[filePriority](): func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "A priority: weights per priority such as {1: 70, 2: 30}, one priority, or an expression over the attributes such as \"amount > 10000 ? 2 : 1\".",
			OneOf: []*jsonschema.Schema{
				{Type: "object", PatternProperties: map[string]*jsonschema.Schema{priorityKeyPattern.String(): {Type: "integer", Minimum: "0"}},
					AdditionalProperties: jsonschema.FalseSchema},
				{Type: "integer"},
				{Type: "string"},
			},
		}
	},
}

func init() {
	for t, s := range caseSpecs { // order: each entry is its own type's
		specs[t] = s
	}
	chain := specs[reflect.TypeFor[fileChain]()]
	chain.fields["attribute"] = fieldSpec{doc: "Version 2: the amount attribute of a case whose value the thresholds read (a contract's value is not spending). Omitted: the purchase or the step's charge."}
}

var caseSpecs = map[reflect.Type]typeSpec{
	reflect.TypeFor[fileCase](): {
		doc: "A case template: the workflow a case of this kind follows.",
		fields: map[string]fieldSpec{
			"id":         {doc: "The template's id.", required: true, apply: id},
			"title":      {doc: "The case's title: a text template over its attributes, such as \"Claim {{.claimant}}\"."},
			"queue":      {doc: "The id of the queue its steps wait in.", required: true, apply: id},
			"queue_by":   {doc: "Choose the queue by a one_of attribute's value; values it does not map keep queue."},
			"team":       {doc: "The team whose budget its charges go to. Omitted: the team of a member serving the queue.", apply: id},
			"value":      {doc: "What a case earns when every step that applies is done and verified (its steps' own values add to it).", apply: atLeast(0)},
			"deadline":   {doc: "Working time from opening by which the case should be done; its value halves every late_half_life after.", apply: duration},
			"sla":        {doc: "The SLA, one for all or one per priority: a case still open past it is a breach."},
			"priority":   {doc: "The case's priority: drawn by weight, or computed from the attributes."},
			"attributes": {doc: "Attributes drawn per case from the seed, shown to agents: {amount: …}, {one_of: …} or {text: …}."},
			"facts":      {doc: "Hidden facts drawn per case: never shown to agents; an NPC's answer may carry them."},
			"open":       {doc: "Members who may open cases of this template (an action open_case), with a quota and bounds."},
			"steps":      {doc: "The steps, in order of the file; deps name steps of the same template.", required: true},
		},
	},
	reflect.TypeFor[fileCaseStep](): {
		doc: "One step of a case: claimed and worked like a task, or performed by an NPC when asked.",
		fields: map[string]fieldSpec{
			"id":       {doc: "The step's id within the template; the task's id is <case>.<step>.", required: true, apply: id},
			"title":    {doc: "The step's title."},
			"role":     {doc: "The role that does it (not with npc).", apply: id},
			"role_by":  {doc: "Choose the role by a one_of attribute's value; values it does not map keep role."},
			"skill":    {doc: "A skill the member doing it needs."},
			"effort":   {doc: "The working time it takes (not with npc)."},
			"deps":     {doc: "Steps of the same case that must be done first. A dependency that does not apply to a case is no dependency.", apply: ids},
			"when":     {doc: "A condition over the attributes (an expression such as \"amount > 20000\"): the step applies only when it holds."},
			"value":    {doc: "What completing the step earns.", apply: atLeast(0)},
			"approval": {doc: "The approval chain the step needs before completion; its amount is the chain's attribute or the step's charge.", apply: id},
			"charge":   {doc: "An amount attribute charged to the team's budget when the step is completed.", apply: id},
			"npc":      {doc: "An NPC who performs the step when a member asks it (a message naming the step's task): after its reply latency it completes the step and replies with answer.", apply: id},
			"answer":   {doc: "What the NPC replies once it has performed the step: a text template over the attributes and facts."},
		},
	},
	reflect.TypeFor[fileRoute](): {
		doc: "A choice by an attribute's value.",
		fields: map[string]fieldSpec{
			"attribute": {doc: "A one_of attribute.", required: true, apply: id},
			"map":       {doc: "Attribute value -> id."},
		},
	},
	reflect.TypeFor[fileOpen](): {
		doc: "Who may open cases of a template.",
		fields: map[string]fieldSpec{
			"roles":  {doc: "Roles whose members may open them.", required: true, apply: ids},
			"quota":  {doc: "Most cases one member may open in a session; 0 for no limit.", apply: atLeast(0)},
			"bounds": {doc: "Per amount attribute, the range a member may give. Omitted: the range of its distribution."},
		},
	},
	reflect.TypeFor[fileBound](): {
		doc: "A range of amounts.",
		fields: map[string]fieldSpec{
			"min": {doc: "The smallest amount."},
			"max": {doc: "The largest amount."},
		},
	},
	reflect.TypeFor[fileAttr](): {
		doc: "An attribute: exactly one of amount, one_of and text.",
		fields: map[string]fieldSpec{
			"amount": {doc: "An integer amount: fixed, {mean: …} or {min: …, max: …}."},
			"one_of": {doc: "A category: values, equally likely, or weights."},
			"text":   {doc: "A text template over the other attributes and {{.case}}, such as \"CLM-{{.case}}\"."},
		},
		extend: func(s *jsonschema.Schema) {
			s.OneOf = []*jsonschema.Schema{requires("amount"), requires("one_of"), requires("text")}
		},
	},
	reflect.TypeFor[fileSeparation](): {
		doc: "A separation-of-duties rule over the steps of one case template. Either did with not_do and/or not_approve, or distinct.",
		fields: map[string]fieldSpec{
			"id":          {doc: "The rule's id, named in every refusal.", required: true, apply: id},
			"template":    {doc: "The case template whose steps it names.", required: true, apply: id},
			"did":         {doc: "A member who did one of these steps of a case …", apply: ids},
			"not_do":      {doc: "… may not do these steps of the same case …", apply: ids},
			"not_approve": {doc: "… nor approve these.", apply: ids},
			"distinct":    {doc: "Four eyes: no member does two of these steps of one case.", apply: ids},
		},
	},
}
