package payload

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTypesListsEveryEventType: Types is sorted and holds exactly the
// string constants named Ev… in types.go, so a new event type cannot be
// left out of the filters.
func TestTypesListsEveryEventType(t *testing.T) {
	if !slices.IsSorted(Types) {
		t.Fatalf("Types is not sorted: %v", Types)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Ev") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts = append(consts, v)
				}
			}
		}
	}
	slices.Sort(consts)
	if !slices.Equal(consts, Types) {
		t.Fatalf("the Ev constants are %v;\nTypes is %v", consts, Types)
	}
	for typ := range decoders { // order: membership only
		if !KnownType(typ) {
			t.Errorf("decodable type %q is not in Types", typ)
		}
	}
	if KnownType("bogus.type") {
		t.Error("KnownType(bogus.type)")
	}
}
