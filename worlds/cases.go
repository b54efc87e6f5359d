package worlds

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"text/template"

	"github.com/expr-lang/expr"
	exprast "github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/corpsim/corpsim/clock"
)

// This file reads case templates (format version 2): arriving work that is
// a small workflow of steps, with attributes drawn per case, conditional
// steps, routing by attribute, NPC stages, members opening cases, and the
// separation-of-duties rules over a case's steps.

// fileCase is a case template as the world file writes it.
type fileCase struct {
	ID         string              `yaml:"id"`
	Title      string              `yaml:"title"` // a text template over the attributes: "Claim {{.claimant}}"
	Queue      string              `yaml:"queue"`
	QueueBy    *fileRoute          `yaml:"queue_by"`
	Team       string              `yaml:"team"`
	Value      *float64            `yaml:"value"`
	Deadline   string              `yaml:"deadline"` // working time from opening
	SLA        fileSLA             `yaml:"sla"`
	Priority   filePriority        `yaml:"priority"`
	Attributes map[string]fileAttr `yaml:"attributes"`
	Facts      map[string]fileAttr `yaml:"facts"`
	Open       *fileOpen           `yaml:"open"`
	Steps      []fileCaseStep      `yaml:"steps"`
	// Requester and Document are version 2's (facts.go).
	Requester string `yaml:"requester"`
	Document  string `yaml:"document"`
}

// fileCaseStep is one step of a case template.
type fileCaseStep struct {
	ID       string     `yaml:"id"`
	Title    string     `yaml:"title"`
	Role     string     `yaml:"role"`
	RoleBy   *fileRoute `yaml:"role_by"`
	Skill    string     `yaml:"skill"`
	Effort   fileDist   `yaml:"effort"`
	Deps     []string   `yaml:"deps"`
	When     string     `yaml:"when"` // an expression over the attributes; the step applies only when it is true
	Value    *float64   `yaml:"value"`
	Approval string     `yaml:"approval"`
	Charge   string     `yaml:"charge"` // an amount attribute charged to the team's budget when the step is completed
	NPC      string     `yaml:"npc"`    // an NPC who performs the step when asked
	Answer   string     `yaml:"answer"` // the NPC's reply: a text template over the attributes and facts
	// Outcome is what the step must leave behind on a record (version 2, systems.go).
	Outcome *fileOutcome `yaml:"outcome"`
	// Decision, Reply and Create are the other outcome kinds (facts.go).
	Decision *fileDecision `yaml:"decision"`
	Reply    *fileReply    `yaml:"reply"`
	Create   *fileCreate   `yaml:"create"`
	// Meeting is a meeting the step must book (version 2, meetings.go).
	Meeting *fileMeeting `yaml:"meeting"`
}

// fileRoute chooses an ID by an attribute's value.
type fileRoute struct {
	Attribute string            `yaml:"attribute"`
	Map       map[string]string `yaml:"map"` // attribute value -> role or queue
}

// fileOpen says who may open cases of a template.
type fileOpen struct {
	Roles  []string             `yaml:"roles"`
	Quota  int                  `yaml:"quota"` // cases one member may open in a session; 0 for no limit
	Bounds map[string]fileBound `yaml:"bounds"`
}

// fileBound bounds an amount attribute a member gives.
type fileBound struct {
	Min *int64 `yaml:"min"`
	Max *int64 `yaml:"max"`
}

// fileAttr is one attribute (or fact) of a case template: exactly one of
// amount, one_of and text.
type fileAttr struct {
	Amount fileAmountDist `yaml:"amount"`
	OneOf  fileChoices    `yaml:"one_of"`
	Text   string         `yaml:"text"`
	Record string         `yaml:"record"` // a record of this type, drawn per case (systems.go)
	// HeldBy and Answer are a fact's (facts.go): the NPC who tells it when
	// asked about the case, and its reply.
	HeldBy string `yaml:"held_by"`
	Answer string `yaml:"answer"`
}

// fileChoices is a category: a list of equally likely values, or a
// mapping of value to weight.
type fileChoices struct {
	Values  []string
	Weights map[string]int
	set     bool
}

// UnmarshalYAML accepts a sequence or a mapping.
func (c *fileChoices) UnmarshalYAML(n ast.Node) error {
	switch unwrap(n).(type) {
	case *ast.SequenceNode:
		var vs []string
		if err := yaml.NodeToValue(n, &vs); err != nil {
			return err
		}
		*c = fileChoices{Values: vs, set: true}
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		var m map[string]int
		if err := yaml.NodeToValue(n, &m); err != nil {
			return err
		}
		*c = fileChoices{Weights: m, set: true}
		return nil
	}
	return &yaml.SyntaxError{Message: "expected a list of values like [auto, home] or weights like {auto: 5, home: 3}", Token: n.GetToken()}
}

// filePriority is a priority: weights per priority, or an expression over
// the attributes that computes it.
type filePriority struct {
	Weights map[int]int
	Expr    string
}

