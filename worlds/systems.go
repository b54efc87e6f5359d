package worlds

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	exprast "github.com/expr-lang/expr/ast"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// This file reads the business systems of a world (format version 2):
// systems holding typed records (listed in the file or generated per seed,
// with the mess real data has: copies in another system that are stale or
// duplicated), who may read and write them by role, the policy text that
// says which system wins when they disagree, and the outcomes case steps
// must leave behind on them.

// fileSystem is a business system as the world file writes it.
type fileSystem struct {
	ID     string           `yaml:"id"`
	Title  string           `yaml:"title"`
	Read   []string         `yaml:"read"`   // roles that may get and search its records
	Write  []string         `yaml:"write"`  // roles that may update them
	Create []string         `yaml:"create"` // roles that may create records
	Delete []string         `yaml:"delete"` // roles that may delete records
	Types  []fileRecordType `yaml:"types"`
}

// fileRecordType is a record type of a system.
type fileRecordType struct {
	ID       string                 `yaml:"id"`
	Fields   map[string]fileField   `yaml:"fields"`
	Records  []map[string]fileValue `yaml:"records"`
	Generate *fileGenerate          `yaml:"generate"`
	Copy     *fileCopy              `yaml:"copy"`
	Text     string                 `yaml:"text"` // a record in words: a text template over its fields and {{.id}}
}

// fileValue is a field's value in a listed record: a text, a number, a
// bool or a list, checked against the field's type.
type fileValue struct{ v any }

// UnmarshalYAML keeps the value as decoded.
func (x *fileValue) UnmarshalYAML(n ast.Node) error { return yaml.NodeToValue(n, &x.v) }

// fileField is a typed field of a record type.
type fileField struct {
	Type   string   `yaml:"type"`
	Values []string `yaml:"values"` // enum: its values
	To     string   `yaml:"to"`     // reference: the record type it names
}

// fileGenerate draws records per seed.
type fileGenerate struct {
	Count  int                 `yaml:"count"`
	Prefix string              `yaml:"prefix"` // ids are <prefix>-<n>; default the type's id
	Fields map[string]fileAttr `yaml:"fields"`
}

// fileCopy makes the records of a type copies of another system's records.
type fileCopy struct {
	Of         string   `yaml:"of"`         // the record type copied
	Key        string   `yaml:"key"`        // the reference field naming the original
	Fields     []string `yaml:"fields"`     // the fields copied
	Stale      float64  `yaml:"stale"`      // share of copies with one copied value out of date
	Duplicates float64  `yaml:"duplicates"` // share of originals copied twice (the second copy stale)
}

// filePolicy is the world's policy text and the precedence of its systems.
type filePolicy struct {
	Text       string   `yaml:"text"`
	Precedence []string `yaml:"precedence"`
}

// fileOutcome is what a case step must leave behind.
type fileOutcome struct {
	Record string            `yaml:"record"` // a record attribute of the case naming the record
	Set    map[string]string `yaml:"set"`    // field -> expression of its expected value
}

// Field types.
const (
	FieldText      = "text"
	FieldInteger   = "integer"
	FieldMoney     = "money" // whole currency units, an integer
	FieldDateTime  = "date-time"
	FieldEnum      = "enum"
	FieldBool      = "bool"
	FieldReference = "reference"
	FieldList      = "list" // a list of texts
)

var fieldTypes = []string{FieldText, FieldInteger, FieldMoney, FieldDateTime, FieldEnum, FieldBool, FieldReference, FieldList}

// MaxRecords bounds the records of a session's systems, copies included.
const MaxRecords = 300_000

// AttrRecord is a case attribute naming a record of a type, drawn per case.
const AttrRecord = "record"

// System is a business system: its record types and who may use them.
type System struct {
	ID, Title                   string
	Read, Write, Create, Delete []string // roles
	Types                       []RecordType
}

// RecordType is a kind of record of a system.
type RecordType struct {
	ID     string
	System string
	Fields []Field // by name
	// Records are the ones the file lists.
	Records  []Record
	Generate *RecordGen
	Copy     *Copy
	// Text renders a record in words for language models (nil: none).
	Text *Text
}

// Field is a typed field.
type Field struct {
	Name, Type string
	Values     []string // enum
	To         string   // reference
}

