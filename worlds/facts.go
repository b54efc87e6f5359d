package worlds

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	exprast "github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// This file reads what a case knows beyond its records (format version 2):
// facts an NPC holds and tells only when asked about the case, the
// requester NPC a case answers to, a document the case comes with, and
// the outcome kinds beside a record's fields: a decision among options,
// a reply to the requester that carries a value, and a created record.

// fileDecision is a decision among options whose correct one is computed.
type fileDecision struct {
	From    string   `yaml:"from"` // a record attribute whose record the expression reads (record.<field>, ref.…)
	Options []string `yaml:"options"`
	Correct string   `yaml:"correct"`
}

// fileReply is a reply to the case's requester that must carry a value.
type fileReply struct {
	From    string `yaml:"from"`
	Carries string `yaml:"carries"`
}

// fileCreate is a record the step must create.
type fileCreate struct {
	From   string            `yaml:"from"`
	Record string            `yaml:"record"` // the record type created
	Set    map[string]string `yaml:"set"`
}

// Outcome kinds besides a record's fields (Expected.Kind in the log).
const (
	KindDecision = "decision"
	KindReply    = "reply"
	KindCreate   = "create"
)

// Decision is a step's decision: the options and the expression of the
// correct one.
type Decision struct {
	From, FromType string // the record attribute its expression reads, and its type; "" for none
	Options        []string
	Correct        *Expr
}

// Reply is a step's reply to the requester: the expression of the value
// its text must contain.
type Reply struct {
	From, FromType string
	Carries        *Expr
	// Values are the values Carries can give that its text names (see
	// resultValues): a reply stating another of them beside its own
	// hedges, and does not carry its own (log format 6).
	Values []string
}

// Create is a record a step must create: its type and the expected
// values of its fields.
type Create struct {
	From, FromType string
	Type           string
	Set            []OutcomeField
}

// Fact returns the template's fact with the given name.
func (c *CaseTemplate) Fact(name string) (*Attr, bool) { return findAttr(c.Facts, name) }

// HeldBy lists the facts member holds, in name order.
func (c *CaseTemplate) HeldBy(member string) []*Attr {
	var out []*Attr
	for i := range c.Facts {
		if c.Facts[i].HeldBy == member {
			out = append(out, &c.Facts[i])
		}
	}
	return out
}

// RefFieldsOf are the reference fields of t that one of the expressions
// srcs reads through ref.<field>.
func RefFieldsOf(t *RecordType, srcs ...string) []string {
	var out []string
	for _, f := range t.Fields {
		if f.Type == FieldReference && slices.ContainsFunc(srcs, func(s string) bool { return strings.Contains(s, "ref."+f.Name+".") }) {
			out = append(out, f.Name)
		}
	}
	return out
}

// Sources are the expressions of a kind, for RefFieldsOf.
func (c *Create) Sources() []string {
	out := make([]string, len(c.Set))
	for i, f := range c.Set {
		out[i] = f.Expr.Source
	}
	return out
}

// caseFacts checks who holds a template's facts, its requester and its
// document.
func (v *validator) caseFacts(p string, fc *fileCase, c *CaseTemplate, all []Attr, r *refs) {
	for _, name := range slices.Sorted(maps.Keys(fc.Attributes)) {
		if a := fc.Attributes[name]; a.HeldBy != "" || a.Answer != "" {
			v.errf(p+".attributes."+name, "only a fact is held by an NPC: move %s to facts", name)
		}
	}
	isNPC := func(path, who, what string) bool {
		if !v.ref(path, "member", who, r.members) {
			return false
		}
		if _, ok := r.npcKnows[who]; !ok {
			v.errf(path, "%s is not an NPC: only an NPC %s", who, what)
			return false
		}
		return true
	}
	for i := range c.Facts {
		f := &c.Facts[i]
		ff := fc.Facts[f.Name]
		fp := p + ".facts." + f.Name
		if ff.HeldBy == "" {
			if ff.Answer != "" {
				v.errf(fp+".answer", "a fact no one holds has no answer: give held_by")
			}
			continue
		}
		if !isNPC(fp+".held_by", ff.HeldBy, "holds a fact and tells it when asked") {
			continue
		}
		f.HeldBy = ff.HeldBy
		src := ff.Answer
		if src == "" {
			src = "{{.case}}: the " + strings.ReplaceAll(f.Name, "_", " ") + " is {{." + f.Name + "}}."
		}
		f.Answer = v.compileText(fp+".answer", src, all)
	}
	if fc.Requester != "" && isNPC(p+".requester", fc.Requester, "is a requester (it reads replies and reopens a case closed wrongly)") {
		c.Requester = fc.Requester
	}
	if fc.Document != "" {
		c.Document = v.compileText(p+".document", fc.Document, all)
	}
}

