package tests

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// module is the import path of this module.
const module = "github.com/corpsim/corpsim"

// coreRoots are the top-level packages of the deterministic core. Every
// package under one of them is core — and checked — unless it is listed in
// edgePackages: a new package under a core root is checked until someone
// decides, in a reviewed change to that list, that it is an edge.
var coreRoots = []string{"clock", "events", "org", "policies", "sim", "worlds", "agents"}

// edgePackages are the packages under a core root that do I/O on purpose,
// with why. An entry covers the package and every package below it. An
// entry that names no package is itself a finding (a rename must update
// it), so the list cannot silently stop meaning anything.
var edgePackages = map[string]string{
	"events/jsreplica":  "replicates the log on JetStream (NATS)",
	"events/pebblelog":  "the durable log on Pebble (files)",
	"events/logtest":    "the Log conformance suite, for tests only",
	"sim/driver":        "the I/O loop around the engine: the log, the bus, wall-clock turn budgets",
	"sim/workers":       "goroutines kept between the driver's and the in-process seats' functions (a stack that grew stays grown)",
	"sim/server":        "the server: sessions over NATS, workers, metrics",
	"sim/app":           "the application's use cases: the data folder, the log, the bus, seats",
	"sim/analyze":       "analysis tools over stored logs",
	"sim/report":        "HTML reports over stored logs",
	"sim/export":        "trajectory export over stored logs",
	"sim/live":          "the live view: HTTP pages and Server-Sent Events over the server's log and feed (its View is pure)",
	"sim/simtest":       "helpers for tests only",
	"agents/client":     "the client side of the NATS protocol",
	"agents/httpgw":     "the HTTP gateway",
	"agents/llm":        "the LLM agent (HTTP to a model endpoint)",
	"agents/mcpseat":    "the MCP adapter: HTTP, MCP sessions and their idle timers, the stdio proxy",
	"agents/natsserver": "the embedded NATS server",
	"agents/nemogym":    "NeMo Gym's resources-server routes over HTTP (cookies, idle timeouts on the wall clock)",
	"agents/inprocess":  "plays seats in the process: a goroutine and a wall-clock budget per turn",
	"agents/natshost":   "built-in agents served over NATS",
	"agents/openenv":    "the OpenEnv protocol (HTTP and WebSocket) over the HTTP gateway's operations",
}

// TestPurity checks that the deterministic core (see coreRoots and
// edgePackages) stays a pure state machine: the same world, seed and
// deterministic agents must give a byte-identical log. In the core's
// non-test files it reports, as file:line:col, what was found and why it
// breaks determinism:
//
//   - imports of os (and os/...), syscall, net (and net/..., net/http among
//     them), crypto/rand, Pebble, nats.go or nats-server, or of an edge
//     package of this module: the core does no I/O and reads no entropy;
//
//   - uses of time.Now, Since, Until, Sleep, After, Tick, NewTimer,
//     NewTicker and AfterFunc: the wall clock (simulated time is passed in);
//
//   - the package-level functions of math/rand and math/rand/v2 (the
//     process-wide source); a *rand.Rand made with rand.New from a seeded
//     source is fine;
//
//   - ulid.Make, ulid.Now and ulid.DefaultEntropy (event IDs come from
//     events.NewID);
//
//   - go statements (the core starts no goroutines);
//
//   - a range over a map, or over maps.All, maps.Keys or maps.Values, and
//     those three collected with slices.Collect or slices.AppendSeq — unless
//     the loop is marked with a comment saying why its order cannot matter:
//
//     // order: each key is written to its own slot; nothing else happens
//     for k, v := range m {
//
//     The marker is a line comment "// order: <reason>" in the comment block
//     right above the for statement, or on its line; the reason must not be
//     empty. slices.Sorted(maps.Keys(m)) needs no marker, and nor does a
//     `for range m` that binds neither key nor value. A marker that is not on
//     such a loop is a finding too, so markers cannot outlive their loops.
//
// Where the order can matter (the loop emits events, draws random numbers,
// appends to a slice that is not sorted afterwards, sums floats, builds
// output), iterate slices.Sorted(maps.Keys(m)) instead of marking it.
func TestPurity(t *testing.T) {
	root := moduleRoot(t)
	patterns := make([]string, len(coreRoots))
	for i, r := range coreRoots {
		patterns[i] = "./" + r + "/..."
	}
	listed, err := packages.Load(&packages.Config{Mode: packages.NeedName, Dir: root}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	var core []string
	used := map[string]bool{}
	for _, p := range listed {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, module), "/")
		if edge := edgeOf(rel); edge != "" {
			used[edge] = true
			continue
		}
		core = append(core, p.PkgPath)
	}
	for _, e := range slices.Sorted(maps.Keys(edgePackages)) {
		if !used[e] {
			t.Errorf("edgePackages lists %s, which is no package: remove or rename the entry", e)
		}
	}
	slices.Sort(core)
	t.Logf("core packages checked: %s", strings.Join(core, " "))
	findings := checkPurity(t, root, core...)
	for _, f := range findings {
		t.Error(f)
	}
	if len(findings) > 0 {
		t.Logf("%d findings; see the doc comment of TestPurity for the rules and the // order: marker", len(findings))
	}
}