// RecordGen draws Count records per seed.
type RecordGen struct {
	Count  int
	Prefix string
	Fields []Attr // drawn like case attributes; a record attribute draws a reference
}

// ID is the ID of the nth record the block makes (from 1): PREFIX-n.
func (g *RecordGen) ID(n int) string { return g.Prefix + "-" + strconv.Itoa(n) }

// Copy says a type's records copy fields of another type's records.
type Copy struct {
	Of, Key           string
	Fields            []string
	Stale, Duplicates float64
}

// Record is one record: its type, id and field values (strings, int64,
// bool, []string), as events and snapshots store them.
type Record struct {
	Type   string
	ID     string
	Fields map[string]any
}

// Policy is the world's policy text and the precedence of its systems
// when their records disagree (most authoritative first).
type Policy struct {
	Text       string
	Precedence []string
}

// Outcome is what a case step must leave behind: field values on the
// record a record attribute names, each computed by an expression over
// the case's attributes, facts and that record's authoritative fields
// (record.<field>) when the case opens.
type Outcome struct {
	Attr string // the record attribute
	Type string // its record type
	Set  []OutcomeField
}

// OutcomeField is one expected field value.
type OutcomeField struct {
	Field string
	Expr  *Expr
}

// Render is the record (id, fields) in words, or "" when its type has no text.
func (t *RecordType) Render(id string, fields map[string]any) string {
	if t.Text == nil {
		return ""
	}
	vars := map[string]any{"id": id}
	for k, x := range fields { // order: each entry is copied on its own
		vars[k] = x
	}
	return t.Text.Render(vars)
}

// RecordType returns the record type with the given ID.
func (w *World) RecordType(id string) (*RecordType, bool) {
	for i := range w.Systems {
		for j := range w.Systems[i].Types {
			if w.Systems[i].Types[j].ID == id {
				return &w.Systems[i].Types[j], true
			}
		}
	}
	return nil, false
}

// System returns the system with the given ID.
func (w *World) System(id string) (*System, bool) {
	for i := range w.Systems {
		if w.Systems[i].ID == id {
			return &w.Systems[i], true
		}
	}
	return nil, false
}

// Field returns the field with the given name.
func (t *RecordType) Field(name string) (*Field, bool) {
	for i := range t.Fields {
		if t.Fields[i].Name == name {
			return &t.Fields[i], true
		}
	}
	return nil, false
}

// Zero is the value of a field no one has set.
func (f *Field) Zero() any {
	switch f.Type {
	case FieldInteger, FieldMoney:
		return int64(0)
	case FieldBool:
		return false
	case FieldList:
		return []string{}
	case FieldEnum:
		if len(f.Values) > 0 {
			return f.Values[0]
		}
	}
	return ""
}

// Normalize converts x (from a world file, an agent's action or an
// expression) to the field's stored form, or says why it does not fit.
func (f *Field) Normalize(x any) (any, error) {
	switch f.Type {
	case FieldInteger, FieldMoney:
		switch n := x.(type) {
		case int:
			return int64(n), nil
		case int64:
			return n, nil
		case uint64:
			if n <= math.MaxInt64 {
				return int64(n), nil
			}
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int64(n), nil
			}
		case string:
			if i, err := strconv.ParseInt(n, 10, 64); err == nil {
				return i, nil
			}
		}
		return nil, fmt.Errorf("%s needs a whole number, got %v", f.Name, x)
	case FieldBool:
		if b, ok := x.(bool); ok {
			return b, nil
		}
		if s, ok := x.(string); ok && (s == "true" || s == "false") {
			return s == "true", nil
		}
		return nil, fmt.Errorf("%s needs true or false, got %v", f.Name, x)
	case FieldList:
		switch l := x.(type) {
		case []string:
			return slices.Clone(l), nil
		case []any:
			out := make([]string, len(l))
			for i, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s needs a list of texts, got %v", f.Name, e)
				}
				out[i] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("%s needs a list of texts, got %v", f.Name, x)
	}
	s, ok := x.(string)
	if !ok {
		return nil, fmt.Errorf("%s needs a text, got %v", f.Name, x)
	}
	switch f.Type {
	case FieldEnum:
		if !slices.Contains(f.Values, s) {
			return nil, fmt.Errorf("%s is one of %s, got %q", f.Name, strings.Join(f.Values, ", "), s)
		}
	case FieldDateTime:
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, fmt.Errorf("%s needs an RFC 3339 time such as 2026-02-02T09:00:00Z, got %q", f.Name, s)
		}
		return t.UTC().Format(time.RFC3339), nil
	}
	return s, nil
}