// UnmarshalYAML accepts a mapping or an expression string.
func (p *filePriority) UnmarshalYAML(n ast.Node) error {
	switch unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return yaml.NodeToValue(n, &p.Weights)
	case *ast.IntegerNode:
		var x int
		if err := yaml.NodeToValue(n, &x); err != nil {
			return err
		}
		p.Weights = map[int]int{x: 1}
		return nil
	}
	if err := yaml.NodeToValue(n, &p.Expr); err != nil {
		return &yaml.SyntaxError{Message: `expected weights like {1: 70, 2: 30}, a priority, or an expression like "amount > 10000 ? 2 : 1"`, Token: n.GetToken()}
	}
	return nil
}

// fileSeparation is a separation-of-duties rule over the steps of a case.
type fileSeparation struct {
	ID         string   `yaml:"id"`
	Template   string   `yaml:"template"`
	Did        []string `yaml:"did"`         // a member who did one of these steps …
	NotDo      []string `yaml:"not_do"`      // … may not do these steps of the same case
	NotApprove []string `yaml:"not_approve"` // … nor approve these
	Distinct   []string `yaml:"distinct"`    // four eyes: no member does two of these steps of one case
}

// Attribute kinds.
const (
	AttrAmount = "amount" // an integer amount drawn from a distribution
	AttrChoice = "choice" // one of a list of values, by weight
	AttrText   = "text"   // a text template over the other attributes
)

// Attr is an attribute or a fact of a case template.
type Attr struct {
	Name    string
	Kind    string // AttrAmount, AttrChoice or AttrText
	Amount  Dist
	Choices []Choice
	Text    *Text
	Record  string // AttrRecord: the record type
	HeldBy  string // a fact's: the NPC who tells it when asked (facts.go)
	Answer  *Text  // and its reply
}

// Choice is one value of a category and its weight.
type Choice struct {
	Value  string
	Weight int
}

// Text is a text template (Go's text/template syntax, {{.name}}) over a
// case's attributes, facts and its id ({{.case}}).
type Text struct {
	Source string
	tmpl   *template.Template
}

// Render fills the template in with vars. A failure (never expected: the
// loader executed it against every name it may use) is rendered as the
// source itself.
func (t *Text) Render(vars map[string]any) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	if err := t.tmpl.Execute(&b, vars); err != nil {
		return t.Source
	}
	return b.String()
}

// Expr is a compiled expression over a case's attributes, in the
// expression language of github.com/expr-lang/expr, without the builtins
// that read the clock or the machine's time zone.
type Expr struct {
	Source string
	prog   *vm.Program
}

// Bool evaluates a condition.
func (x *Expr) Bool(vars map[string]any) bool {
	if x == nil {
		return true
	}
	out, err := expr.Run(x.prog, vars)
	b, _ := out.(bool)
	return err == nil && b
}

