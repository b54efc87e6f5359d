package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// fillValue sets every field reachable from v to a value that is not zero
// (and puts one entry in every map), so that every key an encoding can
// write is written.
func fillValue(v reflect.Value, seed int) {
	switch v.Type() {
	case reflect.TypeFor[ActionAttrs]():
		v.Set(reflect.ValueOf(NewActionAttrs(Attrs{"amount": int64(seed)})))
		return
	case reflect.TypeFor[Names]():
		v.Set(reflect.ValueOf(NewNames("m1", "m2")))
		return
	case reflect.TypeFor[Attrs]():
		v.Set(reflect.ValueOf(Attrs{"amount": int64(seed)}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed + 1))
	case reflect.Uint64, reflect.Uint8:
		v.SetUint(uint64(seed) + 1)
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), seed+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0), seed+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		k.SetString("Member-ID") // a map's keys are data, not field names
		fillValue(e, seed+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillValue(v.Field(i), seed+i)
		}
	default:
		panic("keys_test: fillValue " + v.Kind().String())
	}
}

// checkKeys walks the JSON value j of Go type t and reports every object
// key of a struct that is not snake_case, and every struct field without
// an explicit tag.
func checkKeys(t *testing.T, typ reflect.Type, j any, path string) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == reflect.TypeFor[ActionAttrs]() || typ == reflect.TypeFor[Attrs]() {
		return // keys are attribute names: data, not field names
	}
	if typ == reflect.TypeFor[Names]() {
		if _, ok := j.([]any); !ok {
			t.Errorf("%s: a Names encodes as %T, not a list", path, j)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		obj, ok := j.(map[string]any)
		if !ok {
			t.Errorf("%s: a %s encodes as %T, not an object", path, typ, j)
			return
		}
		fields := map[string]reflect.Type{}
		var collect func(typ reflect.Type)
		collect = func(typ reflect.Type) {
			for i := 0; i < typ.NumField(); i++ {
				f := typ.Field(i)
				tag, hasTag := f.Tag.Lookup("json")
				if f.Anonymous && !hasTag {
					collect(f.Type) // embedded: its fields are the object's
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !hasTag || name == "" {
					t.Errorf("%s: field %s.%s has no JSON name in a tag", path, typ, f.Name)
					continue
				}
				fields[name] = f.Type
			}
		}
		collect(typ)
		for key, v := range obj {
			if !snake.MatchString(key) {
				t.Errorf("%s: key %q is not snake_case", path, key)
			}
			if ft, ok := fields[key]; ok {
				checkKeys(t, ft, v, path+"."+key)
			}
		}
	case reflect.Slice:
		if l, ok := j.([]any); ok {
			for i, e := range l {
				checkKeys(t, typ.Elem(), e, path+"["+strconv.Itoa(i)+"]")
			}
		}
	case reflect.Map:
		if m, ok := j.(map[string]any); ok {
			for k, e := range m {
				checkKeys(t, typ.Elem(), e, path+"["+k+"]")
			}
		}
	}
}

// Every payload writes only snake_case keys, by encoding/json and by
// Append, and names each field in a tag: a Go field rename cannot change
// a log.
func TestPayloadKeysAreSnakeCase(t *testing.T) {
	for typ, dec := range decoders {
		zero, err := dec([]byte("{}"))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		v := reflect.New(reflect.TypeOf(zero)).Elem()
		fillValue(v, 1)
		for name, enc := range map[string]func(any) ([]byte, error){
			"json.Marshal": json.Marshal,
			"Append":       func(p any) ([]byte, error) { return Append(nil, p) },
		} {
			b, err := enc(v.Interface())
			if err != nil {
				t.Fatalf("%s: %s: %v", typ, name, err)
			}
			var j any
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatalf("%s: %s wrote %s: %v", typ, name, b, err)
			}
			checkKeys(t, v.Type(), j, typ+" ("+name+")")
		}
	}
}

// Every event type but member.returned, which carries nothing, has a
// payload type, so the test above sees it.
func TestEveryEventTypeHasAPayload(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for i, name := range s.(*ast.ValueSpec).Names {
				if !strings.HasPrefix(name.Name, "Ev") {
					continue
				}
				n++
				typ, _ := strconv.Unquote(s.(*ast.ValueSpec).Values[i].(*ast.BasicLit).Value)
				if decoders[typ] == nil && typ != EvMemberReturned {
					t.Errorf("event type %s (%s) has no payload type in decoders", typ, name.Name)
				}
			}
		}
	}
	if n < 27 {
		t.Errorf("found %d event types in types.go, want at least 27", n)
	}
}

func TestCheckFormat(t *testing.T) {
	tests := []struct {
		format int
		want   string // a part of the error; "" for none
	}{
		{LogFormat, ""},
		{OldestLogFormat, ""},      // format 2 still replays
		{0, "the log is format 1"}, // format 1 did not record it
		{1, "the log is format 1"},
		{3, ""}, // format 3 too
		{LogFormat + 1, fmt.Sprintf("the log is format %d, newer than this build's format %d", LogFormat+1, LogFormat)},
	}
	for _, tt := range tests {
		p := SessionStarted{Format: tt.format, World: "support-desk", Seed: 7}
		err := p.CheckFormat()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("format %d: got %v, want none", tt.format, err)
		case tt.want != "" && (!errors.Is(err, ErrLogFormat) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("format %d: got %v, want ErrLogFormat saying %q", tt.format, err, tt.want)
		case tt.format < OldestLogFormat && !strings.Contains(err.Error(), "corpsim run --world support-desk --seed 7"):
			t.Errorf("format %d: got %v, want it to say how to record the session again", tt.format, err)
		}
	}
}