// systems checks the systems and the policy and builds them into w.
func (v *validator) systems(f *file, w *World, r *refs) {
	r.types = map[string]*RecordType{}
	if len(f.Systems) == 0 && f.Policy == nil {
		return
	}
	if !v.needs(2, "systems", "systems") {
		return
	}
	seenSys, seenType := map[string]string{}, map[string]string{}
	for i := range f.Systems {
		fs := &f.Systems[i]
		p := fmt.Sprintf("systems[%d]", i)
		v.checkID(p+".id", "system", fs.ID, seenSys)
		s := System{ID: fs.ID, Title: fs.Title}
		for _, list := range []struct {
			name string
			in   []string
			out  *[]string
		}{{"read", fs.Read, &s.Read}, {"write", fs.Write, &s.Write}, {"create", fs.Create, &s.Create}, {"delete", fs.Delete, &s.Delete}} {
			for j, role := range list.in {
				if v.ref(fmt.Sprintf("%s.%s[%d]", p, list.name, j), "role", role, r.roles) {
					*list.out = append(*list.out, role)
				}
			}
		}
		if len(fs.Types) == 0 {
			v.errf(p+".types", "a system needs at least one record type")
		}
		for j := range fs.Types {
			ft := &fs.Types[j]
			tp := fmt.Sprintf("%s.types[%d]", p, j)
			v.checkID(tp+".id", "record type", ft.ID, seenType)
			t := RecordType{ID: ft.ID, System: fs.ID}
			for _, name := range slices.Sorted(maps.Keys(ft.Fields)) {
				ff := ft.Fields[name]
				fp := tp + ".fields." + name
				if !idPattern.MatchString(name) || strings.Contains(name, "-") || name == "id" {
					v.errf(fp, "invalid field name %q: use lower-case letters, digits and '_' (and not \"id\")", name)
					continue
				}
				fd := Field{Name: name, Type: ff.Type, Values: ff.Values, To: ff.To}
				switch {
				case !slices.Contains(fieldTypes, ff.Type):
					v.errf(fp+".type", "unknown field type %q (expected one of %s)", ff.Type, strings.Join(fieldTypes, ", "))
				case ff.Type == FieldEnum && len(ff.Values) == 0:
					v.errf(fp+".values", "an enum field needs its values")
				case ff.Type != FieldEnum && len(ff.Values) > 0:
					v.errf(fp+".values", "only an enum field has values")
				case ff.Type == FieldReference && ff.To == "":
					v.errf(fp+".to", "a reference field names the record type it refers to (to)")
				case ff.Type != FieldReference && ff.To != "":
					v.errf(fp+".to", "only a reference field has to")
				}
				t.Fields = append(t.Fields, fd)
			}
			if ft.Text != "" {
				attrs := []Attr{{Name: "id", Kind: AttrText}}
				for _, f := range t.Fields {
					attrs = append(attrs, Attr{Name: f.Name, Kind: AttrText})
				}
				t.Text = v.compileText(tp+".text", ft.Text, attrs)
			}
			s.Types = append(s.Types, t)
		}
		w.Systems = append(w.Systems, s)
	}
	for i := range w.Systems {
		for j := range w.Systems[i].Types {
			t := &w.Systems[i].Types[j]
			r.types[t.ID] = t
			if r.creators == nil {
				r.creators = map[string][]string{}
			}
			r.creators[t.ID] = w.Systems[i].Create
		}
	}
	// References, listed records, generation and copies, once every type is known.
	ids := map[string]map[string]bool{} // type -> listed record ids
	for i := range f.Systems {
		for j := range f.Systems[i].Types {
			ft := &f.Systems[i].Types[j]
			tp := fmt.Sprintf("systems[%d].types[%d]", i, j)
			t := &w.Systems[i].Types[j]
			for _, fd := range t.Fields {
				if fd.Type == FieldReference && fd.To != "" && r.types[fd.To] == nil {
					v.errf(tp+".fields."+fd.Name+".to", "unknown record type %q", fd.To)
				}
			}
			ids[t.ID] = map[string]bool{}
			for k, rec := range ft.Records {
				rp := fmt.Sprintf("%s.records[%d]", tp, k)
				id, _ := rec["id"].v.(string)
				if id == "" {
					v.errf(rp, "a record needs an id")
					continue
				}
				if ids[t.ID][id] {
					v.errf(rp+".id", "duplicate record id %q", id)
				}
				ids[t.ID][id] = true
				out := Record{Type: t.ID, ID: id, Fields: map[string]any{}}
				for _, name := range slices.Sorted(maps.Keys(rec)) {
					if name == "id" {
						continue
					}
					fd, ok := t.Field(name)
					if !ok {
						v.errf(rp+"."+name, "unknown field %q of record type %s (its fields: %s)", name, t.ID, strings.Join(t.fieldNames(), ", "))
						continue
					}
					x, err := fd.Normalize(rec[name].v)
					if err != nil {
						v.errf(rp+"."+name, "%v", err)
						continue
					}
					out.Fields[name] = x
				}
				for _, fd := range t.Fields {
					if _, ok := out.Fields[fd.Name]; !ok {
						out.Fields[fd.Name] = fd.Zero()
					}
				}
				t.Records = append(t.Records, out)
			}
			if ft.Generate != nil {
				g := &RecordGen{Count: ft.Generate.Count, Prefix: ft.Generate.Prefix}
				if g.Prefix == "" {
					g.Prefix = t.ID
				}
				if g.Count <= 0 || g.Count > 10000 {
					v.errf(tp+".generate.count", "generate 1 to 10000 records, got %d", g.Count)
				}
				g.Fields = v.attrs(tp+".generate.fields", ft.Generate.Fields, nil)
				for _, a := range g.Fields {
					fd, ok := t.Field(a.Name)
					ap := tp + ".generate.fields." + a.Name
					switch {
					case !ok:
						v.errf(ap, "unknown field %q of record type %s (its fields: %s)", a.Name, t.ID, strings.Join(t.fieldNames(), ", "))
					case a.Kind == AttrRecord && (fd.Type != FieldReference || fd.To != a.Record):
						v.errf(ap, "field %s is not a reference to %s", a.Name, a.Record)
					case a.Kind == AttrAmount && fd.Type != FieldMoney && fd.Type != FieldInteger:
						v.errf(ap, "field %s is %s: an amount fits money or integer fields", a.Name, fd.Type)
					case a.Kind == AttrChoice && fd.Type == FieldEnum:
						for _, c := range a.Choices {
							if !slices.Contains(fd.Values, c.Value) {
								v.errf(ap, "%q is not a value of enum field %s", c.Value, a.Name)
							}
						}
					}
				}
				t.Generate = g
				// A listed record under an ID the block also makes would
				// be two records of one key (get finds one, search both).
				for k, rec := range ft.Records {
					if id, _ := rec["id"].v.(string); !v.lim.Recorded && generatedID(t, id, true) {
						v.errf(fmt.Sprintf("%s.records[%d].id", tp, k), "record id %q is one the generate block makes too (%s-1 to %s-%d): pick another id, or another prefix", id, g.Prefix, g.Prefix, g.Count)
					}
				}
			}
			if fc := ft.Copy; fc != nil {
				cp := tp + ".copy"
				c := &Copy{Of: fc.Of, Key: fc.Key, Fields: fc.Fields, Stale: fc.Stale, Duplicates: fc.Duplicates}
				of := r.types[fc.Of]
				switch {
				case of == nil:
					v.errf(cp+".of", "unknown record type %q", fc.Of)
				case of.Copy != nil || of.System == t.System:
					v.errf(cp+".of", "a copy is of a record type of another system that is not itself a copy")
				}
				if kf, ok := t.Field(fc.Key); !ok || kf.Type != FieldReference || kf.To != fc.Of {
					v.errf(cp+".key", "key must be a reference field of %s to %s", t.ID, fc.Of)
				}
				for k, name := range fc.Fields {
					fd, ok := t.Field(name)
					var od *Field
					if of != nil {
						od, _ = of.Field(name)
					}
					if !ok || od == nil || fd.Type != od.Type {
						v.errf(fmt.Sprintf("%s.fields[%d]", cp, k), "%q must be a field of both %s and %s, of one type", name, t.ID, fc.Of)
					}
				}
				for _, x := range []struct {
					n string
					p float64
				}{{"stale", fc.Stale}, {"duplicates", fc.Duplicates}} {
					if math.IsNaN(x.p) || x.p < 0 || x.p > 1 {
						v.errf(cp+"."+x.n, "a share from 0 to 1, got %v", x.p)
					}
				}
				t.Copy = c
			}
		}
	}
	// A bound on the records a session draws (copies up to two per original).
	total := 0
	for i := range w.Systems {
		for _, t := range w.Systems[i].Types {
			total += len(t.Records)
			if t.Generate != nil {
				total += t.Generate.Count
			}
		}
	}
	if total > MaxRecords/3 {
		v.errf("systems", "the systems list and generate %d records (with copies up to %d); at most %d", total, 3*total, MaxRecords/3)
	}
	// References of listed records name listed records.
	for i := range w.Systems {
		for j := range w.Systems[i].Types {
			t := &w.Systems[i].Types[j]
			for k, rec := range t.Records {
				for _, fd := range t.Fields {
					ref, _ := rec.Fields[fd.Name].(string)
					if fd.Type != FieldReference || ref == "" || ids[fd.To] == nil {
						continue
					}
					if !ids[fd.To][ref] && !generatedID(r.types[fd.To], ref, !v.lim.Recorded) {
						v.errf(fmt.Sprintf("systems[%d].types[%d].records[%d].%s", i, j, k, fd.Name), "no %s record %q", fd.To, ref)
					}
				}
			}
		}
	}
	if f.Policy != nil {
		w.Policy = &Policy{Text: f.Policy.Text}
		for i, s := range f.Policy.Precedence {
			if v.ref(fmt.Sprintf("policy.precedence[%d]", i), "system", s, seenSys) {
				w.Policy.Precedence = append(w.Policy.Precedence, s)
			}
		}
	}
}