// edgeOf returns the edgePackages entry covering rel, or "".
func edgeOf(rel string) string {
	for _, e := range slices.Sorted(maps.Keys(edgePackages)) {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return e
		}
	}
	return ""
}

// moduleRoot is the folder of go.mod: the parent of this package's folder.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// A finding is one thing the purity check reports.
type finding struct {
	pos  token.Position // file relative to the module root
	kind string         // import, time, rand, ulid, go, maprange, marker
	what string
	why  string
}

func (f finding) String() string { return fmt.Sprintf("%s: %s: %s", f.pos, f.what, f.why) }

// checkPurity loads the packages (with types, from source) and returns
// their findings, sorted by position. Loading or type errors fail tb.
func checkPurity(tb testing.TB, root string, patterns ...string) []finding {
	tb.Helper()
	if len(patterns) == 0 {
		tb.Fatal("no packages to check")
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
		Dir: root,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		tb.Fatal(err)
	}
	var out []finding
	for _, p := range pkgs {
		for _, e := range p.Errors {
			tb.Errorf("%s: %v", p.PkgPath, e)
		}
		if len(p.Errors) > 0 {
			continue
		}
		c := checker{tb: tb, pkg: p, root: root}
		for _, f := range p.Syntax {
			c.file(f)
		}
		out = append(out, c.out...)
	}
	slices.SortFunc(out, func(a, b finding) int {
		if c := strings.Compare(a.pos.Filename, b.pos.Filename); c != 0 {
			return c
		}
		if a.pos.Line != b.pos.Line {
			return a.pos.Line - b.pos.Line
		}
		return a.pos.Column - b.pos.Column
	})
	return out
}

type checker struct {
	tb   testing.TB
	pkg  *packages.Package
	root string
	out  []finding

	// Of the file being checked: its lines, and its order markers by line
	// (each noting whether it was found on a loop that needs one).
	lines   []string
	markers map[int]*marker
}

type marker struct {
	pos    token.Pos
	reason string
	used   bool
}

func (c *checker) report(pos token.Pos, kind, what, why string) {
	p := c.pkg.Fset.Position(pos)
	if rel, err := filepath.Rel(c.root, p.Filename); err == nil {
		p.Filename = rel
	}
	c.out = append(c.out, finding{pos: p, kind: kind, what: what, why: why})
}

// Why each kind of finding breaks determinism.
const (
	whyIO       = "the core does no I/O: what it reads from outside is not in the log, so a replay or a second run can differ; I/O belongs to the edges (cmd, the driver, the adapters)"
	whyEntropy  = "it reads the operating system's entropy, which no seed reproduces"
	whyEdge     = "an edge package does I/O; the core must not depend on one"
	whyClock    = "it reads or waits on the wall clock; simulated time is passed in (clock.Time), so the same seed must not depend on when or how fast it runs"
	whyRand     = "it draws from the process-wide random source, which no session seed controls; draw from a *rand.Rand made from the session's seed (or the engine's keyed draws)"
	whyULID     = "it reads the wall clock and a global entropy source; event IDs come from events.NewID (simulated time and the session's key)"
	whyGo       = "the core starts no goroutines: their scheduling is not reproducible; concurrency belongs to the driver"
	whyMapRange = "Go randomizes map iteration order, so whatever this loop emits, draws, appends or sums (floats) can differ between two runs of one seed; iterate slices.Sorted(maps.Keys(m)), or mark the loop with `// order: <why its order cannot matter>`"
)

