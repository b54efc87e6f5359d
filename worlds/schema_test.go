package worlds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/corpsim/corpsim/clock"
)

const schemaURL = "corpsim-world.schema.json"

// mustCompileSchema compiles Schema() as a draft 2020-12 schema, asserting
// formats (date-time, date) as editors do. Compiling checks the schema
// against the draft's metaschema.
func mustCompileSchema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		tb.Fatalf("Schema() is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		tb.Fatalf("AddResource: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		tb.Fatalf("Schema() does not compile: %v", err)
	}
	return sch
}

// yamlInstance reads a world file the way an editor does: YAML to a JSON value.
func yamlInstance(tb testing.TB, src []byte) any {
	tb.Helper()
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		tb.Fatalf("YAMLToJSON: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		tb.Fatalf("UnmarshalJSON: %v", err)
	}
	return v
}

func TestSchemaIsDraft202012(t *testing.T) {
	got := Schema()
	if !json.Valid(got) {
		t.Fatal("Schema() is not valid JSON")
	}
	if !bytes.HasSuffix(got, []byte("}\n")) {
		t.Errorf("Schema() does not end in a newline")
	}
	if again := Schema(); !bytes.Equal(got, again) {
		t.Errorf("Schema() differs between calls")
	}
	got[0] = 'x' // the caller owns the slice
	if Schema()[0] != '{' {
		t.Errorf("Schema() returns shared bytes")
	}

	var head struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(Schema(), &head); err != nil {
		t.Fatal(err)
	}
	if want := "https://json-schema.org/draft/2020-12/schema"; head.Schema != want {
		t.Errorf("$schema: got %q, want %q", head.Schema, want)
	}

	// Validate the schema against the metaschema explicitly, too.
	c := jsonschema.NewCompiler()
	meta, err := c.Compile(head.Schema)
	if err != nil {
		t.Fatalf("compile the metaschema: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.Validate(doc); err != nil {
		t.Errorf("Schema() is not a valid draft 2020-12 schema: %v", err)
	}
	mustCompileSchema(t)
}

func TestSchemaAcceptsShippedWorlds(t *testing.T) {
	sch := mustCompileSchema(t)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("shipped world %s does not match the schema:\n%v", name, err)
			}
		})
	}
}

func TestSchemaAcceptsGeneratedWorlds(t *testing.T) {
	sch := mustCompileSchema(t)
	for _, o := range []GenOptions{
		{},
		{Name: "big", Seed: 7, Teams: 3, Members: 9, Projects: 4, Tasks: 10, Chains: 2, Stagger: 1, Tickets: 2},
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			src := Generate(o)
			mustLoad(t, "generated", src)
			if err := sch.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("generated world does not match the schema:\n%v", err)
			}
		})
	}
}