// generatedID reports whether id is one a type's generation makes:
// exactly as it spells them when strict (inv-01 and inv-+1 are not inv-1);
// otherwise as the loader read them before it looked so closely, which a
// recorded world is read by.
func generatedID(t *RecordType, id string, strict bool) bool {
	if t == nil || t.Generate == nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, t.Generate.Prefix+"-"))
	if err != nil || n < 1 || n > t.Generate.Count {
		return false
	}
	if strict {
		return id == t.Generate.ID(n)
	}
	return strings.HasPrefix(id, t.Generate.Prefix+"-")
}

func (t *RecordType) fieldNames() []string {
	out := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		out[i] = f.Name
	}
	return out
}

// outcome checks a case step's outcome.
func (v *validator) outcome(path string, fo *fileOutcome, c *CaseTemplate, all []Attr, r *refs) *Outcome {
	if fo == nil {
		return nil
	}
	a, ok := findAttr(c.Attrs, fo.Record)
	if !ok || a.Kind != AttrRecord {
		v.errf(path+".record", "unknown record attribute %q of template %s", fo.Record, c.ID)
		return nil
	}
	t := r.types[a.Record]
	if t == nil {
		return nil
	}
	o := &Outcome{Attr: fo.Record, Type: t.ID}
	if len(fo.Set) == 0 {
		v.errf(path+".set", "name the fields the step must set, each with the expression of its value")
	}
	for _, name := range slices.Sorted(maps.Keys(fo.Set)) {
		fp := path + ".set." + name
		if _, ok := t.Field(name); !ok {
			v.errf(fp, "unknown field %q of record type %s (its fields: %s)", name, t.ID, strings.Join(t.fieldNames(), ", "))
			continue
		}
		v.refTypes = r.types
		if x := v.compileOutcome(fp, fo.Set[name], all, t); x != nil && v.settable(fp, x, t, name) {
			o.Set = append(o.Set, OutcomeField{Field: name, Expr: x})
		}
	}
	return o
}