// literals lists the results x can have when each is an integer written
// in it (x is one, or a ternary of them), in order; ok is false when x
// computes its result otherwise (or is nil).
func (x *Expr) literals() (out []int, ok bool) {
	if x == nil {
		return nil, false
	}
	tree, err := parser.Parse(x.Source)
	if err != nil {
		return nil, false
	}
	var walk func(n exprast.Node) bool
	walk = func(n exprast.Node) bool {
		switch n := n.(type) {
		case *exprast.IntegerNode:
			out = append(out, n.Value)
			return true
		case *exprast.ConditionalNode:
			return walk(n.Exp1) && walk(n.Exp2)
		}
		return false
	}
	if !walk(tree.Node) {
		return nil, false
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

// Int evaluates an integer expression; 0 on failure.
func (x *Expr) Int(vars map[string]any) int {
	out, err := expr.Run(x.prog, vars)
	if err != nil {
		return 0
	}
	n, _ := out.(int)
	return n
}

// Route chooses an ID (a role or a queue) by an attribute's value; a value
// it does not map keeps the default.
type Route struct {
	Attribute string
	Map       map[string]string
}

// Pick returns the ID for the value of the attribute in vars, or def.
func (r *Route) Pick(vars map[string]any, def string) string {
	if r == nil {
		return def
	}
	if id, ok := r.Map[fmt.Sprint(vars[r.Attribute])]; ok {
		return id
	}
	return def
}

// CaseTemplate is a kind of case: a workflow of steps opened by arrivals,
// schedules or members.
type CaseTemplate struct {
	ID       string
	Title    *Text
	Queue    string
	QueueBy  *Route
	Team     string
	Value    float64        // earned when every step that applies is done and verified
	Deadline clock.Duration // working time from opening; 0 for none
	SLA      clock.Duration // when SLAByPriority has no entry; 0 for none
	// SLAByPriority maps a case's priority to its SLA.
	SLAByPriority map[int]clock.Duration
	Priority      []Weighted // drawn per case; PriorityExpr instead when set
	PriorityExpr  *Expr
	Attrs         []Attr // by name
	Facts         []Attr // by name; hidden from agents
	Open          *OpenRule
	Steps         []CaseStep // in file order
	Requester     string     // the NPC who asked for the case (facts.go); "" for none
	Document      *Text      // a document the case comes with, over attributes and facts; nil for none
}

// CaseStep is one step of a case template.
type CaseStep struct {
	ID     string
	Title  string
	Role   string
	RoleBy *Route
	Skill  string
	Effort Dist
	Deps   []string
	When   *Expr // nil: always applies
	Value  float64
	Chain  string // the approval chain the step needs
	Charge string // the amount attribute charged to the budget at completion; "" charges nothing
	NPC    string // the NPC who performs it when asked
	Answer *Text  // the NPC's reply
	// Outcome is what it must leave behind on a record (systems.go); nil for none.
	Outcome *Outcome
	// Decision, Reply and Create are the other outcome kinds (facts.go).
	Decision *Decision
	Reply    *Reply
	Create   *Create
	// Meeting is a meeting it must book (meetings.go); nil for none.
	Meeting *Meeting
}

// OpenRule says which roles may open cases of a template, how many each
// member may open, and the bounds of the amounts they may give.
type OpenRule struct {
	Roles  []string
	Quota  int
	Bounds map[string]Bound
}

// Bound is the range of an amount attribute a member may give.
type Bound struct{ Min, Max int64 }

// Separation is a separation-of-duties rule over the steps of one case
// template.
type Separation struct {
	ID         string
	Template   string
	Did        []string
	NotDo      []string
	NotApprove []string
	Distinct   []string
}

// CaseTemplate returns the case template with the given ID.
func (w *World) CaseTemplate(id string) (*CaseTemplate, bool) {
	for i := range w.Cases {
		if w.Cases[i].ID == id {
			return &w.Cases[i], true
		}
	}
	return nil, false
}

// Step returns the template's step with the given ID.
func (c *CaseTemplate) Step(id string) (*CaseStep, bool) {
	for i := range c.Steps {
		if c.Steps[i].ID == id {
			return &c.Steps[i], true
		}
	}
	return nil, false
}

// SLAFor is the SLA of a case of the template at priority p.
func (c *CaseTemplate) SLAFor(p int) clock.Duration {
	if d, ok := c.SLAByPriority[p]; ok {
		return d
	}
	return c.SLA
}

// Attr returns the attribute (or fact) with the given name.
func (c *CaseTemplate) Attr(name string) (*Attr, bool) {
	for _, list := range [][]Attr{c.Attrs, c.Facts} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// zeroVars is a value of every attribute's type, for checking expressions
// and templates at load time.
func zeroVars(attrs []Attr) map[string]any {
	vars := map[string]any{"case": "case-1"}
	for _, a := range attrs {
		if a.Kind == AttrAmount {
			vars[a.Name] = 0
		} else {
			vars[a.Name] = ""
		}
	}
	return vars
}

// tryExpr runs x, compiled, on the probes of attrs (see exprProbes), and
// reports at path the first run that fails (an integer divided by zero, a
// modulo by zero: at run time it made a condition false and a priority 0,
// without a word) or whose result check refuses ("" accepts; nil checks
// nothing). A failure for values no probe has is still possible.
func (v *validator) tryExpr(path string, x *Expr, attrs []Attr, check func(out any) string) {
	if x == nil || v.lim.Recorded {
		return
	}
	for _, vars := range exprProbes(attrs) {
		out, err := expr.Run(x.prog, vars)
		msg := ""
		if err != nil {
			msg = exprError(err)
			if !strings.Contains(msg, "divide by zero") {
				// A probe a case cannot have (a text attribute is probed
				// empty) may fail where no case would: only arithmetic
				// that fails whatever the text is reported.
				continue
			}
			msg = "fails: " + msg
		} else if check != nil {
			msg = check(out)
		}
		if msg != "" {
			v.errf(path, "expression %q, for %s, %s", x.Source, describeVars(vars, attrs), msg)
			return
		}
	}
}

// exprProbes are the attribute values an expression is tried on at load:
// the first value of every attribute, then each attribute's other values
// one at a time. An amount's values are what its distribution can draw at
// its edges and in its middle; a choice's, each of its values.
func exprProbes(attrs []Attr) []map[string]any {
	values := make([][]any, len(attrs))
	for i, a := range attrs {
		switch a.Kind {
		case AttrAmount:
			d := a.Amount
			switch d.Kind {
			case "exp":
				values[i] = []any{int(d.Mean), 1, int(min(d.Mean, math.MaxInt64/10) * 10)}
			case "uniform":
				values[i] = []any{int(d.Min), int(d.Max), int(d.Min + (d.Max-d.Min)/2)}
			default:
				values[i] = []any{int(d.Fixed)}
			}
		case AttrChoice:
			for _, c := range a.Choices {
				if c.Weight > 0 { // one never drawn is no probe
					values[i] = append(values[i], c.Value)
				}
			}
		}
		if len(values[i]) == 0 {
			values[i] = []any{""}
		}
	}
	base := zeroVars(attrs)
	for i, a := range attrs {
		base[a.Name] = values[i][0]
	}
	out := []map[string]any{base}
	for i, a := range attrs {
		for _, val := range values[i][1:] {
			vars := maps.Clone(base)
			vars[a.Name] = val
			out = append(out, vars)
		}
	}
	return out
}

// describeVars writes vars as name=value, in the attributes' order.
func describeVars(vars map[string]any, attrs []Attr) string {
	parts := make([]string, 0, len(attrs))
	for _, a := range attrs {
		parts = append(parts, fmt.Sprintf("%s=%#v", a.Name, vars[a.Name]))
	}
	if len(parts) == 0 {
		return "no attributes"
	}
	return strings.Join(parts, ", ")
}

// exprError is the first line of an expression's error (expr adds the
// source and a caret below it).
func exprError(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// compileExpr compiles src against the attributes' types; out is "bool"
// or "int".
func (v *validator) compileExpr(path, src, out string, attrs []Attr) *Expr {
	opts := []expr.Option{expr.Env(zeroVars(attrs)), expr.DisableBuiltin("now"), expr.DisableBuiltin("date"),
		expr.DisableBuiltin("timezone"), expr.DisableBuiltin("duration")}
	if out == "bool" {
		opts = append(opts, expr.AsBool())
	} else {
		opts = append(opts, expr.AsInt())
	}
	prog, err := expr.Compile(src, opts...)
	if err == nil && out != "bool" && !v.lim.Recorded {
		// AsInt cuts a fraction off without a word: an expression that
		// gives one is refused (a priority of 2.5 ran as 2).
		if why := fractionGiven(src); why != "" {
			v.errf(path, "bad expression %q: %s; an integer is wanted here (int(…) cuts the fraction off)", src, why)
			return nil
		}
	}
	if err != nil {
		msg := exprError(err)
		if strings.HasPrefix(msg, "unknown name ") {
			names := make([]string, 0, len(attrs))
			for _, a := range attrs {
				names = append(names, a.Name)
			}
			msg += " (it may use the attributes " + strings.Join(names, ", ") + ")"
		}
		v.errf(path, "bad expression %q: %s", src, msg)
		return nil
	}
	return &Expr{Source: src, prog: prog}
}

// fractionGiven names a number with a fraction that expression src gives
// as its result, as it is or as a branch of a condition (2.7; amount >
// 10000 ? 2.5 : 1), which AsInt would cut off without a word; "" if there
// is none. A fraction that arithmetic makes (amount / 2500) is cut off, as
// int() does: that is how a priority is computed from an amount.
func fractionGiven(src string) string {
	tree, err := parser.Parse(src)
	if err != nil {
		return ""
	}
	var walk func(n exprast.Node) string
	walk = func(n exprast.Node) string {
		switch n := n.(type) {
		case *exprast.FloatNode:
			if n.Value != math.Trunc(n.Value) {
				return fmt.Sprintf("it gives %v, a number with a fraction", n.Value)
			}
		case *exprast.ConditionalNode:
			if why := walk(n.Exp1); why != "" {
				return why
			}
			return walk(n.Exp2)
		}
		return ""
	}
	return walk(tree.Node)
}

// compileText parses a text template and executes it once against every
// name it may use, so that a misspelt name is a load error.
func (v *validator) compileText(path, src string, attrs []Attr) *Text {
	t, err := template.New(path).Option("missingkey=error").Parse(src)
	if err == nil {
		err = t.Execute(&strings.Builder{}, zeroVars(attrs))
	}
	if err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "template:") {
			msg = msg[i+2:]
		}
		names := make([]string, 0, len(attrs)+1)
		names = append(names, "case")
		for _, a := range attrs {
			names = append(names, a.Name)
		}
		v.errf(path, "bad text template %q: %s (it may use {{.%s}})", src, msg, strings.Join(names, "}}, {{."))
		return nil
	}
	return &Text{Source: src, tmpl: t}
}

// attrs checks a template's attributes (or facts) in name order.
func (v *validator) attrs(path string, in map[string]fileAttr, known []Attr) []Attr {
	var out []Attr
	names := slices.Sorted(maps.Keys(in))
	for _, name := range names {
		p := path + "." + name
		fa := in[name]
		if !idPattern.MatchString(name) || name == "case" || strings.Contains(name, "-") {
			v.errf(p, "invalid attribute name %q: use lower-case letters, digits and '_' (and not \"case\")", name)
			continue
		}
		if _, dup := findAttr(known, name); dup {
			v.errf(p, "%q is already an attribute of this template", name)
			continue
		}
		a := Attr{Name: name}
		n := 0
		if fa.Amount.set {
			n++
			a.Kind = AttrAmount
			a.Amount = v.amount(p+".amount", fa.Amount)
		}
		if fa.OneOf.set {
			n++
			a.Choices = v.choices(p+".one_of", fa.OneOf)
			if a.Kind == "" {
				a.Kind = AttrChoice
			}
		}
		if fa.Text != "" {
			n++
			if a.Kind == "" {
				a.Kind = AttrText
			}
		}
		if fa.Record != "" {
			n++
			a.Kind, a.Record = AttrRecord, fa.Record
		}
		if n != 1 {
			v.errf(p, "give exactly one of amount, one_of, text and record")
			if n == 0 {
				continue
			}
			// Kept with one of its kinds, so that its uses are not reported as well.
		}
		out = append(out, a)
	}
	// Text templates may use the attributes known before this list (a
	// fact's text, the case's attributes) and this list's amounts and
	// categories, which are drawn before its texts are rendered; not
	// another text of this list, which may not be rendered yet.
	all := slices.Clone(known)
	for _, a := range out {
		if a.Kind != AttrText {
			all = append(all, a)
		}
	}
	for i := range out {
		if out[i].Kind == AttrText {
			out[i].Text = v.compileText(path+"."+out[i].Name+".text", in[out[i].Name].Text, all)
		}
	}
	return out
}

// notAmount says why name is not an amount attribute in list ("" when it
// is one), naming the amount attributes there are.
func notAmount(list []Attr, name string) string {
	var amounts []string
	for _, a := range list {
		if a.Kind == AttrAmount {
			amounts = append(amounts, a.Name)
		}
	}
	have := "it has no amount attribute"
	if len(amounts) > 0 {
		have = "its amount attributes are " + strings.Join(amounts, ", ")
	}
	a, ok := findAttr(list, name)
	switch {
	case !ok:
		return "no such attribute; " + have
	case a.Kind != AttrAmount:
		kind := "one_of"
		if a.Kind == AttrText {
			kind = "text"
		}
		return fmt.Sprintf("it is a %s attribute, not an amount; %s", kind, have)
	}
	return ""
}

func findAttr(list []Attr, name string) (*Attr, bool) {
	for i := range list {
		if list[i].Name == name {
			return &list[i], true
		}
	}
	return nil, false
}

func (v *validator) choices(path string, c fileChoices) []Choice {
	var out []Choice
	if c.Weights != nil {
		for _, val := range slices.Sorted(maps.Keys(c.Weights)) {
			w := c.Weights[val]
			if w < 0 {
				v.errf(path+"."+val, "weights must not be negative, got %d", w)
			}
			out = append(out, Choice{Value: val, Weight: w})
		}
	} else {
		seen := map[string]bool{}
		for i, val := range c.Values {
			if seen[val] {
				v.errf(fmt.Sprintf("%s[%d]", path, i), "duplicate value %q", val)
			}
			seen[val] = true
			out = append(out, Choice{Value: val, Weight: 1})
		}
	}
	total, negative := 0, false
	for _, ch := range out {
		total += ch.Weight
		negative = negative || ch.Weight < 0
	}
	if total <= 0 && !negative { // a negative weight is reported as such, above
		v.errf(path, "needs at least one value with a positive weight")
	}
	return out
}

// route checks a routing by attribute to IDs of kind defined in ids.
func (v *validator) route(path string, r *fileRoute, attrs []Attr, kind string, ids map[string]string) *Route {
	if r == nil {
		return nil
	}
	a, ok := findAttr(attrs, r.Attribute)
	switch {
	case r.Attribute == "":
		v.errf(path+".attribute", "missing attribute to route by")
		return nil
	case !ok:
		v.errf(path+".attribute", "unknown attribute %q", r.Attribute)
		return nil
	case a.Kind != AttrChoice:
		v.errf(path+".attribute", "route by a one_of attribute; %q is an %s attribute", r.Attribute, a.Kind)
		return nil
	}
	for _, val := range slices.Sorted(maps.Keys(r.Map)) {
		if !slices.ContainsFunc(a.Choices, func(c Choice) bool { return c.Value == val }) {
			v.errf(path+".map."+val, "%q is not a value of attribute %s", val, r.Attribute)
		}
		v.ref(path+".map."+val, kind, r.Map[val], ids)
	}
	return &Route{Attribute: r.Attribute, Map: maps.Clone(r.Map)}
}

// cases checks the case templates and builds them into w.
func (v *validator) cases(f *file, w *World, r *refs) {
	if len(f.Cases) > 0 && !v.needs(2, "cases", "cases") {
		return
	}
	cal := &w.Calendar
	seen := map[string]string{}
	r.cases = map[string]string{}
	for i := range f.Cases {
		fc := &f.Cases[i]
		p := fmt.Sprintf("cases[%d]", i)
		v.checkID(p+".id", "case template", fc.ID, seen)
		r.cases[fc.ID] = p
		c := CaseTemplate{ID: fc.ID, Queue: fc.Queue, Team: fc.Team}
		c.Attrs = v.attrs(p+".attributes", fc.Attributes, nil)
		c.Facts = v.attrs(p+".facts", fc.Facts, c.Attrs)
		for _, a := range append(slices.Clone(c.Attrs), c.Facts...) {
			if a.Kind == AttrRecord && r.types[a.Record] == nil {
				v.errf(p+".attributes."+a.Name+".record", "unknown record type %q", a.Record)
			}
		}
		all := append(slices.Clone(c.Attrs), c.Facts...)
		title := fc.Title
		if title == "" {
			title = fc.ID + " {{.case}}"
		}
		c.Title = v.compileText(p+".title", title, c.Attrs)
		v.ref(p+".queue", "queue", fc.Queue, r.queues)
		c.QueueBy = v.route(p+".queue_by", fc.QueueBy, c.Attrs, "queue", r.queues)
		if fc.Team != "" {
			v.ref(p+".team", "team", fc.Team, r.teams)
		}
		if fc.Value != nil {
			v.finite(p+".value", fc.Value)
			v.nonNegative(p+".value", fc.Value)
			c.Value = *fc.Value
		}
		if fc.Deadline != "" {
			c.Deadline, _ = v.duration(p+".deadline", fc.Deadline, cal.DayLength(), true)
		}
		// Priority: weights or an expression.
		if fc.Priority.Expr != "" {
			c.PriorityExpr = v.compileExpr(p+".priority", fc.Priority.Expr, "int", c.Attrs)
			if !fc.SLA.isMap { // else caseSLA tries it, with its results
				v.tryExpr(p+".priority", c.PriorityExpr, c.Attrs, nil)
			}
		}
		for _, pr := range slices.Sorted(maps.Keys(fc.Priority.Weights)) {
			wt := fc.Priority.Weights[pr]
			if wt < 0 {
				v.errf(p+".priority", "weights must not be negative, got %d for priority %d", wt, pr)
			}
			c.Priority = append(c.Priority, Weighted{Priority: pr, Weight: wt})
		}
		v.caseSLA(p+".sla", fc, &c, cal)
		v.caseFacts(p, fc, &c, all, r)
		v.caseSteps(p, fc, &c, all, r, cal)
		v.caseOpen(p+".open", fc.Open, &c, r)
		w.Cases = append(w.Cases, c)
	}
}

// caseSLA checks a template's SLA: one duration, or one per priority that
// covers every priority its weights can draw.
func (v *validator) caseSLA(path string, fc *fileCase, c *CaseTemplate, cal *clock.Calendar) {
	s := fc.SLA
	switch {
	case !s.isMap && s.Fixed == "":
		return
	case !s.isMap:
		c.SLA, _ = v.duration(path, s.Fixed, cal.DayLength(), true)
		return
	}
	c.SLAByPriority = map[int]clock.Duration{}
	for _, pr := range slices.Sorted(maps.Keys(s.byPriority)) {
		if d, ok := v.duration(fmt.Sprintf("%s.%d", path, pr), s.byPriority[pr], cal.DayLength(), true); ok {
			c.SLAByPriority[pr] = d
		}
	}
	lists := make([]string, 0, len(s.byPriority))
	for _, pr := range slices.Sorted(maps.Keys(s.byPriority)) {
		lists = append(lists, fmt.Sprint(pr))
	}
	missing := func(pr int, why string) {
		if _, ok := s.byPriority[pr]; !ok {
			v.errf(path, "the SLA by priority has no entry for priority %d, which %s (it lists %s)", pr, why, strings.Join(lists, ", "))
		}
	}
	switch {
	case fc.Priority.Expr != "":
		// An expression whose results are integers written in it (a
		// ternary of them) gives those; one that computes its result, any
		// priority. A bad one is reported already.
		if prs, ok := c.PriorityExpr.literals(); ok {
			for _, pr := range prs {
				missing(pr, "the priority expression can give")
			}
			v.tryExpr(strings.TrimSuffix(path, ".sla")+".priority", c.PriorityExpr, c.Attrs, nil)
		} else {
			// One that computes it: what it gives for the probes.
			v.tryExpr(strings.TrimSuffix(path, ".sla")+".priority", c.PriorityExpr, c.Attrs, func(out any) string {
				if pr, ok := out.(int); ok {
					if _, ok := s.byPriority[pr]; !ok {
						return fmt.Sprintf("gives priority %d, which the SLA by priority has no entry for (it lists %s)", pr, strings.Join(lists, ", "))
					}
				}
				return ""
			})
		}
	case len(c.Priority) == 0:
		missing(0, "every case of this template has: it draws no priority")
	}
	for _, wt := range c.Priority {
		if wt.Weight > 0 {
			missing(wt.Priority, "the template's priority weights can draw")
		}
	}
}

// caseSteps checks a template's steps: ids, roles or NPCs, dependencies
// (within the template, no cycle), conditions, approvals and charges.
func (v *validator) caseSteps(p string, fc *fileCase, c *CaseTemplate, all []Attr, r *refs, cal *clock.Calendar) {
	if len(fc.Steps) == 0 {
		v.errf(p+".steps", "a case template needs at least one step")
		return
	}
	ids := map[string]string{}
	for j := range fc.Steps {
		s := &fc.Steps[j]
		sp := fmt.Sprintf("%s.steps[%d]", p, j)
		v.checkID(sp+".id", "step", s.ID, ids)
	}
	for j := range fc.Steps {
		s := &fc.Steps[j]
		sp := fmt.Sprintf("%s.steps[%d]", p, j)
		st := CaseStep{ID: s.ID, Title: s.Title, Role: s.Role, Skill: s.Skill, Deps: slices.Clone(s.Deps), Chain: s.Approval, Charge: s.Charge, NPC: s.NPC}
		if st.Title == "" {
			st.Title = s.ID
		}
		switch {
		case s.NPC != "":
			if !v.ref(sp+".npc", "member", s.NPC, r.members) {
				break
			}
			if _, isNPC := r.npcKnows[s.NPC]; !isNPC {
				v.errf(sp+".npc", "%s is not an NPC: only an NPC performs a step when asked", s.NPC)
				break
			}
			if s.Role != "" || s.RoleBy != nil {
				v.errf(sp+".role", "a step an NPC performs takes the NPC's role; give npc or role, not both")
			}
			st.Role = r.memberRole[s.NPC]
			if s.Answer == "" {
				v.errf(sp+".answer", "missing answer: what %s replies when it has performed the step", s.NPC)
			} else {
				st.Answer = v.compileText(sp+".answer", s.Answer, all)
			}
			if s.Effort.set {
				v.errf(sp+".effort", "a step an NPC performs takes its reply latency, not an effort")
			}
		default:
			if s.Answer != "" {
				v.errf(sp+".answer", "only a step an NPC performs has an answer")
			}
			st.RoleBy = v.route(sp+".role_by", s.RoleBy, c.Attrs, "role", r.roles)
			if v.ref(sp+".role", "role", s.Role, r.roles) {
				v.stepRole(sp+".role", s.ID, s.Role, c, caseQueues(c, st.RoleBy, ""), r)
			}
			if st.RoleBy != nil {
				for _, val := range slices.Sorted(maps.Keys(st.RoleBy.Map)) {
					if role := st.RoleBy.Map[val]; r.roles[role] != "" {
						v.stepRole(sp+".role_by.map."+val, s.ID, role, c, caseQueues(c, st.RoleBy, val), r)
					}
				}
			}
			st.Effort = v.dist(sp+".effort", s.Effort, cal, true)
		}
		if s.Skill != "" && s.NPC != "" {
			v.errf(sp+".skill", "a step an NPC performs needs no skill")
		} else if s.RoleBy == nil {
			v.skillHeld(sp+".skill", "step", s.ID, s.Role, s.Skill)
		}
		for k, d := range s.Deps {
			if ids[d] == "" {
				v.errf(fmt.Sprintf("%s.deps[%d]", sp, k), "unknown step %q in this template", d)
			} else if d == s.ID {
				v.errf(fmt.Sprintf("%s.deps[%d]", sp, k), "step %q depends on itself", d)
			}
		}
		if s.When != "" {
			st.When = v.compileExpr(sp+".when", s.When, "bool", c.Attrs)
			v.tryExpr(sp+".when", st.When, c.Attrs, nil)
		}
		if s.Value != nil {
			v.finite(sp+".value", s.Value)
			v.nonNegative(sp+".value", s.Value)
			st.Value = *s.Value
		}
		if s.Approval != "" && s.NPC != "" {
			// The NPC completes the step when asked and never asks for an
			// approval: its completion would be refused, over and over.
			v.errf(sp+".approval", "a step an NPC performs cannot need an approval: the NPC does not ask for one")
		} else if s.Approval != "" && v.ref(sp+".approval", "approval chain", s.Approval, r.chains) {
			attr := r.chainAttr[s.Approval]
			switch {
			case attr != "":
				if why := notAmount(c.Attrs, attr); why != "" {
					v.errf(sp+".approval", "chain %s reads attribute %q, which template %s cannot give: %s", s.Approval, attr, c.ID, why)
				}
			case s.Charge == "":
				v.errf(sp+".approval", "chain %s reads no attribute and the step charges nothing: there is no amount to approve", s.Approval)
			}
		}
		if s.Charge != "" {
			if why := notAmount(c.Attrs, s.Charge); why != "" {
				v.errf(sp+".charge", "cannot charge %q: %s", s.Charge, why)
			}
		}
		st.Outcome = v.outcome(sp+".outcome", s.Outcome, c, all, r)
		v.outcomeKinds(sp, s, &st, c, all, r)
		st.Meeting = v.meeting(sp+".meeting", s.Meeting, c, r, cal)
		c.Steps = append(c.Steps, st)
	}
	// Cycles among the steps.
	state := map[string]int{}
	var path []string
	var visit func(id string) bool
	byID := map[string]*CaseStep{}
	for i := range c.Steps {
		byID[c.Steps[i].ID] = &c.Steps[i]
	}
	visit = func(id string) bool {
		switch state[id] {
		case 1:
			i := slices.Index(path, id)
			// Reported at the dependency that closes the cycle, as a project's is.
			from := path[len(path)-1]
			v.errf(fmt.Sprintf("%s.deps[%d]", strings.TrimSuffix(ids[from], ".id"), slices.Index(byID[from].Deps, id)),
				"dependency cycle: %s", strings.Join(append(path[i:], id), " -> "))
			return false
		case 2:
			return true
		}
		state[id] = 1
		path = append(path, id)
		if s := byID[id]; s != nil {
			for _, d := range s.Deps {
				if byID[d] != nil && d != id && !visit(d) {
					return false
				}
			}
		}
		path = path[:len(path)-1]
		state[id] = 2
		return true
	}
	for _, s := range c.Steps {
		if !visit(s.ID) {
			break
		}
	}
	// A case is done when its last required step is: at least one step must always apply.
	always := slices.ContainsFunc(c.Steps, func(s CaseStep) bool { return s.When == nil })
	if !always && len(c.Steps) > 0 {
		v.errf(p+".steps", "every step has a condition: a case whose conditions all fail would have nothing to do")
	}
}

// stepRole checks that a step's role (or one its routing picks) can do
// it: an agent seat holds the role, and it serves every queue a case of
// the template may be in (only a role serving a task's queue may claim it).
func (v *validator) stepRole(path, step, role string, c *CaseTemplate, queues []string, r *refs) {
	if !r.agentHeld[role] {
		v.errf(path, "no agent seat holds role %q: give the step to an NPC with npc", role)
		return
	}
	for _, q := range queues {
		if _, ok := r.servedBy[q]; ok && !slices.Contains(r.servedBy[q], role) {
			v.errf(path, "step %q needs role %q, which does not serve queue %q", step, role, q)
			return
		}
	}
}

// caseQueues are the queues a case of template c may be in when its step
// takes a role from routing roleBy by value val ("" for the step's default
// role). When the queue and the role are routed by the same attribute,
// the value that picks the role picks the queue too; otherwise any queue
// the template routes to may come with it.
func caseQueues(c *CaseTemplate, roleBy *Route, val string) []string {
	add := func(qs []string, q string) []string {
		if !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
		return qs
	}
	if c.QueueBy != nil && roleBy != nil && c.QueueBy.Attribute == roleBy.Attribute {
		if val != "" {
			return []string{c.QueueBy.Pick(map[string]any{roleBy.Attribute: val}, c.Queue)}
		}
		// The default role: the values the role routing leaves alone.
		var qs []string
		if a, ok := findAttr(c.Attrs, roleBy.Attribute); ok {
			for _, ch := range a.Choices {
				if _, mapped := roleBy.Map[ch.Value]; !mapped {
					qs = add(qs, c.QueueBy.Pick(map[string]any{roleBy.Attribute: ch.Value}, c.Queue))
				}
			}
		}
		return qs
	}
	qs := []string{c.Queue}
	if c.QueueBy != nil {
		for _, v := range slices.Sorted(maps.Keys(c.QueueBy.Map)) {
			qs = add(qs, c.QueueBy.Map[v])
		}
	}
	return qs
}

// caseOpen checks who may open cases of a template.
func (v *validator) caseOpen(path string, fo *fileOpen, c *CaseTemplate, r *refs) {
	if fo == nil {
		return
	}
	o := &OpenRule{Quota: fo.Quota, Bounds: map[string]Bound{}}
	if len(fo.Roles) == 0 {
		v.errf(path+".roles", "name the roles whose members may open these cases")
	}
	for i, role := range fo.Roles {
		if v.ref(fmt.Sprintf("%s.roles[%d]", path, i), "role", role, r.roles) {
			o.Roles = append(o.Roles, role)
		}
	}
	if fo.Quota < 0 {
		v.errf(path+".quota", "quota must not be negative, got %d", fo.Quota)
	}
	for _, name := range slices.Sorted(maps.Keys(fo.Bounds)) {
		b := fo.Bounds[name]
		bp := path + ".bounds." + name
		if why := notAmount(c.Attrs, name); why != "" {
			v.errf(bp, "cannot bound %q: %s", name, why)
			continue
		}
		a, _ := findAttr(c.Attrs, name)
		lo, hi := a.Amount.Range()
		if b.Min != nil {
			lo = *b.Min
		}
		if b.Max != nil {
			hi = *b.Max
		}
		if hi < lo {
			v.errf(bp+".max", "max (%d) is less than min (%d)", hi, lo)
		}
		o.Bounds[name] = Bound{Min: lo, Max: hi}
	}
	// Amounts without bounds are bounded by their distribution's range.
	for _, a := range c.Attrs {
		if _, ok := o.Bounds[a.Name]; !ok && a.Kind == AttrAmount {
			lo, hi := a.Amount.Range()
			o.Bounds[a.Name] = Bound{Min: lo, Max: hi}
		}
	}
	c.Open = o
}

// Range is the span of amounts a member may give for a distribution: its
// fixed value, its uniform range, or from 0 to ten times its mean.
func (d Dist) Range() (lo, hi int64) {
	switch d.Kind {
	case "fixed":
		return d.Fixed, d.Fixed
	case "uniform":
		return d.Min, d.Max
	case "exp":
		return 0, 10 * d.Mean
	}
	return 0, 0
}

// separation checks the separation-of-duties rules.
func (v *validator) separation(f *file, w *World, r *refs) {
	if len(f.Separation) > 0 && !v.needs(2, "separation", "separation rules") {
		return
	}
	seen := map[string]string{}
	for i, fs := range f.Separation {
		p := fmt.Sprintf("separation[%d]", i)
		v.checkID(p+".id", "separation rule", fs.ID, seen)
		if !v.ref(p+".template", "case template", fs.Template, r.cases) {
			continue
		}
		c, _ := w.CaseTemplate(fs.Template)
		if c == nil {
			continue
		}
		steps := func(field string, list []string) {
			for j, s := range list {
				if _, ok := c.Step(s); !ok {
					v.errf(fmt.Sprintf("%s.%s[%d]", p, field, j), "template %s has no step %q", c.ID, s)
				}
			}
		}
		steps("did", fs.Did)
		steps("not_do", fs.NotDo)
		steps("not_approve", fs.NotApprove)
		steps("distinct", fs.Distinct)
		switch {
		case len(fs.Distinct) > 0 && (len(fs.Did) > 0 || len(fs.NotDo) > 0 || len(fs.NotApprove) > 0):
			v.errf(p+".distinct", "a rule is either distinct (four eyes) or did with not_do/not_approve, not both")
		case len(fs.Distinct) == 1:
			v.errf(p+".distinct", "distinct needs at least two steps")
		case len(fs.Distinct) == 0 && len(fs.Did) == 0:
			v.errf(p+".did", "name the steps whose doer the rule restricts (did), or give distinct")
		case len(fs.Distinct) == 0 && len(fs.NotDo) == 0 && len(fs.NotApprove) == 0:
			v.errf(p+".not_do", "name what the doer of the did steps may not do (not_do) or approve (not_approve)")
		}
		for j, s := range fs.NotApprove {
			if st, ok := c.Step(s); ok && st.Chain == "" {
				v.errf(fmt.Sprintf("%s.not_approve[%d]", p, j), "step %s needs no approval", s)
			}
		}
		w.Separation = append(w.Separation, Separation{ID: fs.ID, Template: fs.Template, Did: fs.Did, NotDo: fs.NotDo, NotApprove: fs.NotApprove, Distinct: fs.Distinct})
	}
}