// TestSchemaAcceptsValidWorlds covers what the shipped worlds do not use.
// Every case must load, so the schema is never stricter than Load here.
func TestSchemaAcceptsValidWorlds(t *testing.T) {
	sch := mustCompileSchema(t)
	tests := []struct {
		name  string
		edits []string
	}{
		{"the tiny world", nil},
		{"scheduled arrivals at instants, a fixed purchase", withSection("arrivals:\n  - {id: a, queue: backlog, process: scheduled, at: [0s, 1d, 2d4h], ticket: {role: engineer, effort: 1h, purchase: 200}}\n")},
		{"scheduled arrivals every day, uniform effort, exponential purchase, negative priority",
			withSection("arrivals:\n  - {id: a, queue: backlog, process: scheduled, every: 1d, at: [], ticket: {role: engineer, effort: {min: 1h, max: 2h}, purchase: {mean: 300}, priority: {-1: 1, 2: 3}}}\n")},
		{"uniform purchase from zero", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: .5h, until: 1.5d, count: 3, ticket: {role: engineer, effort: 1h, purchase: {min: 0, max: 900}, approval: purchases}}\n")},
		{"a change with extra effort without a plus", withSection("interruptions:\n  - {at: 1d, kind: change, task: api, effort: 4h}\n")},
		{"the whole day, any weekday, an offset start", []string{
			`hours: "09:00-17:00"`, `hours: "00:00-24:00"`,
			"[mon, tue, wed, thu, fri]", "[sat, Sun, MON]",
			"2026-01-05T09:00:00Z", "2026-01-05T09:00:00.250+01:00"}},
		{"single-digit hours", []string{`hours: "09:00-17:00"`, `hours: " 9:30 - 17:45 "`}},
		{"RFC 3339 instants where offsets go (version 2)", v2(
			"deadline: 12d", "deadline: 2026-01-21T17:00:00Z",
			"horizon: 15d", "horizon: \"2026-01-26T17:00:00+00:00\"",
			lastTask, lastTask+"arrivals:\n  - {id: a, queue: backlog, process: scheduled, at: [\"2026-01-06T10:30:00Z\", 1d], until: \"2026-01-09T12:00:00.5Z\", ticket: {role: engineer, effort: 1h}}\n"+
				"interruptions:\n  - {at: \"2026-01-10T12:00:00Z\", kind: outage, queue: backlog, for: 1h}\n")},
		{"costs, message latency, a delegation limit, an SLA by priority (version 2)", v2(
			"name: tiny\n", "name: tiny\ncosts: {turn: 2m, claim: 1m, work: 30m, complete: 0s, request_approval: 5m, decide: 5m, message: 1m, handoff: 1m, escalate: 1m}\nmessage_latency: 20m\n",
			lastTask, lastTask+"arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, priority: {1: 1, 2: 1}, sla: {1: 1d, 2: 2h}}}\n"+
				"interruptions:\n  - {at: 1d, kind: leave, member: alice, delegate: bob, for: 2d, delegate_limit: {below: 1000, chains: [purchases]}}\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mustEdit(t, tt.edits...)
			mustLoad(t, "w.yaml", src)
			if err := sch.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("valid world does not match the schema:\n%v", err)
			}
		})
	}
}