// RecordVars is the environment an outcome's expression reads: the case's
// vars, the record's fields as record.<field>, and the fields of the
// records its reference fields name as ref.<field>.<field> (refs: by
// reference field; nil for none).
func RecordVars(vars map[string]any, rec map[string]any, refs map[string]map[string]any) map[string]any {
	env := maps.Clone(vars)
	env["record"] = exprFields(rec)
	ref := map[string]any{}
	for k, fields := range refs { // order: each entry is copied on its own
		ref[k] = exprFields(fields)
	}
	env["ref"] = ref
	return env
}

// exprFields are record fields as expressions read them (integers as int).
func exprFields(rec map[string]any) map[string]any {
	r := map[string]any{}
	for k, x := range rec { // order: each entry is copied on its own
		if n, ok := x.(int64); ok {
			r[k] = int(n)
		} else {
			r[k] = x
		}
	}
	return r
}

// RefFields are the reference fields of t an outcome expression reads
// through ref.<field>.
func (o *Outcome) RefFields(t *RecordType) []string {
	var out []string
	for _, f := range t.Fields {
		if f.Type != FieldReference {
			continue
		}
		for _, s := range o.Set {
			if strings.Contains(s.Expr.Source, "ref."+f.Name+".") {
				out = append(out, f.Name)
				break
			}
		}
	}
	return out
}

