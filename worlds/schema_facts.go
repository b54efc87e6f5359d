package worlds

import "reflect"

// The JSON Schema of facts held by NPCs, requesters, documents and the
// outcome kinds (version 2, facts.go).

func init() {
	for t, s := range factSpecs { // order: each entry is its own type's
		specs[t] = s
	}
	c := specs[reflect.TypeFor[fileCase]()]
	c.fields["requester"] = fieldSpec{doc: "Version 2: the NPC who asked for the case: replies go to it, and it reopens the case when it is closed with an outcome unmet.", apply: id}
	c.fields["document"] = fieldSpec{doc: "Version 2: a document the case comes with (an e-mail thread): a text template over the attributes and facts, shown to the member holding one of its steps."}
	step := specs[reflect.TypeFor[fileCaseStep]()]
	step.fields["decision"] = fieldSpec{doc: "Version 2: a decision among options the step must make (the decide action); the correct one is computed."}
	step.fields["reply"] = fieldSpec{doc: "Version 2: a reply to the case's requester whose text must contain a computed value."}
	step.fields["create"] = fieldSpec{doc: "Version 2: a record the step's holder must create, with computed field values."}
	attr := specs[reflect.TypeFor[fileAttr]()]
	attr.fields["held_by"] = fieldSpec{doc: "Version 2, facts only: the NPC who holds the fact and tells it when asked about the case (a message naming the case's id and the fact).", apply: id}
	attr.fields["answer"] = fieldSpec{doc: "Version 2, facts only: the holder's reply, a text template over the attributes and facts; default \"{{.case}}: the <fact> is {{.<fact>}}.\""}
	specs[reflect.TypeFor[fileAttr]()] = attr
}

var factSpecs = map[reflect.Type]typeSpec{
	reflect.TypeFor[fileDecision](): {
		doc: "A decision among options; the decide action makes it, and it is verified against the correct one.",
		fields: map[string]fieldSpec{
			"from":    {doc: "A record attribute whose record the expression reads as record.<field> and ref.<field>.<field>."},
			"options": {doc: "The options (at least two)."},
			"correct": {doc: "An expression giving the correct option, over the attributes, facts and the from record.", required: true},
		},
	},
	reflect.TypeFor[fileReply](): {
		doc: "A reply to the requester: a message from the step's holder to the requester, naming the case, whose text contains the value (case-insensitively, as words of their own: 450 is not in 4500).",
		fields: map[string]fieldSpec{
			"from":    {doc: "A record attribute whose record the expression reads."},
			"carries": {doc: "An expression giving the value the reply must contain.", required: true},
		},
	},
	reflect.TypeFor[fileCreate](): {
		doc: "A record the step's holder must create during the case, with these field values (partial credit per field).",
		fields: map[string]fieldSpec{
			"from":   {doc: "A record attribute whose record the expressions read."},
			"record": {doc: "The record type created.", required: true, apply: id},
			"set":    {doc: "Field -> an expression of its expected value.", required: true},
		},
	},
}