// TestSchemaRejectsBrokenWorlds checks mistakes a schema can see. Every
// case must also fail to load: the schema may miss mistakes (references,
// cycles) but must not invent them.
func TestSchemaRejectsBrokenWorlds(t *testing.T) {
	sch := mustCompileSchema(t)
	tests := []struct {
		name  string
		edits []string
		want  string // in the validation error: a location, a field name or a keyword
	}{
		{"unknown top-level field", []string{"name: tiny\n", "name: tiny\ncolour: blue\n"}, "colour"},
		{"unknown task field", []string{"{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead, effort: 1d, owner: alice}"}, "owner"},
		{"unknown queue order", []string{"{id: backlog, served_by: [lead, engineer]}", "{id: backlog, served_by: [lead, engineer], order: lifo}"}, "/queues/0/order"},
		{"queue served by nobody", []string{"{id: backlog, served_by: [lead, engineer]}", "{id: backlog, served_by: []}"}, "served_by"},
		{"horizon without a unit", []string{"horizon: 15d", "horizon: 15"}, "horizon"},
		{"horizon in words", []string{"horizon: 15d", "horizon: 15 days"}, "horizon"},
		{"malformed escalation delay", []string{"{role: lead, above: 500}", "{role: lead, above: 500, escalate_after: soon}"}, "escalate_after"},
		{"negative threshold", []string{"{role: lead, above: 500}", "{role: lead, above: -5}"}, "above"},
		{"task without effort", []string{"{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead}"}, "effort"},
		{"task without role", []string{"{id: spec, role: lead, effort: 1d}", "{id: spec, effort: 1d}"}, "role"},
		{"upper-case id", []string{"{id: bob, name: Bob, role: engineer, team: product}", "{id: Bob, name: Bob, role: engineer, team: product}"}, "Bob"},
		{"missing version", []string{"version: 1\n", ""}, "version"},
		{"unsupported version", []string{"version: 1\n", "version: 3\n"}, "version"},
		{"missing start", []string{"start: 2026-01-05T09:00:00Z\n", ""}, "start"},
		{"start without an offset", []string{"2026-01-05T09:00:00Z", "2026-01-05T09:00:00"}, "start"},
		{"unknown weekday", []string{"[mon, tue, wed, thu, fri]", "[mon, tue, wed, thu, fry]"}, "/calendar/workdays/4"},
		{"working hours in words", []string{`hours: "09:00-17:00"`, `hours: "nine to five"`}, "hours"},
		{"holiday in another format", []string{`["2026-01-19"]`, `["19/01/2026"]`}, "holidays"},
		{"NPC without reply times", []string{"      reply: {min: 1h, max: 6h}\n", "      reply: {min: 1h}\n"}, "max"},
		{"negative budget", []string{"budget: 20000", "budget: -1"}, "budget"},
		{"unknown arrival process", withSection("arrivals:\n  - {id: a, queue: backlog, process: steady, every: 1h, ticket: {role: engineer, effort: 1h}}\n"), "/arrivals/0/process"},
		{"bursty without a burst size", withSection("arrivals:\n  - {id: a, queue: backlog, process: bursty, every: 1d, ticket: {role: engineer, effort: 1h}}\n"), "burst"},
		{"scheduled with both at and every", withSection("arrivals:\n  - {id: a, queue: backlog, process: scheduled, every: 1d, at: [1d], ticket: {role: engineer, effort: 1h}}\n"), "oneOf"},
		{"poisson without a gap", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, ticket: {role: engineer, effort: 1h}}\n"), "every"},
		{"arrival without a ticket", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h}\n"), "ticket"},
		{"ticket effort with mean and min", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: {mean: 1h, min: 10m}}}\n"), "effort"},
		{"ticket effort of the wrong shape", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: [1h]}}\n"), "effort"},
		{"ticket purchase of zero", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, purchase: 0}}\n"), "purchase"},
		{"negative priority weight", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, priority: {1: -2}}}\n"), "priority"},
		{"unknown interruption kind", withSection("interruptions:\n  - {at: 1d, kind: meteor}\n"), "/interruptions/0/kind"},
		{"outage without a length", withSection("interruptions:\n  - {at: 1d, kind: outage, queue: backlog}\n"), "for"},
		{"leave without a member", withSection("interruptions:\n  - {at: 1d, kind: leave, for: 1d}\n"), "member"},
		{"reprioritize without a new value", withSection("interruptions:\n  - {at: 1d, kind: reprioritize, task: api}\n"), "anyOf"},
		{"change without effort", withSection("interruptions:\n  - {at: 1d, kind: change, task: api}\n"), "effort"},
		{"urgent without a ticket", withSection("interruptions:\n  - {at: 1d, kind: urgent, queue: backlog}\n"), "ticket"},
		{"interruption without a time", withSection("interruptions:\n  - {kind: outage, queue: backlog, for: 1h}\n"), "at"},
		{"an instant without a zone", v2(withSection("interruptions:\n  - {at: \"2026-01-06T10:00:00\", kind: outage, queue: backlog, for: 1h}\n")...), "/interruptions/0/at"},
		{"a deadline in words", []string{"deadline: 12d", "deadline: next week"}, "deadline"},
		{"an unknown action cost", v2("name: tiny\n", "name: tiny\ncosts: {lunch: 1h}\n"), "lunch"},
		{"an action cost in words", v2("name: tiny\n", "name: tiny\ncosts: {claim: soon}\n"), "/costs/claim"},
		{"a message latency without a unit", v2("name: tiny\n", "name: tiny\nmessage_latency: 5\n"), "message_latency"},
		{"a negative delegation limit", v2(lastTask, lastTask+"interruptions:\n  - {at: 1d, kind: leave, member: alice, delegate: bob, for: 2d, delegate_limit: {below: -1}}\n"), "below"},
		{"a bad duration in an SLA map", v2(lastTask, lastTask+"arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, sla: {0: soon}}}\n"), "sla"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mustEdit(t, tt.edits...)
			if _, err := Load("w.yaml", src); err == nil {
				t.Fatalf("Load accepts the world; the case is not broken")
			}
			err := sch.Validate(yamlInstance(t, src))
			if err == nil {
				t.Fatalf("schema accepts the world, want an error mentioning %q", tt.want)
			}
			if got := fmt.Sprintf("%#v", err); !strings.Contains(got, tt.want) {
				t.Errorf("schema error does not mention %q:\n%s", tt.want, got)
			}
		})
	}
}