// zeroEnv is the variables an outcome's expression over record type t
// sees, each at its type's zero value: what it is compiled against.
func (v *validator) zeroEnv(all []Attr, t *RecordType) map[string]any {
	zero := map[string]any{}
	refs := map[string]map[string]any{}
	for _, f := range t.Fields {
		zero[f.Name] = f.Zero()
		if to := v.refTypes[f.To]; f.Type == FieldReference && to != nil {
			refs[f.Name] = map[string]any{}
			for _, g := range to.Fields {
				refs[f.Name][g.Name] = g.Zero()
			}
		}
	}
	return RecordVars(zeroVars(all), zero, refs)
}

// compileOutcome compiles an outcome expression; a name of record it
// reads must be a field of the record type.
func (v *validator) compileOutcome(path, src string, all []Attr, t *RecordType) *Expr {
	prog, err := expr.Compile(src, expr.Env(v.zeroEnv(all, t)), expr.DisableBuiltin("now"), expr.DisableBuiltin("date"),
		expr.DisableBuiltin("timezone"), expr.DisableBuiltin("duration"))
	if err != nil {
		v.errf(path, "bad expression %q: %s", src, exprError(err))
		return nil
	}
	var bad []string
	exprast.Find(prog.Node(), func(n exprast.Node) bool {
		m, ok := n.(*exprast.MemberNode)
		if !ok {
			return false
		}
		prop, ok2 := m.Property.(*exprast.StringNode)
		if id, ok := m.Node.(*exprast.IdentifierNode); ok && ok2 && id.Value == "record" {
			if _, known := t.Field(prop.Value); !known {
				bad = append(bad, "record "+t.ID+" has no field "+strconv.Quote(prop.Value)+" (its fields: "+strings.Join(t.fieldNames(), ", ")+")")
			}
		}
		if inner, ok := m.Node.(*exprast.MemberNode); ok && ok2 {
			id, ok := inner.Node.(*exprast.IdentifierNode)
			via, ok3 := inner.Property.(*exprast.StringNode)
			if ok && ok3 && id.Value == "ref" {
				f, known := t.Field(via.Value)
				switch {
				case !known || f.Type != FieldReference:
					bad = append(bad, "record "+t.ID+" has no reference field "+strconv.Quote(via.Value))
				case v.refTypes[f.To] != nil:
					if _, known := v.refTypes[f.To].Field(prop.Value); !known {
						bad = append(bad, "record "+f.To+" has no field "+strconv.Quote(prop.Value)+" (its fields: "+strings.Join(v.refTypes[f.To].fieldNames(), ", ")+")")
					}
				}
			}
		}
		return false
	})
	if len(bad) > 0 {
		v.errf(path, "bad expression %q: %s", src, bad[0])
		return nil
	}
	return &Expr{Source: src, prog: prog}
}

