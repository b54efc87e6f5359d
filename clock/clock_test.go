package clock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDeterministicSource checks that the package's own code reaches for no
// wall clock, global random source, file system or network: it is part of the
// replayable core.
func TestDeterministicSource(t *testing.T) {
	forbiddenImports := map[string]bool{"os": true, "net": true, "math/rand": true, "math/rand/v2": true, "crypto/rand": true}
	forbiddenTime := map[string]bool{
		"Now": true, "Since": true, "Until": true, "Sleep": true, "Tick": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "LoadLocation": true, "Local": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if forbiddenImports[path] || strings.HasPrefix(path, "net/") {
					t.Errorf("%s imports %q, want no such import in the deterministic core", fset.Position(imp.Pos()), path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && forbiddenTime[sel.Sel.Name] {
						t.Errorf("%s uses time.%s, want no wall clock in the deterministic core", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				}
				return true
			})
		})
	}
}
