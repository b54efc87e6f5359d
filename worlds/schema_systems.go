package worlds

import (
	"reflect"

	"github.com/invopop/jsonschema"
)

// The JSON Schema of the systems, records, policy and outcomes (version 2,
// systems.go).

func init() {
	for t, s := range systemSpecs { // order: each entry is its own type's
		specs[t] = s
	}
	mappers[reflect.TypeFor[fileValue]()] = func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "A field's value: a text (also an enum value, a reference's record id, an RFC 3339 date-time), a whole number (integer, money), a bool, or a list of texts.",
			OneOf: []*jsonschema.Schema{
				{Type: "string"}, {Type: "integer"}, {Type: "boolean"},
				{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			},
		}
	}
	root := specs[reflect.TypeFor[file]()]
	root.fields["systems"] = fieldSpec{doc: "Version 2: business systems of typed records (listed or generated per seed, with stale copies and duplicates), read and written by role."}
	root.fields["policy"] = fieldSpec{doc: "Version 2: the policy text agents read and the precedence of the systems when their records disagree."}
	step := specs[reflect.TypeFor[fileCaseStep]()]
	step.fields["outcome"] = fieldSpec{doc: "Version 2: what the step must leave behind on a record, verified from the state at completion and at the end."}
	attr := specs[reflect.TypeFor[fileAttr]()]
	attr.doc = "An attribute: exactly one of amount, one_of, text and record."
	attr.fields["record"] = fieldSpec{doc: "Version 2: a record of this type, drawn per case (its id).", apply: id}
	attr.extend = func(s *jsonschema.Schema) {
		s.OneOf = []*jsonschema.Schema{requires("amount"), requires("one_of"), requires("text"), requires("record")}
	}
	specs[reflect.TypeFor[fileAttr]()] = attr
}

var systemSpecs = map[reflect.Type]typeSpec{
	reflect.TypeFor[fileSystem](): {
		doc: "A business system (version 2): record types and who may use them, by role.",
		fields: map[string]fieldSpec{
			"id":     {doc: "The system's id.", required: true, apply: id},
			"title":  {doc: "Its name as people say it."},
			"read":   {doc: "Roles that may get and search its records.", apply: ids},
			"write":  {doc: "Roles that may update its records.", apply: ids},
			"create": {doc: "Roles that may create records.", apply: ids},
			"delete": {doc: "Roles that may delete records.", apply: ids},
			"types":  {doc: "Its record types.", required: true},
		},
	},
	reflect.TypeFor[fileRecordType](): {
		doc: "A record type: typed fields, records listed or generated per seed, or copies of another system's records.",
		fields: map[string]fieldSpec{
			"id":       {doc: "The type's id, unique across systems.", required: true, apply: id},
			"fields":   {doc: "Its fields by name: {type: text|integer|money|date-time|enum|bool|reference|list, values (enum), to (reference)}."},
			"records":  {doc: "Records listed by hand: an id and field values; a field left out has its type's zero."},
			"generate": {doc: "Records drawn per seed: how many, their id prefix, and each field's distribution."},
			"copy":     {doc: "The records are copies of another system's records: one per original (some twice), some with a stale value."},
			"text":     {doc: "A record in words, for language models: a text template over its fields and {{.id}}, such as \"Invoice {{.id}}: {{.amount}} ({{.plan}})\"; reads show it beside the fields."},
		},
	},
	reflect.TypeFor[fileField](): {
		doc: "A typed field.",
		fields: map[string]fieldSpec{
			"type":   {doc: "text, integer, money (whole units), date-time (RFC 3339), enum, bool, reference or list (of texts).", required: true},
			"values": {doc: "An enum's values."},
			"to":     {doc: "The record type a reference names.", apply: id},
		},
	},
	reflect.TypeFor[fileGenerate](): {
		doc: "Records drawn per seed.",
		fields: map[string]fieldSpec{
			"count":  {doc: "How many (1 to 10000).", required: true, apply: atLeast(1)},
			"prefix": {doc: "Their ids are <prefix>-1, <prefix>-2, …; default the type's id."},
			"fields": {doc: "Each field's distribution, as case attributes write them: amount, one_of, text or record (a reference)."},
		},
	},
	reflect.TypeFor[fileCopy](): {
		doc: "The records copy another system's records: the mess of data kept twice.",
		fields: map[string]fieldSpec{
			"of":         {doc: "The record type copied (of another system).", required: true, apply: id},
			"key":        {doc: "The reference field that names the original.", required: true},
			"fields":     {doc: "The fields copied (of one type in both)."},
			"stale":      {doc: "The share of copies with one copied value out of date (0 to 1)."},
			"duplicates": {doc: "The share of originals copied twice; the second copy is stale (0 to 1)."},
		},
	},
	reflect.TypeFor[filePolicy](): {
		doc: "Version 2: the policy text agents read, and which system wins when records disagree.",
		fields: map[string]fieldSpec{
			"text":       {doc: "The policy, in words; agents see it."},
			"precedence": {doc: "Systems, most authoritative first.", apply: ids},
		},
	},
	reflect.TypeFor[fileOutcome](): {
		doc: "What a step must leave behind: field values on the record a record attribute names.",
		fields: map[string]fieldSpec{
			"record": {doc: "The case's record attribute naming the record.", required: true},
			"set":    {doc: "Field -> an expression of its expected value over the attributes, facts and record.<field> (the authoritative record when the case opens)."},
		},
	},
}