// outcomeKinds checks a step's decision, reply and create: at most one
// outcome of any kind per step, none on a step an NPC performs.
func (v *validator) outcomeKinds(sp string, s *fileCaseStep, st *CaseStep, c *CaseTemplate, all []Attr, r *refs) {
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"outcome", s.Outcome != nil}, {KindDecision, s.Decision != nil}, {KindReply, s.Reply != nil}, {KindCreate, s.Create != nil}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch {
	case len(kinds) == 0:
		return
	case s.NPC != "":
		v.errf(sp+"."+kinds[0], "a step an NPC performs has no outcome: the NPC does it as it is")
		return
	case len(kinds) > 1:
		v.errf(sp+"."+kinds[1], "a step has one outcome; this one has %s", strings.Join(kinds, " and "))
		return
	}
	if d := s.Decision; d != nil {
		dp := sp + ".decision"
		out := &Decision{From: d.From}
		out.FromType = v.kindFrom(dp, d.From, c, r)
		if len(d.Options) < 2 {
			v.errf(dp+".options", "a decision needs at least two options")
		}
		seen := map[string]bool{}
		for i, o := range d.Options {
			if o == "" || seen[o] {
				v.errf(fmt.Sprintf("%s.options[%d]", dp, i), "option %q is empty or given twice", o)
			}
			seen[o] = true
		}
		out.Options = slices.Clone(d.Options)
		if d.Correct == "" {
			v.errf(dp+".correct", "missing correct: the expression of the correct option")
		} else if x := v.kindExpr(dp+".correct", d.Correct, out.FromType, all, r); x != nil {
			if lits, ok := stringLiterals(d.Correct); ok {
				for _, l := range lits {
					if !seen[l] {
						v.errf(dp+".correct", "unknown option %q (options: %s)", l, strings.Join(d.Options, ", "))
						break
					}
				}
			}
			out.Correct = x
		}
		st.Decision = out
	}
	if rp := s.Reply; rp != nil {
		p := sp + ".reply"
		out := &Reply{From: rp.From}
		out.FromType = v.kindFrom(p, rp.From, c, r)
		if c.Requester == "" {
			v.errf(p, "a reply goes to the case's requester, and template %s names none (give requester: <npc>)", c.ID)
		}
		if rp.Carries == "" {
			v.errf(p+".carries", "missing carries: the expression of the value the reply must contain")
		} else {
			out.Carries = v.kindExpr(p+".carries", rp.Carries, out.FromType, all, r)
			out.Values = resultValues(rp.Carries, all, r.types[out.FromType])
			if out.Carries != nil && len(out.Values) == 0 && v.givesString(out.Carries, all, r.types[out.FromType]) {
				v.warnf(p+".carries", "the values %q gives cannot be listed (give string literals, a choice attribute or an enum field record.<field>): a reply stating several is judged on the wanted one alone, so \"a or b\" is right for either", rp.Carries)
			}
		}
		st.Reply = out
	}
	if cr := s.Create; cr != nil {
		p := sp + ".create"
		out := &Create{From: cr.From, Type: cr.Record}
		out.FromType = v.kindFrom(p, cr.From, c, r)
		t := r.types[cr.Record]
		if t == nil {
			v.errf(p+".record", "unknown record type %q", cr.Record)
			return
		}
		if st.Role != "" && !slices.Contains(r.creators[t.ID], st.Role) {
			v.errf(p+".record", "role %s may not create %s records (its system lets %s create): the step could never be done", st.Role, t.ID, strings.Join(append([]string{"no role"}, r.creators[t.ID]...)[min(1, len(r.creators[t.ID])):], ", "))
		}
		if len(cr.Set) == 0 {
			v.errf(p+".set", "name the fields the created record must have, each with the expression of its value")
		}
		for _, name := range slices.Sorted(maps.Keys(cr.Set)) {
			fp := p + ".set." + name
			if _, ok := t.Field(name); !ok {
				v.errf(fp, "unknown field %q of record type %s (its fields: %s)", name, t.ID, strings.Join(t.fieldNames(), ", "))
				continue
			}
			if x := v.kindExpr(fp, cr.Set[name], out.FromType, all, r); x != nil && v.settable(fp, x, t, name) {
				out.Set = append(out.Set, OutcomeField{Field: name, Expr: x})
			}
		}
		st.Create = out
	}
}