// settable reports whether field name of t can hold what x gives, and
// refuses it otherwise: a constant the field refuses (a value not of an
// enum, a word for a number) or a type it cannot take (a number or a truth
// value for a text), in any result x can give (each branch of a condition,
// each side of ??). The verifier expects such a field untouched, which no
// reading of the step says.
func (v *validator) settable(path string, x *Expr, t *RecordType, name string) bool {
	fd, ok := t.Field(name)
	if !ok || v.lim.Recorded {
		return true // a recorded world reads as it did then
	}
	for _, leaf := range results(x.prog.Node(), nil) {
		if !v.fits(path, x, leaf, t, name, fd) {
			return false
		}
	}
	return true
}

// results are the nodes whose value node's value can be: the branches of
// a condition and the sides of ?? (through both), else node itself.
func results(node exprast.Node, out []exprast.Node) []exprast.Node {
	switch n := node.(type) {
	case *exprast.ConditionalNode:
		return results(n.Exp2, results(n.Exp1, out))
	case *exprast.BinaryNode:
		if n.Operator == "??" {
			return results(n.Right, results(n.Left, out))
		}
	}
	return append(out, node)
}

// fits reports whether field name (fd) of t can hold what node, a result
// of x, gives, and refuses it otherwise (see settable).
func (v *validator) fits(path string, x *Expr, node exprast.Node, t *RecordType, name string, fd *Field) bool {
	var lit any
	switch n := node.(type) {
	case *exprast.StringNode:
		lit = n.Value
	case *exprast.IntegerNode:
		lit = n.Value
	case *exprast.FloatNode:
		lit = n.Value
	case *exprast.BoolNode:
		lit = n.Value
	}
	if lit != nil {
		if _, err := fd.Normalize(lit); err != nil {
			v.errf(path, "%s can never be the value of field %s of %s: %v", constText(x, node), name, t.ID, err)
			return false
		}
		return true
	}
	if why := fractionResult(node); why != "" && (fd.Type == FieldInteger || fd.Type == FieldMoney) {
		v.errf(path, "%s gives %s; field %s of %s holds whole numbers, and an expected value with a fraction would expect it unset: cut it off with int(…) or round it with round(…)", x.Source, why, name, t.ID)
		return false
	}
	rt := node.Type()
	if rt == nil {
		return true
	}
	var gives string
	switch rt.Kind() {
	case reflect.String:
		gives = "a text"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		gives = "a number"
	case reflect.Bool:
		gives = "true or false"
	default:
		return true // not known before it runs
	}
	fits := false
	switch fd.Type {
	case FieldInteger, FieldMoney:
		fits = gives != "true or false" // a text may hold a whole number
	case FieldBool:
		fits = gives != "a number"
	case FieldList:
	default:
		fits = gives == "a text"
	}
	if !fits {
		v.errf(path, "%s gives %s; field %s of %s is %s", x.Source, gives, name, t.ID, fd.Type)
	}
	return fits
}

// fractionResult says why node, a result of an outcome's expression, may
// give a number with a fraction ("" when it cannot): a division (expr's
// '/' always divides as fractions do: record.amount / 2 is 2.5 for 5), a
// power, or arithmetic with a fraction written in it (record.amount *
// 0.5). int(…), round(…), floor(…) and ceil(…) give whole numbers.
func fractionResult(node exprast.Node) string {
	switch n := node.(type) {
	case *exprast.BinaryNode:
		switch n.Operator {
		case "/", "**", "^":
			return "a quotient or a power, which may have a fraction"
		case "+", "-", "*":
			for _, side := range []exprast.Node{n.Left, n.Right} {
				if f, ok := side.(*exprast.FloatNode); ok && f.Value != math.Trunc(f.Value) {
					return fmt.Sprintf("a number computed with %v, which may have a fraction", f.Value)
				}
				if why := fractionResult(side); why != "" {
					return why
				}
			}
		}
	case *exprast.UnaryNode:
		return fractionResult(n.Node)
	}
	return ""
}

// constText names the constant node of x: x's source when it is the
// whole expression, else the constant as written.
func constText(x *Expr, node exprast.Node) string {
	if node == x.prog.Node() {
		return x.Source
	}
	return node.String()
}

// Eval evaluates an expression to any value; ok is false when it fails.
func (x *Expr) Eval(vars map[string]any) (any, bool) {
	out, err := expr.Run(x.prog, vars)
	return out, err == nil
}