// TestSchemaMatchesStructs walks the structs Load decodes into and the
// schema side by side: every yaml field is a property and every property a
// yaml field, with the JSON type of the Go type, a description, and no other
// properties allowed; every definition is reached.
func TestSchemaMatchesStructs(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	reached := map[string]bool{}

	var check func(typ reflect.Type, s map[string]any, path string)
	check = func(typ reflect.Type, s map[string]any, path string) {
		if s == nil {
			t.Errorf("%s: no schema for %s", path, typ)
			return
		}
		wantType := func(want string) {
			if got := s["type"]; got != want {
				t.Errorf("%s: type: got %v, want %s (for %s)", path, got, want, typ)
			}
		}
		switch typ.Kind() {
		case reflect.Pointer:
			check(typ.Elem(), s, path)
		case reflect.String:
			wantType("string")
		case reflect.Int, reflect.Int64:
			wantType("integer")
		case reflect.Float64:
			wantType("number")
		case reflect.Slice:
			wantType("array")
			items, _ := s["items"].(map[string]any)
			check(typ.Elem(), items, path+"[]")
		case reflect.Map:
			wantType("object")
			elem, _ := s["additionalProperties"].(map[string]any)
			if pp, ok := s["patternProperties"].(map[string]any); ok {
				if len(pp) != 1 || s["additionalProperties"] != false {
					t.Errorf("%s: want one pattern property and no others, got %v", path, s)
				}
				for _, v := range pp {
					elem, _ = v.(map[string]any)
				}
			}
			check(typ.Elem(), elem, path+".*")
		case reflect.Struct:
			if _, mapped := mappers[typ]; mapped {
				// A shape of its own (a list or weights, a duration or a
				// map by priority): its mapper writes a oneOf of them.
				if br, _ := s["oneOf"].([]any); len(br) < 2 {
					t.Errorf("%s: %s reads several shapes; want a oneOf of them, got %v", path, typ.Name(), s)
				}
				if d, _ := s["description"].(string); d == "" {
					t.Errorf("%s: %s has no description", path, typ.Name())
				}
				return
			}
			if customUnmarshal(typ) {
				for name, p := range unionProperties(t, typ, s, path) {
					check(yamlFields(t, typ)[name], p, path+"."+name)
				}
				return
			}
			if ref, ok := s["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/$defs/")
				if name != defName(typ) {
					t.Errorf("%s: $ref: got %s, want #/$defs/%s", path, ref, defName(typ))
				}
				if reached[name] {
					return
				}
				reached[name] = true
				s, _ = defs[name].(map[string]any)
				if s == nil {
					t.Errorf("%s: $ref %s names no definition", path, ref)
					return
				}
			}
			wantType("object")
			if s["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties: got %v, want false (Load refuses unknown fields)", path, s["additionalProperties"])
			}
			if d, _ := s["description"].(string); d == "" {
				t.Errorf("%s: %s has no description", path, typ.Name())
			}
			props, _ := s["properties"].(map[string]any)
			fields := yamlFields(t, typ)
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if _, ok := fields[name]; !ok {
					t.Errorf("%s: property %q is no yaml field of %s", path, name, typ.Name())
				}
			}
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				p, ok := props[name].(map[string]any)
				if !ok {
					t.Errorf("%s: yaml field %q of %s is no property", path, name, typ.Name())
					continue
				}
				if d, _ := p["description"].(string); d == "" {
					t.Errorf("%s.%s: no description", path, name)
				}
				check(fields[name], p, path+"."+name)
			}
			if req, ok := s["required"].([]any); ok {
				for _, r := range req {
					if _, ok := fields[r.(string)]; !ok {
						t.Errorf("%s: required %q is no yaml field of %s", path, r, typ.Name())
					}
				}
			}
		default:
			t.Errorf("%s: unexpected kind %s in the file structs; teach this test about it", path, typ.Kind())
		}
	}
	check(reflect.TypeFor[file](), root, "$")
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if !reached[name] {
			t.Errorf("$defs/%s is reached from no field", name)
		}
	}
	for typ := range specs {
		if typ != reflect.TypeFor[file]() && !reached[defName(typ)] {
			t.Errorf("specs describe %s, which the file structs do not reach", typ.Name())
		}
	}
}