// forbiddenImport says why an import path is not allowed in the core, or "".
func forbiddenImport(path string) string {
	under := func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }
	switch {
	case under("os"), under("syscall"), under("net"):
		return whyIO
	case path == "crypto/rand":
		return whyEntropy
	case under("github.com/cockroachdb/pebble"):
		return "Pebble is storage: " + whyIO
	case under("github.com/nats-io/nats.go"), under("github.com/nats-io/nats-server"):
		return "NATS is the bus: " + whyIO
	case under(module):
		if e := edgeOf(strings.TrimPrefix(strings.TrimPrefix(path, module), "/")); e != "" {
			return whyEdge + " (" + e + ": " + edgePackages[e] + ")"
		}
	}
	return ""
}

var (
	clockFuncs = map[string]bool{
		"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "Tick": true,
		"NewTimer": true, "NewTicker": true, "AfterFunc": true,
	}
	// randMakers are the package-level functions of math/rand(/v2) that
	// make a source or generator instead of drawing from the global one.
	randMakers = map[string]bool{
		"New": true, "NewSource": true, "NewZipf": true, "NewPCG": true, "NewChaCha8": true,
	}
	ulidFuncs = map[string]bool{"Make": true, "Now": true, "DefaultEntropy": true}
	// mapIters are the functions of package maps that yield in map order.
	mapIters = map[string]bool{"All": true, "Keys": true, "Values": true}
)

func (c *checker) file(f *ast.File) {
	src, err := os.ReadFile(c.pkg.Fset.File(f.Pos()).Name())
	if err != nil {
		c.tb.Fatal(err)
	}
	c.lines = strings.Split(string(src), "\n")
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if why := forbiddenImport(path); why != "" {
			c.report(imp.Pos(), "import", fmt.Sprintf("imports %q", path), why)
		}
	}
	c.markers = map[int]*marker{}
	for _, g := range f.Comments {
		for _, cm := range g.List {
			text, ok := strings.CutPrefix(cm.Text, "//")
			if !ok {
				continue
			}
			if reason, ok := strings.CutPrefix(strings.TrimSpace(text), "order:"); ok {
				c.markers[c.pkg.Fset.Position(cm.Pos()).Line] = &marker{pos: cm.Pos(), reason: strings.TrimSpace(reason)}
			}
		}
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.GoStmt:
			c.report(n.Pos(), "go", "starts a goroutine", whyGo)
		case *ast.Ident:
			c.ident(n)
		case *ast.RangeStmt:
			if n.Key == nil && n.Value == nil {
				break // `for range m`: nothing of the order is seen
			}
			if t := c.pkg.TypesInfo.TypeOf(n.X); t != nil && isMap(t) {
				c.mapRange(n, fmt.Sprintf("ranges over a map (%s)", types.TypeString(t, c.qualifier)))
			} else if fn := mapIter(c.pkg.TypesInfo, n.X); fn != "" {
				c.mapRange(n, "ranges over "+fn)
			}
		case *ast.CallExpr:
			fn := mapIter(c.pkg.TypesInfo, n)
			if fn == "" {
				break
			}
			switch p := parent.(type) {
			case *ast.RangeStmt:
				if p.X == n {
					break // reported with the loop
				}
			case *ast.CallExpr:
				switch calleeName(c.pkg.TypesInfo, p) {
				case "slices.Collect", "slices.AppendSeq":
					c.report(n.Pos(), "maprange", "collects "+fn+" in map order", whyMapRange)
				}
			}
		}
		return true
	})
	for _, m := range c.markers { // order: the findings are sorted by position
		if !m.used {
			c.report(m.pos, "marker", "an `// order:` marker that is on no range over a map", "a marker must sit on the loop it explains (on its line or right above it), or go")
		}
	}
}

// mapRange reports a map range statement unless a marker explains it.
func (c *checker) mapRange(n *ast.RangeStmt, what string) {
	line := c.pkg.Fset.Position(n.Pos()).Line
	m := c.markers[line]
	for l := line - 1; m == nil && l > 0; l-- {
		// The comment block right above: consecutive comment lines.
		if c.markers[l] != nil {
			m = c.markers[l]
			break
		}
		if !c.commentLine(l) {
			break
		}
	}
	if m == nil {
		c.report(n.Pos(), "maprange", what, whyMapRange)
		return
	}
	m.used = true
	if m.reason == "" {
		c.report(m.pos, "marker", "an `// order:` marker without a reason", "say why the order of this loop cannot matter")
	}
}

// commentLine reports whether line of the file being checked holds only a
// comment: the marker search walks up the comment block above a loop and
// stops at the first line that is not one.
func (c *checker) commentLine(line int) bool {
	if line < 1 || line > len(c.lines) {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(c.lines[line-1]), "//")
}