// kindFrom checks a kind's from: a record attribute of the template; it
// returns the record type ("" for none).
func (v *validator) kindFrom(path, from string, c *CaseTemplate, r *refs) string {
	if from == "" {
		return ""
	}
	a, ok := findAttr(c.Attrs, from)
	if !ok || a.Kind != AttrRecord {
		v.errf(path+".from", "unknown record attribute %q of template %s", from, c.ID)
		return ""
	}
	if r.types[a.Record] == nil {
		return ""
	}
	return a.Record
}

// kindExpr compiles a kind's expression over the attributes, facts and,
// when the kind names one (from), a record's fields.
func (v *validator) kindExpr(path, src, typ string, all []Attr, r *refs) *Expr {
	v.refTypes = r.types
	t := r.types[typ]
	if t == nil {
		t = &RecordType{ID: "(none: the step names no record with from)"}
	}
	return v.compileOutcome(path, src, all, t)
}

// givesString reports whether x, over record type t (nil: none), gives a
// string: as its compiler typed it, or at the zero values of what it reads
// (a record's field is of no type the compiler knows).
func (v *validator) givesString(x *Expr, all []Attr, t *RecordType) bool {
	if typ := x.prog.Node().Type(); typ != nil && typ.Kind() == reflect.String {
		return true
	}
	if t == nil {
		t = &RecordType{}
	}
	got, ok := x.Eval(v.zeroEnv(all, t))
	_, isString := got.(string)
	return ok && isString
}

// resultValues lists the values src can give that its text names, in
// order and once each: the strings it gives as written, and every value of
// a choice attribute or of an enum field of its record (record.<field>) it
// gives, also through ?., a let, or string, lower, upper or trim. A result
// of any other kind (a number, text, another function's) adds none.
func resultValues(src string, attrs []Attr, t *RecordType) []string {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	var out []string
	add := func(vs ...string) {
		for _, x := range vs {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	lets := map[string]exprast.Node{} // let bindings in scope
	var walk func(n exprast.Node)
	walk = func(n exprast.Node) {
		switch n := n.(type) {
		case *exprast.StringNode:
			add(n.Value)
		case *exprast.ConditionalNode:
			walk(n.Exp1)
			walk(n.Exp2)
		case *exprast.BinaryNode:
			if n.Operator == "??" {
				walk(n.Left)
				walk(n.Right)
			}
		case *exprast.ChainNode: // record?.plan
			walk(n.Node)
		case *exprast.BuiltinNode: // a value written otherwise: the same value to a reader
			if len(n.Arguments) == 1 && slices.Contains([]string{"string", "lower", "upper", "trim"}, n.Name) {
				walk(n.Arguments[0])
			}
		case *exprast.VariableDeclaratorNode:
			outer, had := lets[n.Name]
			lets[n.Name] = n.Value
			walk(n.Expr)
			if delete(lets, n.Name); had {
				lets[n.Name] = outer
			}
		case *exprast.IdentifierNode:
			if v, ok := lets[n.Value]; ok {
				delete(lets, n.Value) // its value is read in the scope it was bound in
				walk(v)
				lets[n.Value] = v
				return
			}
			for _, a := range attrs {
				if a.Name == n.Value && a.Kind == AttrChoice {
					for _, c := range a.Choices {
						add(c.Value)
					}
				}
			}
		case *exprast.MemberNode:
			id, isID := n.Node.(*exprast.IdentifierNode)
			field, isName := n.Property.(*exprast.StringNode)
			if isID && isName && id.Value == "record" && t != nil {
				if f, ok := t.Field(field.Value); ok && len(f.Values) > 0 {
					add(f.Values...)
				}
			}
		}
	}
	walk(tree.Node)
	return out
}

// stringLiterals lists the results of src when each is a string written
// in it (src is one, or a ternary of them); ok is false otherwise.
func stringLiterals(src string) (out []string, ok bool) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, false
	}
	var walk func(n exprast.Node) bool
	walk = func(n exprast.Node) bool {
		switch n := n.(type) {
		case *exprast.StringNode:
			out = append(out, n.Value)
			return true
		case *exprast.ConditionalNode:
			return walk(n.Exp1) && walk(n.Exp2)
		}
		return false
	}
	return out, walk(tree.Node)
}