// TestSchemaSpecsNameFields checks the hand-written half of the schema:
// every spec names a struct and fields that exist.
func TestSchemaSpecsNameFields(t *testing.T) {
	for typ, ts := range specs {
		fields := yamlFields(t, typ)
		for _, name := range slices.Sorted(maps.Keys(ts.fields)) {
			if _, ok := fields[name]; !ok {
				t.Errorf("specs[%s] describes %q, which is no yaml field", typ.Name(), name)
			}
		}
	}
}

// unionProperties checks a scalar-or-mapping type such as fileDist: one
// scalar branch, and object branches whose properties together are its
// mapping keys. It returns those properties' schemas by name.
func unionProperties(t *testing.T, typ reflect.Type, s map[string]any, path string) map[string]map[string]any {
	t.Helper()
	branches, _ := s["oneOf"].([]any)
	if len(branches) == 0 {
		t.Errorf("%s: %s accepts a scalar or a mapping; want oneOf, got %v", path, typ.Name(), s)
		return nil
	}
	props := map[string]map[string]any{}
	scalars := 0
	for _, b := range branches {
		b, _ := b.(map[string]any)
		if b["type"] != "object" {
			scalars++
			continue
		}
		if b["additionalProperties"] != false {
			t.Errorf("%s: an object branch allows additional properties", path)
		}
		bp, _ := b["properties"].(map[string]any)
		for name, p := range bp {
			props[name], _ = p.(map[string]any)
		}
	}
	if scalars != 1 {
		t.Errorf("%s: got %d scalar branches, want 1", path, scalars)
	}
	if got, want := slices.Sorted(maps.Keys(props)), slices.Sorted(maps.Keys(yamlFields(t, typ))); !slices.Equal(got, want) {
		t.Errorf("%s: mapping keys: got %v, want %v", path, got, want)
	}
	return props
}

// customUnmarshal reports whether a struct decodes itself, as the
// scalar-or-mapping types such as fileDist do.
func customUnmarshal(typ reflect.Type) bool {
	p := reflect.PointerTo(typ)
	for _, u := range []reflect.Type{
		reflect.TypeFor[yaml.InterfaceUnmarshaler](), reflect.TypeFor[yaml.InterfaceUnmarshalerContext](),
		reflect.TypeFor[yaml.BytesUnmarshaler](), reflect.TypeFor[yaml.BytesUnmarshalerContext](),
		reflect.TypeFor[yaml.NodeUnmarshaler](), reflect.TypeFor[yaml.NodeUnmarshalerContext](),
	} {
		if p.Implements(u) {
			return true
		}
	}
	return false
}

// yamlFields maps the yaml names of a struct's fields to their types. A
// plain struct must tag every exported field. A scalar-or-mapping type
// keeps its scalar form in Fixed and its mapping keys in the other fields,
// named by their tags or, untagged, in lower case.
func yamlFields(t *testing.T, typ reflect.Type) map[string]reflect.Type {
	t.Helper()
	custom := customUnmarshal(typ)
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		switch {
		case !f.IsExported() || name == "-" || custom && f.Name == "Fixed":
		case name != "":
			out[name] = f.Type
		case custom:
			out[strings.ToLower(f.Name)] = f.Type
		default:
			t.Errorf("%s.%s has no yaml tag", typ.Name(), f.Name)
		}
	}
	return out
}

// The patterns must accept what the loader accepts and, within reason,
// nothing else.

var durationSamples = []string{
	"2h", "1h30m", "90m", "250ms", "45s", "1d", "2w", "0s", "1.5d", ".5h", "1.h", "1h.5m", "2d4h", "10ms5s",
	"", "2", "h", "2x", "-1h", "+2h", "1 h", "2H", "1h30", "..5h", "1.2.3h", " 2h", "2h ", "1e3h", "1hm", "2mss",
}