func (c *checker) qualifier(p *types.Package) string {
	if p == c.pkg.Types {
		return ""
	}
	return p.Name()
}

// ident reports uses of forbidden package-level functions.
func (c *checker) ident(id *ast.Ident) {
	fn, ok := c.pkg.TypesInfo.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		return // a method: of a value the code made itself
	}
	name, path := fn.Name(), fn.Pkg().Path()
	switch {
	case path == "time" && clockFuncs[name]:
		c.report(id.Pos(), "time", "uses time."+name, whyClock)
	case (path == "math/rand" || path == "math/rand/v2") && !randMakers[name]:
		c.report(id.Pos(), "rand", fmt.Sprintf("uses the global %s.%s", path, name), whyRand)
	case (path == "github.com/oklog/ulid" || path == "github.com/oklog/ulid/v2") && ulidFuncs[name]:
		c.report(id.Pos(), "ulid", "uses ulid."+name, whyULID)
	}
}

// isMap reports whether t is a map, or a type parameter every type of whose
// constraint is a map.
func isMap(t types.Type) bool {
	switch u := types.Unalias(t).(type) {
	case *types.TypeParam:
		iface, _ := u.Constraint().Underlying().(*types.Interface)
		if iface == nil || iface.NumEmbeddeds() == 0 {
			return false
		}
		for i := range iface.NumEmbeddeds() {
			switch e := iface.EmbeddedType(i).(type) {
			case *types.Union:
				for j := range e.Len() {
					if !isMap(e.Term(j).Type()) {
						return false
					}
				}
			default:
				if !isMap(e) {
					return false
				}
			}
		}
		return true
	default:
		_, ok := t.Underlying().(*types.Map)
		return ok
	}
}

// mapIter returns "maps.Keys" (All, Values) when e is a call of one, else "".
func mapIter(info *types.Info, e ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return ""
	}
	if name := calleeName(info, call); strings.HasPrefix(name, "maps.") && mapIters[strings.TrimPrefix(name, "maps.")] {
		return name
	}
	return ""
}

// calleeName is "pkgpath.Func" of a call of a package-level function, else "".
func calleeName(info *types.Info, call *ast.CallExpr) string {
	fun := ast.Unparen(call.Fun)
	if ix, ok := fun.(*ast.IndexExpr); ok { // explicit instantiation
		fun = ix.X
	} else if ix, ok := fun.(*ast.IndexListExpr); ok {
		fun = ix.X
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return ""
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

// TestPurityChecker runs the check on two fixtures: dirty, where every kind
// of finding is marked by a "want:" comment on its line ("want below:" for
// the next line) and must be reported exactly there, and clean, whose
// look-alikes must not be.
func TestPurityChecker(t *testing.T) {
	root := moduleRoot(t)
	t.Run("dirty", func(t *testing.T) {
		const dir = "tests/testdata/purity/dirty"
		want := wantedFindings(t, filepath.Join(root, dir, "dirty.go"))
		got := map[string]int{}
		for _, f := range checkPurity(t, root, "./"+dir) {
			got[fmt.Sprintf("%d:%s", f.pos.Line, f.kind)]++
			t.Log(f)
		}
		kinds := map[string]bool{}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			kinds[k[strings.Index(k, ":")+1:]] = true
			if got[k] != want[k] {
				t.Errorf("line %s: got %d findings, want %d", k, got[k], want[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if want[k] == 0 {
				t.Errorf("line %s: got %d findings, want none", k, got[k])
			}
		}
		for _, k := range []string{"import", "time", "rand", "ulid", "go", "maprange", "marker"} {
			if !kinds[k] {
				t.Errorf("the dirty fixture has no %s finding to expect", k)
			}
		}
	})
	t.Run("clean", func(t *testing.T) {
		for _, f := range checkPurity(t, root, "./tests/testdata/purity/clean") {
			t.Errorf("got %v, want no finding", f)
		}
	})
}

// wantedFindings reads a fixture's "want: kind,kind" comments as counts of
// "line:kind".
func wantedFindings(tb testing.TB, file string) map[string]int {
	tb.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	want := map[string]int{}
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		_, spec, ok := strings.Cut(line, "// want: ")
		if !ok {
			if _, spec, ok = strings.Cut(line, "// want below: "); !ok {
				continue
			}
			n++
		}
		for _, k := range strings.Split(strings.TrimSpace(spec), ",") {
			want[fmt.Sprintf("%d:%s", n, k)]++
		}
	}
	if len(want) == 0 {
		tb.Fatalf("%s expects no findings", file)
	}
	return want
}