func TestDurationPatternMatchesParseDuration(t *testing.T) {
	for _, s := range durationSamples {
		_, err := clock.ParseDuration(s, 8*clock.Hour)
		if got, want := durationPattern.MatchString(s), err == nil; got != want {
			t.Errorf("%q: pattern matches %v, ParseDuration accepts %v (%v)", s, got, want, err)
		}
	}
}

func FuzzDurationPattern(f *testing.F) {
	for _, s := range durationSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := clock.ParseDuration(s, 8*clock.Hour)
		match := durationPattern.MatchString(s)
		switch {
		case err == nil && !match:
			t.Fatalf("ParseDuration accepts %q, the pattern does not", s)
		case err != nil && match && !strings.Contains(err.Error(), "out of range"):
			t.Fatalf("the pattern matches %q, ParseDuration says %v", s, err)
		}
	})
}

func TestExtraEffortPattern(t *testing.T) {
	for _, s := range durationSamples {
		_, err := clock.ParseDuration(strings.TrimPrefix(s, "+"), 8*clock.Hour)
		if got, want := extraEffortPattern.MatchString(s), err == nil; got != want {
			t.Errorf("%q: pattern matches %v, the loader accepts %v (%v)", s, got, want, err)
		}
	}
}

func TestHoursPatternMatchesLoader(t *testing.T) {
	for _, s := range []string{
		"09:00-17:00", "9:00-17:00", " 09:00 - 17:00 ", "00:00-24:00", "23:59-24:00", "17:00-09:00",
		"", "9-5", "09:00", "09:00-", "09:00-17", "9:0-17:00", "24:01-24:00", "25:00-26:00", "09:00-17:00-18:00", "09.00-17.00",
	} {
		a, b, ok := strings.Cut(s, "-")
		_, err1 := timeOfDay(a)
		_, err2 := timeOfDay(b)
		// Whether start is before end is left to Load.
		if got, want := hoursPattern.MatchString(s), ok && err1 == nil && err2 == nil; got != want {
			t.Errorf("%q: pattern matches %v, the loader reads it %v", s, got, want)
		}
	}
}

func TestInstantAndDatePatterns(t *testing.T) {
	for _, s := range []string{
		"2026-01-05T09:00:00Z", "2026-01-05T09:00:00+01:00", "2026-01-05T09:00:00.5-03:30",
		"2026-01-05", "2026-01-05 09:00:00Z", "2026-01-05T09:00Z", "2026-01-05T09:00:00", "next monday",
	} {
		_, err := time.ParseInLocation(time.RFC3339, s, time.UTC)
		if got, want := instantPattern.MatchString(s), err == nil; got != want {
			t.Errorf("instant %q: pattern matches %v, time.RFC3339 reads it %v", s, got, want)
		}
	}
	for _, s := range []string{"2026-01-19", "2026-1-19", "19/01/2026", "2026-01-19T00:00:00Z", ""} {
		_, err := time.Parse("2006-01-02", s)
		if got, want := datePattern.MatchString(s), err == nil; got != want {
			t.Errorf("date %q: pattern matches %v, the loader reads it %v", s, got, want)
		}
	}
}

// TestWhenPattern: a time is an offset or an RFC 3339 instant, nothing else.
func TestWhenPattern(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"3d", true}, {"2d4h", true}, {"2026-02-17T09:00:00Z", true}, {"2026-02-17T09:00:00.25+01:00", true},
		{"", false}, {"3", false}, {"2026-02-17", false}, {"2026-02-17T09:00:00", false},
		{"3d 2026-02-17T09:00:00Z", false}, {"2026-02-17T09:00:00Z3d", false},
	} {
		if got := whenPattern.MatchString(tt.s); got != tt.want {
			t.Errorf("whenPattern.MatchString(%q): got %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestWeekdayNames(t *testing.T) {
	got := weekdayNames()
	want := []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
	if !slices.Equal(got, want) {
		t.Errorf("weekdayNames: got %v, want %v", got, want)
	}
	if keys, w := slices.Sorted(maps.Keys(weekdays)), slices.Sorted(slices.Values(want)); !slices.Equal(keys, w) {
		t.Errorf("the loader's weekdays: got %v, want %v", keys, w)
	}
}
