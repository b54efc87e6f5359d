package worlds

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/corpsim/corpsim/clock"
)

// file mirrors the world file's schema; Load checks it and builds a World.
type file struct {
	Version     *int               `yaml:"version"`
	Name        string             `yaml:"name"`
	Description string             `yaml:"description"`
	Start       string             `yaml:"start"`
	Horizon     string             `yaml:"horizon"`
	Dispatch    string             `yaml:"dispatch"`
	Calendar    fileCalendar       `yaml:"calendar"`
	Roles       []fileRole         `yaml:"roles"`
	Teams       []fileTeam         `yaml:"teams"`
	Members     []fileMember       `yaml:"members"`
	Queues      []fileQueue        `yaml:"queues"`
	Approvals   []fileChain        `yaml:"approvals"`
	Projects    []fileProject      `yaml:"projects"`
	Arrivals    []fileArrival      `yaml:"arrivals"`
	Interrupts  []fileInterruption `yaml:"interruptions"`
	Cases       []fileCase         `yaml:"cases"`      // version 2
	Separation  []fileSeparation   `yaml:"separation"` // version 2
	Systems     []fileSystem       `yaml:"systems"`    // version 2 (systems.go)
	Policy      *filePolicy        `yaml:"policy"`     // version 2
	Scoring     fileScoring        `yaml:"scoring"`
	// Version 2.
	Costs          *fileCosts        `yaml:"costs"`
	MessageLatency string            `yaml:"message_latency"`
	Availability   *fileAvailability `yaml:"availability"` // meetings.go
}

type fileCalendar struct {
	Hours    string   `yaml:"hours"`
	Workdays []string `yaml:"workdays"`
	Holidays []string `yaml:"holidays"`
	Timezone string   `yaml:"timezone"` // IANA name; version 2
}

type fileRole struct {
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
	Rate  int64  `yaml:"rate"` // cost of one working hour, charged to the team's budget
}

type fileTeam struct {
	ID     string `yaml:"id"`
	Name   string `yaml:"name"`
	Budget int64  `yaml:"budget"`
	// Version 2 (calendars.go): the team's own calendar, its shift rota,
	// coverage and handover rule.
	Calendar *fileCalendar `yaml:"calendar"`
	Shifts   []fileShift   `yaml:"shifts"`
	Coverage string        `yaml:"coverage"`
	Handover string        `yaml:"handover"`
	Rotate   string        `yaml:"rotate"`
}

type fileMember struct {
	ID      string   `yaml:"id"`
	Name    string   `yaml:"name"`
	Role    string   `yaml:"role"`
	Team    string   `yaml:"team"`
	Manager string   `yaml:"manager"`
	Skills  []string `yaml:"skills"`
	NPC     *fileNPC `yaml:"npc"`
}

type fileNPC struct {
	Reply  fileRange         `yaml:"reply"`
	Serves []string          `yaml:"serves"` // queues it works as a server
	Knows  map[string]string `yaml:"knows"`  // topic -> what it answers when asked
	Absent []fileWindow      `yaml:"absent"`
}

type fileWindow struct {
	From string `yaml:"from"`
	For  string `yaml:"for"`
}

type fileRange struct {
	Min string `yaml:"min"`
	Max string `yaml:"max"`
}

type fileQueue struct {
	ID       string   `yaml:"id"`
	ServedBy []string `yaml:"served_by"`
	Order    string   `yaml:"order"` // fifo (default) or priority
	WIP      int      `yaml:"wip"`   // most items claimed and not done at once; 0 for no limit
}

type fileChain struct {
	ID        string     `yaml:"id"`
	Attribute string     `yaml:"attribute"` // version 2: the case attribute its thresholds read
	Steps     []fileStep `yaml:"steps"`
}

type fileStep struct {
	Role          string `yaml:"role"`
	Above         int64  `yaml:"above"`
	EscalateAfter string `yaml:"escalate_after"`
}

type fileProject struct {
	ID       string     `yaml:"id"`
	Title    string     `yaml:"title"`
	Team     string     `yaml:"team"`
	Queue    string     `yaml:"queue"`
	Value    float64    `yaml:"value"`
	Deadline string     `yaml:"deadline"`
	Start    string     `yaml:"start"` // its tasks appear this far into the session (working time)
	Tasks    []fileTask `yaml:"tasks"`
}

type fileTask struct {
	ID       string    `yaml:"id"`
	Title    string    `yaml:"title"`
	Role     string    `yaml:"role"`
	Effort   string    `yaml:"effort"`
	Deps     []string  `yaml:"deps"`
	Value    *float64  `yaml:"value"`
	Purchase int64     `yaml:"purchase"`
	Approval string    `yaml:"approval"`
	Skill    string    `yaml:"skill"`
	Priority int       `yaml:"priority"`
	Info     *fileInfo `yaml:"info"`
}

type fileInfo struct {
	From  string `yaml:"from"`
	Topic string `yaml:"topic"`
}

type fileScoring struct {
	LateHalfLife     string   `yaml:"late_half_life"`
	ViolationPenalty *float64 `yaml:"violation_penalty"`
	SLAPenalty       *float64 `yaml:"sla_penalty"`
	BudgetPenalty    *float64 `yaml:"budget_penalty"`
	WrongPenalty     *float64 `yaml:"wrong_penalty"`
}

// Error is one mistake in a world file, with where it is.
type Error struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int
	Path   string // the field's path, e.g. "projects[0].tasks[2].deps[0]"
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every mistake found in one file, in file order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// IsID reports whether s has the form of a world's IDs (of its members,
// teams, queues, tasks…): lower-case letters, digits, '-' and '_',
// beginning with a letter or a digit.
func IsID(s string) bool { return idPattern.MatchString(s) }

// Load decodes and validates a world file. name is used in error messages
// and as World.File. On error the result is nil and the error is an
// ErrorList naming file, line, column and field path of every mistake found.
//
// Load applies the default Limits; LoadLimited takes others.
func Load(name string, src []byte) (*World, error) {
	return load(name, src, partBytes, Limits{}, nil)
}

// LoadLimited is Load within lim (zero fields: the defaults). A file over a
// limit is refused with an error that names the limit and its flag and
// wraps ErrLimit; its size and nesting are checked before the YAML parser
// reads it.
func LoadLimited(name string, src []byte, lim Limits) (*World, error) {
	return LoadWith(name, src, Options{Limits: lim})
}

// Options are how LoadWith reads a world file; the zero value reads it as
// Load does.
type Options struct {
	// Limits are the budgets the file must keep (zero fields: the
	// defaults); see LoadLimited.
	Limits Limits
	// Parallel, if set, calls f(0), f(1), …, f(n-1), as concurrently as it
	// likes, and returns once every call has returned. The parts of a large
	// file (its long lists, a part at a time: see loadInParts) are then
	// decoded at once. It changes how fast a world loads, never what it
	// loads or which mistake is reported: the parts are put together, and
	// their first mistake chosen, in file order. The package starts no
	// goroutine itself; the caller's Parallel does.
	Parallel func(n int, f func(i int))
}

// LoadWith is LoadLimited with o's limits, decoding the parts of a large
// file with o.Parallel when it is set.
func LoadWith(name string, src []byte, o Options) (*World, error) {
	if err := o.Limits.Validate(); err != nil {
		return nil, err
	}
	return load(name, src, partBytes, o.Limits, o.Parallel)
}

// checkText refuses a file that is not UTF-8 text, as YAML must be, at
// its first byte that is not UTF-8 or is a control character other than a
// tab or a line break: the parser let them through, into names and text
// (a name "st\xffartup" became "st\ufffdartup"). A file over max bytes is
// left to checkShape, which names the limit. checkDecoded applies the same
// rule to what the parser makes of escapes and tags.
func checkText(name string, src []byte, max int) *Error {
	if len(src) > max {
		return nil
	}
	line, col := 1, 0
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		col++
		if r == '\n' {
			line, col = line+1, 0
		} else if what, why := refusedRune(r, n, src[i]); what != "" {
			return &Error{File: name, Line: line, Column: col, Msg: what + ": " + why}
		}
		i += n
	}
	return nil
}

// refusedRune is checkText's rule for one character of a world file's
// text, r, read from n bytes beginning with b: what it is and why it may
// not be there, or "" when it may.
func refusedRune(r rune, n int, b byte) (what, why string) {
	switch {
	case r == utf8.RuneError && n == 1:
		return fmt.Sprintf("byte 0x%02x is not UTF-8", b), "a world file is UTF-8 text"
	case r != '\t' && r != '\n' && r != '\r' && (r < 0x20 || r == 0x7f):
		return fmt.Sprintf("control character %U", r), "a world file has none but tabs and line breaks"
	}
	return "", ""
}

// escapeControls writes the control characters of s, a path that may name
// a key holding them, as Go escapes (\x01), so that an error message shows
// them and holds none.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r) // '\x01', '\n', '\u0085'
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkDecoded refuses, with checkText's rule, a scalar of the tree under
// root whose value as decoded holds what checkText refuses in the file's
// bytes: a double-quoted scalar's escapes ("a\x01b", "s\u0007") and a
// !!binary tag's base64 make characters the file does not hold, and they
// reached names and text. It returns one mistake per scalar, at the
// scalar, with its field's path, at most maxDecodeErrors of them.
func checkDecoded(name string, root ast.Node) ErrorList {
	var errs ErrorList
	check := func(n ast.Node, value, how string) {
		for i := 0; i < len(value); {
			r, size := utf8.DecodeRuneInString(value[i:])
			if what, why := refusedRune(r, size, value[i]); what != "" {
				e := &Error{File: name, Path: escapeControls(displayPath(n.GetPath())), Msg: what + " " + how + ": " + why}
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					e.Line, e.Column = tk.Position.Line, tk.Position.Column
				}
				errs = append(errs, e)
				return
			}
			i += size
		}
	}
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if len(errs) >= maxDecodeErrors {
			return false
		}
		switch n := n.(type) {
		case *ast.StringNode:
			check(n, n.Value, "from an escape")
		case *ast.TagNode:
			if n.Start == nil || token.ReservedTagKeyword(n.Start.Value) != token.BinaryTag {
				return true
			}
			var text string
			switch v := n.Value.(type) {
			case *ast.StringNode:
				text = v.Value
			case *ast.LiteralNode:
				if v.Value == nil {
					return true
				}
				text = v.Value.Value
			default:
				return true // not text: the decoder refuses it
			}
			// As the decoder reads it: what decodes before a mistake.
			b, _ := base64.StdEncoding.DecodeString(text)
			check(n, string(b), "in a !!binary value")
			return false // its text is base64
		}
		return true
	}), root)
	return errs
}

// tooLarge is the mistake of a file of nodes YAML nodes, above the limit
// read at once, that could not be read a part at a time; stop, if known,
// is what kept it from being cut into parts, and places the mistake there.
func tooLarge(name string, nodes int, lim Limits, stop *cutStop) *Error {
	e := &Error{File: name, Msg: fmt.Sprintf("%v: about %d YAML nodes, above the limit of %d read at once (%s); "+
		"a larger world is read a part at a time when its long lists (members, projects, …) are in block style, "+
		"one \"- \" entry after another, each line plain (no quotes, anchors, tags or block scalars)",
		ErrLimit, nodes, lim.Nodes, FlagNodes)}
	if stop != nil && stop.why != "" {
		e.Line, e.Column = stop.line, stop.col
		e.Msg += fmt.Sprintf("; this file cannot be read in parts because of this spot: %s", stop.why)
	}
	return e
}

// load is Load, reading a file of at least partBytes a part at a time
// when it can (see loadInParts), with par if it is not nil.
func load(name string, src []byte, partBytes int, lim Limits, par func(int, func(int))) (*World, error) {
	// A byte order mark, which editors on Windows write, is not part of
	// the YAML: it read as the first key's first character.
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	lim = lim.WithDefaults()
	if !lim.Recorded { // a recorded file reads as it did then
		if e := checkText(name, src, lim.FileBytes); e != nil {
			return nil, ErrorList{e}
		}
	}
	nodes, e := checkShape(name, src, lim)
	if e != nil {
		return nil, ErrorList{e}
	}
	switch w, errs := loadInParts(name, src, partBytes, lim, nodes, par); {
	case w != nil:
		return w, nil // not errs: a nil ErrorList is a non-nil error
	case errs != nil:
		return nil, errs
	}
	if nodes > lim.Nodes {
		return nil, ErrorList{tooLarge(name, nodes, lim, nil)}
	}
	// Duplicate keys are allowed by the parser and reported below, with the
	// field's path and both positions.
	var astFile *ast.File
	if err := guard(func() (err error) {
		astFile, err = parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
		return err
	}); err != nil {
		return nil, ErrorList{syntaxError(name, src, err)}
	}
	if len(astFile.Docs) == 0 || astFile.Docs[0].Body == nil {
		return nil, ErrorList{{File: name, Msg: "empty world file"}}
	}
	if len(astFile.Docs) > 1 {
		e := &Error{File: name, Line: 1, Column: 1, Msg: "more than one YAML document; a world file holds one"}
		if d := astFile.Docs[1]; d.Start != nil && d.Start.Position != nil {
			e.Line, e.Column = d.Start.Position.Line, d.Start.Position.Column
		}
		return nil, ErrorList{e}
	}
	root := astFile.Docs[0].Body
	if _, null := root.(*ast.NullNode); null {
		return nil, ErrorList{{File: name, Msg: "empty world file"}}
	}
	if errs := duplicateKeys(name, root); len(errs) > 0 {
		return nil, errs
	}
	if e := checkAliases(name, root); e != nil {
		return nil, ErrorList{e}
	}
	if !lim.Recorded { // a recorded file reads as it did then
		if errs := checkDecoded(name, root); len(errs) > 0 {
			return nil, errs
		}
	}
	if e := fractionsIntoInts(name, root, lim); e != nil {
		return nil, ErrorList{e}
	}
	var f file
	if errs := decodeAll(name, root, &f); len(errs) > 0 {
		return nil, errs
	}
	v := &validator{name: name, root: root, lim: lim}
	w := v.build(&f)
	if len(v.errs) > 0 {
		v.errs.sortByPosition()
		return nil, v.errs
	}
	sum := sha256.Sum256(src)
	w.Hash = hex.EncodeToString(sum[:])
	w.File = name
	w.Warnings = v.warnings
	return w, nil
}

// maxDecodeErrors bounds the mistakes decodeAll reports of one file.
const maxDecodeErrors = 50

// decodeAll decodes root into *f, reporting every unknown field and every
// value of the wrong type, not only the first (the library stops at the
// first): after each, it takes the offending key out of the tree (a list
// entry becomes null, so that the entries after it keep their index) and
// decodes again, until the tree decodes or a mistake cannot be taken out.
// The errors are in the file's order.
func decodeAll(name string, root ast.Node, f *file) ErrorList {
	var errs ErrorList
	for len(errs) < maxDecodeErrors {
		*f = file{}
		err := guard(func() error {
			// Duplicate keys were reported above; allowing them here lets
			// an explicit key override one merged in with "<<", as YAML
			// says.
			return yaml.NodeToValue(root, f, yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey())
		})
		if err == nil {
			break
		}
		errs = append(errs, fromYAMLError(name, root, err))
		var ye yaml.Error
		if !errors.As(err, &ye) || ye.GetToken() == nil || !prune(root, ye.GetToken()) {
			break
		}
	}
	errs.sortByPosition()
	return errs
}

// sortByPosition puts l in the file's order (line, then column), keeping
// the order of mistakes at one position.
func (l ErrorList) sortByPosition() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Column < l[j].Column
	})
}

// prune takes out of the tree under n the key (with its value) whose key
// or value is token tk, or makes null the list entry that is tk, and
// reports whether it found one.
func prune(n ast.Node, tk *token.Token) bool {
	switch n := n.(type) {
	case *ast.DocumentNode:
		return prune(n.Body, tk)
	case *ast.TagNode:
		return prune(n.Value, tk)
	case *ast.AnchorNode:
		return prune(n.Value, tk)
	case *ast.MappingNode:
		for i, mv := range n.Values {
			if mv.Key != nil && mv.Key.GetToken() == tk || mv.Value != nil && mv.Value.GetToken() == tk {
				n.Values = append(n.Values[:i:i], n.Values[i+1:]...)
				return true
			}
			if prune(mv.Value, tk) {
				return true
			}
		}
	case *ast.MappingValueNode:
		return prune(n.Value, tk)
	case *ast.SequenceNode:
		for i, v := range n.Values {
			if v == nil {
				continue
			}
			if t := v.GetToken(); t == tk {
				n.Values[i] = ast.Null(token.New("null", "null", t.Position))
				return true
			}
			if prune(v, tk) {
				return true
			}
		}
	}
	return false
}

// yamlPanic is returned by guard when the YAML library panics.
type yamlPanic struct{ value any }

func (p yamlPanic) Error() string { return fmt.Sprintf("the YAML library panicked: %v", p.value) }

// guard runs a call into the YAML library, turning a panic into an error.
// The library is a stranger's code fed a stranger's bytes: a panic inside it
// means the file cannot be read, not that the process should stop. Only the
// library's calls are guarded, so a panic in this package's own checks still
// shows up in tests and fuzzing.
func guard(call func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = yamlPanic{r}
		}
	}()
	return call()
}

// duplicateKeys reports every key defined twice in one mapping.
func duplicateKeys(name string, root ast.Node) ErrorList {
	var errs ErrorList
	ast.Walk(visitFunc(func(n ast.Node) bool {
		m, ok := n.(*ast.MappingNode)
		if !ok {
			return true
		}
		first := map[string]*token.Token{}
		for _, mv := range m.Values {
			if mv == nil || mv.Key == nil || mv.Key.GetToken() == nil {
				continue
			}
			k, tk := keyText(mv.Key), mv.Key.GetToken()
			if prev, dup := first[k]; dup {
				e := &Error{File: name, Path: displayPath(mv.Key.GetPath()), Msg: fmt.Sprintf("duplicate key %q", k)}
				if tk.Position != nil {
					e.Line, e.Column = tk.Position.Line, tk.Position.Column
				}
				if prev.Position != nil {
					e.Msg += fmt.Sprintf(" (first at line %d)", prev.Position.Line)
				}
				errs = append(errs, e)
				continue
			}
			first[k] = tk
		}
		return true
	}), root)
	return errs
}

// maxAliasNodes bounds how many nodes YAML aliases may add to a world file
// once expanded. Aliases nest (a list of aliases to lists of aliases…), so a
// few kilobytes could otherwise expand to billions of tasks and take the
// loader down: the "billion laughs" attack. Sharing small parts of a world
// stays well under the bound.
const maxAliasNodes = 10_000

// checkAliases reports a file whose aliases expand beyond maxAliasNodes.
func checkAliases(name string, root ast.Node) *Error {
	anchors := map[string]int{} // anchor name → expanded size of its value
	added := 0
	var over *token.Token
	// size returns the expanded node count of n, saturating above the bound.
	var size func(n ast.Node) int
	size = func(n ast.Node) int {
		if n == nil || over != nil {
			return 0
		}
		const limit = maxAliasNodes + 1
		sum := func(parts ...int) int {
			t := 1
			for _, p := range parts {
				t = min(t+p, limit)
			}
			return t
		}
		switch c := n.(type) {
		case *ast.DocumentNode:
			return size(c.Body)
		case *ast.MappingNode:
			parts := make([]int, len(c.Values))
			for i, mv := range c.Values {
				parts[i] = size(mv)
			}
			return sum(parts...)
		case *ast.MappingValueNode:
			var k int
			if c.Key != nil {
				k = size(c.Key)
			}
			return sum(k, size(c.Value))
		case *ast.MappingKeyNode:
			return sum(size(c.Value))
		case *ast.SequenceNode:
			parts := make([]int, len(c.Values))
			for i, v := range c.Values {
				parts[i] = size(v)
			}
			return sum(parts...)
		case *ast.TagNode:
			return sum(size(c.Value))
		case *ast.AnchorNode:
			v := size(c.Value)
			if c.Name != nil && c.Name.GetToken() != nil {
				anchors[c.Name.GetToken().Value] = v
			}
			return sum(v)
		case *ast.AliasNode:
			var v int
			if c.Value != nil && c.Value.GetToken() != nil {
				v = anchors[c.Value.GetToken().Value]
			}
			added = min(added+v, limit)
			if added > maxAliasNodes {
				over = c.GetToken()
			}
			return sum(v)
		}
		return 1
	}
	size(root)
	if over == nil {
		return nil
	}
	e := &Error{File: name, Msg: fmt.Sprintf("aliases expand the file by more than %d nodes; use them to share small parts only", maxAliasNodes)}
	if over.Position != nil {
		e.Line, e.Column = over.Position.Line, over.Position.Column
	}
	return e
}

// keyText is the text of a mapping key as the decoder matches it.
func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(ast.ScalarNode); ok {
		if v := s.GetValue(); v != nil {
			return fmt.Sprint(v)
		}
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return k.String()
}

// syntaxError is the *Error of a parser's err on src: placed where a
// quote or bracket left open opened (unclosedHint; the parser noticed it
// only where the text stopped making sense), with the parser's own
// position in the message, and the field there where it can be known.
func syntaxError(name string, src []byte, err error) *Error {
	e := fromYAMLError(name, nil, err)
	syntax, json := yamlSyntax, strings.EqualFold(filepath.Ext(name), ".json")
	if rest, ok := strings.CutPrefix(e.Msg, yamlSyntax); ok && json {
		// JSON is read as the YAML it is, but its writer knows it as JSON.
		syntax = "JSON syntax error: "
		e.Msg = syntax + rest
	}
	if l, c, hint := unclosedHint(src, e.Line, e.Column); hint != "" {
		e.Msg = fmt.Sprintf("%s%s; the parser stopped at line %d, column %d: %s", syntax, hint, e.Line, e.Column, strings.TrimPrefix(e.Msg, syntax))
		e.Line, e.Column = l, c
	} else if lines := bytes.Split(src, []byte("\n")); e.Line >= 1 && e.Line <= len(lines) {
		line := lines[e.Line-1]
		if lead := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]; bytes.IndexByte(lead, '\t') >= 0 {
			// The parser says only that a tab cannot start a token. The
			// field is named as if the tabs were two spaces each.
			e.Msg = fmt.Sprintf("%sline %d is indented with a tab, and YAML indents with spaces only", syntax, e.Line)
			fixed := slices.Clone(lines)
			fixed[e.Line-1] = append(bytes.ReplaceAll(lead, []byte("\t"), []byte("  ")), line[len(lead):]...)
			src = bytes.Join(fixed, []byte("\n"))
		}
	}
	e.Path = syntaxPath(src, e.Line)
	return e
}

// yamlSyntax begins the message of an error of the parser.
const yamlSyntax = "YAML syntax error: "

// fromYAMLError turns a parser or decoder error into an *Error with position and path.
func fromYAMLError(name string, root ast.Node, err error) *Error {
	var yp yamlPanic
	if errors.As(err, &yp) {
		return &Error{File: name, Msg: "cannot read the file: " + yp.Error()}
	}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &Error{File: name, Msg: err.Error()}
	}
	tk := ye.GetToken()
	e := &Error{File: name, Msg: ye.GetMessage()}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	if root == nil {
		// The parser failed: there is no tree to name a path in.
		e.Msg = yamlSyntax + e.Msg
		return e
	}
	if tk != nil {
		e.Path = pathOfToken(root, tk)
	}
	var (
		uf *yaml.UnknownFieldError
		te *yaml.TypeError
		ut *yaml.UnexpectedNodeTypeError
		oe *yaml.OverflowError
	)
	switch {
	case errors.As(err, &uf):
		// goccy says `unknown field "x"`; name what is allowed there.
		e.Msg = strings.TrimSpace(uf.Message)
		if known := fieldsAt(e.Path); len(known) > 0 {
			e.Msg += " (expected one of " + strings.Join(known, ", ") + ")"
		}
		return e // positioned at the unknown key itself
	case errors.As(err, &te) && te.Token != nil && te.SrcType.Kind() == reflect.String && isNumberKind(te.DstType.Kind()) &&
		te.Token.Type != token.DoubleQuoteType && te.Token.Type != token.SingleQuoteType && numberLike.MatchString(te.Token.Value):
		// A number YAML could not hold as one (1e400) arrives as a string.
		e.Msg = fmt.Sprintf("number %s is out of range for %s", te.Token.Value, kindName(te.DstType.String()))
	case errors.As(err, &te):
		e.Msg = fmt.Sprintf("expected %s, got %s", kindName(te.DstType.String()), kindName(te.SrcType.String()))
	case errors.As(err, &ut):
		e.Msg = fmt.Sprintf("expected %s, got %s", nodeKind(ut.Expected), nodeKind(ut.Actual))
		if e.Path == "" {
			e.Msg = "a world file is a mapping of fields such as version, name and roles; " + strings.TrimPrefix(e.Msg, "expected a mapping, ")
		}
	case errors.As(err, &oe):
		e.Msg = fmt.Sprintf("number %s is out of range for %s", oe.SrcNum, kindName(oe.DstType.String()))
	}
	if e.Path != "" {
		// A list or mapping written in block style is named by its key, not
		// by its first entry on a later line.
		if l, c, ok := locate(root, e.Path); ok {
			e.Line, e.Column = l, c
		}
	}
	return e
}

// isNumberKind reports whether k holds a number.
func isNumberKind(k reflect.Kind) bool {
	return isInt(k) || k == reflect.Float32 || k == reflect.Float64
}

// numberLike matches a plain scalar written as a number.
var numberLike = regexp.MustCompile(`^[-+]?([0-9][0-9_]*)?\.?[0-9]+([eE][-+]?[0-9]+)?$`)

// fieldsAt lists the fields allowed in the mapping that holds the field at
// path (a display path such as "projects[0].tasks[1].owner"), in schema order.
func fieldsAt(path string) []string {
	t := reflect.TypeFor[file]()
	segs := splitPath(path)
	if len(segs) == 0 {
		return nil
	}
	for _, s := range segs[:len(segs)-1] {
		if s.field == "" {
			continue // an index: the element type is reached below
		}
		if t.Kind() == reflect.Map { // a key of a mapping such as a case's attributes
			for t = t.Elem(); t.Kind() == reflect.Pointer; t = t.Elem() {
			}
			continue
		}
		f, ok := fieldByTag(t, s.field)
		if !ok {
			return nil
		}
		t = f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		// Fields without a key (a distribution's fixed value, set) are
		// not written in the file.
		if name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == tag {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func kindName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "worlds."), strings.HasPrefix(t, "*worlds."):
		return "a mapping"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "*int"):
		return "an integer"
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "*float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	}
	return t
}

func nodeKind(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType, ast.LiteralType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType, ast.InfinityType, ast.NanType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "null"
	case ast.AliasType:
		return "an alias"
	}
	return strings.ToLower(t.String())
}

// hereKey is the key syntaxPath puts where a syntax error is.
const hereKey = "corpsim_syntax_error_here"

// blockKeyLine matches a block mapping line's indentation, optional "- " and key.
var blockKeyLine = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z0-9_.-]+):(?:\s|$)`)

// syntaxPath names, where it can be known, the field a syntax error at
// line (1-based) is in: the lines before it, which parsed, with the error's
// line replaced by a placeholder at the same place in the structure (its
// key kept, its value dropped), are parsed again and the placeholder's
// path is read. "" when that does not parse either.
func syntaxPath(src []byte, line int) string {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	bad := strings.TrimRight(lines[line-1], "\r")
	var stub, key string
	if m := blockKeyLine.FindStringSubmatch(bad); m != nil {
		stub, key = m[1]+m[2]+": 0", m[2]
	} else {
		indent := len(bad) - len(strings.TrimLeft(bad, " "))
		prefix := bad[:indent]
		if rest := bad[indent:]; strings.HasPrefix(rest, "- ") || rest == "-" {
			prefix += "- "
		}
		stub = prefix + hereKey + ": 0"
	}
	probe := strings.Join(append(slices.Clone(lines[:line-1]), stub), "\n")
	var f *ast.File
	if guard(func() (err error) {
		f, err = parser.ParseBytes([]byte(probe), 0, parser.AllowDuplicateMapKey())
		return err
	}) != nil || len(f.Docs) != 1 || f.Docs[0].Body == nil {
		return ""
	}
	var found string
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil && mv.Key.GetToken() != nil &&
			mv.Key.GetToken().Position != nil && mv.Key.GetToken().Position.Line == line {
			if k := keyText(mv.Key); k == key || k == hereKey {
				found = displayPath(mv.Key.GetPath())
			}
		}
		return found == ""
	}), f.Docs[0].Body)
	found = strings.TrimSuffix(found, "."+hereKey)
	if found == hereKey {
		return ""
	}
	return found
}

// pathOfToken finds the node a token belongs to and returns its field path.
func pathOfToken(root ast.Node, tk *token.Token) string {
	var found string
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if found != "" || n == nil {
			return false
		}
		if n.GetToken() == tk {
			found = n.GetPath()
			return false
		}
		if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil && mv.Key.GetToken() == tk {
			found = mv.Key.GetPath()
			return false
		}
		return true
	}), root)
	return displayPath(found)
}

type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}

// displayPath turns goccy's "$.projects[0].id" into "projects[0].id".
func displayPath(p string) string {
	p = strings.TrimPrefix(p, "$")
	p = strings.TrimPrefix(p, ".")
	return p
}

// pathSeg is one step of a display path: a field name, or an index when field is "".
type pathSeg struct {
	field string
	index int
}

// splitPath splits "projects[0].tasks[2].deps" into its steps. A path it
// cannot read yields the steps read so far.
func splitPath(path string) []pathSeg {
	var segs []pathSeg
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			segs = append(segs, pathSeg{field: name})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil {
				return segs
			}
			segs = append(segs, pathSeg{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}

// locate returns the position of the deepest node that exists along path
// (so a missing field is reported at the mapping that lacks it). A scalar or
// a flow-style collection is located at its first character; a block-style
// list or mapping at the key that names it, since its first entry is on a
// later line.
func locate(root ast.Node, path string) (line, col int, ok bool) {
	n, key := root, (*token.Token)(nil)
	for _, s := range splitPath(path) {
		next, nextKey := child(n, s)
		if next == nil {
			break
		}
		n, key = next, nextKey
	}
	tk := startToken(n)
	switch c := unwrap(n).(type) {
	case *ast.MappingNode:
		if !c.IsFlowStyle && key != nil {
			tk = key
		}
	case *ast.SequenceNode:
		if !c.IsFlowStyle && key != nil {
			tk = key
		}
	}
	if tk == nil || tk.Position == nil {
		return 0, 0, false
	}
	return tk.Position.Line, tk.Position.Column, true
}

// unwrap looks through anchors and tags at the value they carry.
func unwrap(n ast.Node) ast.Node {
	for {
		switch c := n.(type) {
		case *ast.AnchorNode:
			n = c.Value
		case *ast.TagNode:
			n = c.Value
		default:
			return n
		}
	}
}

// child returns the node at one step below n, and the token of the key that
// names it (nil for a list entry).
func child(n ast.Node, s pathSeg) (ast.Node, *token.Token) {
	switch c := unwrap(n).(type) {
	case *ast.MappingNode:
		if s.field == "" {
			return nil, nil
		}
		for _, mv := range c.Values {
			if mv != nil && mv.Key != nil && mv.Value != nil && keyText(mv.Key) == s.field {
				return mv.Value, mv.Key.GetToken()
			}
		}
	case *ast.MappingValueNode:
		if s.field != "" && c.Key != nil && c.Value != nil && keyText(c.Key) == s.field {
			return c.Value, c.Key.GetToken()
		}
	case *ast.SequenceNode:
		if s.field == "" && s.index >= 0 && s.index < len(c.Values) && c.Values[s.index] != nil {
			return c.Values[s.index], nil
		}
	}
	return nil, nil
}

// startToken is the token at which a node starts in the file: for a block
// mapping, its first key rather than the first ':'.
func startToken(n ast.Node) *token.Token {
	if n == nil {
		return nil
	}
	switch c := n.(type) {
	case *ast.MappingNode:
		if !c.IsFlowStyle && len(c.Values) > 0 && c.Values[0] != nil && c.Values[0].Key != nil {
			return c.Values[0].Key.GetToken()
		}
	case *ast.MappingValueNode:
		if c.Key != nil {
			return c.Key.GetToken()
		}
	}
	return n.GetToken()
}

// validator checks a decoded file and builds the World, collecting errors.
type validator struct {
	name string
	root ast.Node
	lim  Limits // with defaults
	// roleSkills holds role+"\x00"+skill for the skills some member of a
	// role has (skillHeld), from the file's members.
	roleSkills map[string]bool
	errs       ErrorList
	// overLimit counts the errors in errs that are refusals for a limit.
	overLimit int
	// warnings are mistakes that do not stop a run (World.Warnings).
	warnings ErrorList
	// version is the file's format version (Version when it names none
	// or a wrong one, so that the rest is checked as the newest).
	version int
	// refTypes are the record types by id, for outcome expressions (systems.go).
	refTypes map[string]*RecordType
	// avail is the world's availability once read (meetings.go).
	avail *Availability
	// horizon is the world's horizon once read (0 before): an RFC 3339
	// instant past it is refused (when).
	horizon clock.Time
}

// needs reports whether the file's format version is at least version,
// and reports at path that what needs it when it is not: a construct added
// in a later version is refused by name in an earlier file, which then
// runs exactly as it always did.
func (v *validator) needs(version int, path, what string) bool {
	if v.version >= version {
		return true
	}
	v.errf(path, "%s needs version: %d (this file declares version %d)", what, version, v.version)
	return false
}

// finite reports x at path unless it is a finite number (YAML writes
// .nan and .inf) of at most MaxNumber in size: a value or penalty that is
// not one cannot be ordered, summed or recorded, and a score adds up
// millions of them (1e308 twice is +Inf, which no event can record).
func (v *validator) finite(path string, x *float64) {
	switch {
	case x == nil:
	case math.IsNaN(*x) || math.IsInf(*x, 0):
		v.errf(path, "%v is not a finite number", *x)
	case math.Abs(*x) > MaxNumber && !v.lim.Recorded:
		v.errf(path, "%v is larger than %g: a score adds up millions of them", *x, MaxNumber)
	}
}

// MaxNumber is the largest value or penalty a world may give (in size):
// the most tasks and tickets a session holds (Limits) times it stays far
// inside what a float64 sums exactly enough and records.
const MaxNumber = 1e12

// nonNegative reports x at path if it is below zero.
func (v *validator) nonNegative(path string, x *float64) {
	if x != nil && *x < 0 {
		v.errf(path, "must not be negative, got %v", *x)
	}
}

// warnf records a warning at path, located as errf locates an error.
func (v *validator) warnf(path, format string, args ...any) {
	e := &Error{File: v.name, Path: path, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Column, _ = locate(v.root, path)
	v.warnings = append(v.warnings, e)
}

// errf records an error at path (in display form, e.g. "projects[0].tasks[1].effort"),
// located at the node there or, when the field is missing, at the mapping that lacks it.
func (v *validator) errf(path, format string, args ...any) {
	e := &Error{File: v.name, Path: path, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Column, _ = locate(v.root, path)
	v.errs = append(v.errs, e)
}

func (v *validator) checkID(path, kind, id string, seen map[string]string) {
	switch {
	case id == "":
		v.errf(path, "missing %s id", kind)
	case !idPattern.MatchString(id):
		v.errf(path, "invalid %s id %q: use lower-case letters, digits, '-' and '_'", kind, id)
	case seen[id] != "":
		v.errf(path, "duplicate %s id %q (first defined at %s)", kind, id, seen[id])
	default:
		seen[id] = path
	}
}

// duration parses a required duration; positive says it must be more than zero.
// It reports and returns ok false when the duration is missing or wrong.
func (v *validator) duration(path, s string, dayLen clock.Duration, positive bool) (d clock.Duration, ok bool) {
	if s == "" {
		v.errf(path, "missing duration (for example \"2h\", \"30m\" or \"3d\")")
		return 0, false
	}
	d, err := clock.ParseDuration(s, dayLen)
	if err != nil {
		v.errf(path, "%s", strings.TrimPrefix(err.Error(), "clock: "))
		return 0, false
	}
	if positive && d == 0 {
		v.errf(path, "must be more than zero, got %q", s)
		return 0, false
	}
	return d, true
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

func (v *validator) build(f *file) *World {
	w := &World{Version: Version, Name: f.Name, Description: f.Description}
	v.roleSkills = map[string]bool{}
	for _, m := range f.Members {
		for _, sk := range m.Skills {
			v.roleSkills[m.Role+"\x00"+sk] = true
		}
	}
	switch {
	case f.Version == nil:
		v.errf("version", "missing version (this corpsim reads versions 1 to %d)", Version)
	case *f.Version < 1 || *f.Version > Version:
		v.errf("version", "unsupported version %d (this corpsim reads versions 1 to %d)", *f.Version, Version)
	default:
		w.Version = *f.Version
	}
	v.version = w.Version
	if f.Name == "" {
		v.errf("name", "missing world name")
	}

	// Calendar.
	start, err := time.ParseInLocation(time.RFC3339, f.Start, time.UTC) // never time.Local: the same file must mean the same calendar everywhere
	switch {
	case f.Start == "":
		v.errf("start", "missing start instant (RFC 3339, such as 2026-01-05T09:00:00Z)")
	case err != nil:
		v.errf("start", "expected an RFC 3339 instant such as 2026-01-05T09:00:00Z, got %q", f.Start)
	}
	cal := clock.Calendar{Start: start}
	if loc := v.zone("calendar.timezone", f.Calendar.Timezone); loc != nil {
		cal.Start = start.In(loc)
	}
	if f.Calendar.Hours != "" {
		a, b, ok := strings.Cut(f.Calendar.Hours, "-")
		ds, err1 := timeOfDay(a)
		de, err2 := timeOfDay(b)
		switch {
		case !ok || err1 != nil || err2 != nil:
			v.errf("calendar.hours", "expected working hours like \"09:00-17:00\", got %q", f.Calendar.Hours)
		case ds >= de:
			// Checked here, not left to Calendar.Validate: "00:00-00:00"
			// would otherwise read as the default 09:00-17:00.
			v.errf("calendar.hours", "the working day must start before it ends, got %q", f.Calendar.Hours)
		default:
			cal.DayStart, cal.DayEnd = ds, de
		}
	}
	if f.Calendar.Workdays != nil && len(f.Calendar.Workdays) == 0 && !v.lim.Recorded {
		v.errf("calendar.workdays", emptyWorkdays) // [] read as monday to friday
	}
	for i, d := range f.Calendar.Workdays {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok {
			v.errf(fmt.Sprintf("calendar.workdays[%d]", i), "unknown weekday %q (expected mon, tue, wed, thu, fri, sat or sun)", d)
			continue
		}
		cal.Workdays[wd] = true
	}
	for i, h := range f.Calendar.Holidays {
		if _, err := time.Parse("2006-01-02", h); err != nil {
			v.errf(fmt.Sprintf("calendar.holidays[%d]", i), "expected a date like 2026-01-19, got %q", h)
			continue
		}
		cal.Holidays = append(cal.Holidays, h)
	}
	if len(v.errs) == 0 {
		if err := cal.Validate(); err != nil {
			v.errf("calendar", "%s", strings.TrimPrefix(err.Error(), "clock: "))
		}
	}
	w.Calendar = cal
	dayLen := cal.DayLength()
	if h, ok := v.when("horizon", f.Horizon, &cal, true, true); ok {
		if h <= cal.NextWorking(0) {
			v.errf("horizon", "%s leaves no working time after the start", f.Horizon)
		}
		w.Horizon = h
		v.horizon = h
	}
	switch f.Dispatch {
	case "", DispatchAll:
		w.Dispatch = DispatchAll
	case DispatchOne:
		w.Dispatch = DispatchOne
	default:
		v.errf("dispatch", "unknown dispatch %q (expected %s or %s)", f.Dispatch, DispatchAll, DispatchOne)
	}

	// Roles and teams.
	roles := map[string]string{}
	for i, r := range f.Roles {
		v.checkID(fmt.Sprintf("roles[%d].id", i), "role", r.ID, roles)
		if r.Rate < 0 {
			v.errf(fmt.Sprintf("roles[%d].rate", i), "rate must not be negative, got %d", r.Rate)
		}
		w.Roles = append(w.Roles, Role{ID: r.ID, Title: r.Title, Rate: r.Rate})
	}
	teams := map[string]string{}
	for i, t := range f.Teams {
		v.checkID(fmt.Sprintf("teams[%d].id", i), "team", t.ID, teams)
		if t.Budget < 0 {
			v.errf(fmt.Sprintf("teams[%d].budget", i), "budget must not be negative, got %d", t.Budget)
		}
		w.Teams = append(w.Teams, Team{ID: t.ID, Name: t.Name, Budget: t.Budget})
	}

	// Members.
	members := map[string]string{}
	held := map[string]bool{}      // roles some member holds: approvers may be NPCs
	agentHeld := map[string]bool{} // roles some agent seat holds: NPCs take no work
	agentSeats := 0
	npcServes := map[string]bool{} // queues some NPC serves
	npcKnows := map[string]map[string]string{}
	for _, m := range f.Members {
		if m.NPC != nil {
			for _, q := range m.NPC.Serves {
				npcServes[q] = true
			}
			npcKnows[m.ID] = m.NPC.Knows
		}
	}
	for i, m := range f.Members {
		p := fmt.Sprintf("members[%d]", i)
		v.checkID(p+".id", "member", m.ID, members)
		v.ref(p+".role", "role", m.Role, roles)
		v.ref(p+".team", "team", m.Team, teams)
		held[m.Role] = true
		mem := Member{ID: m.ID, Name: m.Name, Role: m.Role, Team: m.Team, Manager: m.Manager, Skills: m.Skills}
		if m.NPC != nil {
			lo, okLo := v.duration(p+".npc.reply.min", m.NPC.Reply.Min, dayLen, false)
			hi, okHi := v.duration(p+".npc.reply.max", m.NPC.Reply.Max, dayLen, false)
			if okLo && okHi && hi < lo {
				v.errf(p+".npc.reply.max", "max (%s) is less than min (%s)", hi, lo)
			}
			mem.NPC = &NPC{ReplyMin: lo, ReplyMax: hi, Serves: m.NPC.Serves, Knows: m.NPC.Knows}
			for j, a := range m.NPC.Absent {
				ap := fmt.Sprintf("%s.npc.absent[%d]", p, j)
				from, ok1 := v.offset(ap+".from", a.From, &cal, true)
				d, ok2 := v.duration(ap+".for", a.For, dayLen, true)
				if ok1 && ok2 {
					mem.NPC.Absent = append(mem.NPC.Absent, Window{From: from, To: cal.AddWork(from, d)})
				}
			}
		} else {
			agentSeats++
			agentHeld[m.Role] = true
		}
		w.Members = append(w.Members, mem)
	}
	if len(f.Members) > 0 && agentSeats == 0 {
		v.errf("members", "no agent seats: every member is an NPC")
	}
	sort.SliceStable(w.Members, func(i, j int) bool { return w.Members[i].ID < w.Members[j].ID })
	for i, m := range f.Members {
		if m.Manager == "" {
			continue
		}
		if v.ref(fmt.Sprintf("members[%d].manager", i), "member", m.Manager, members) && m.Manager == m.ID {
			v.errf(fmt.Sprintf("members[%d].manager", i), "%s cannot manage themselves", m.ID)
		}
	}
	v.checkManagerCycles(f)

	// Queues.
	queues := map[string]string{}
	for i, q := range f.Queues {
		p := fmt.Sprintf("queues[%d]", i)
		v.checkID(p+".id", "queue", q.ID, queues)
		if len(q.ServedBy) == 0 {
			v.errf(p+".served_by", "queue %q is served by no role", q.ID)
		}
		served := npcServes[q.ID]
		for j, r := range q.ServedBy {
			if v.ref(fmt.Sprintf("%s.served_by[%d]", p, j), "role", r, roles) && agentHeld[r] {
				served = true
			}
		}
		if len(q.ServedBy) > 0 && !served {
			v.errf(p+".served_by", "nobody serves queue %q: no agent seat holds any of the roles %s", q.ID, strings.Join(q.ServedBy, ", "))
		}
		order := q.Order
		switch order {
		case "":
			order = "fifo"
		case "fifo", "priority":
		default:
			v.errf(p+".order", "unknown order %q (expected fifo or priority)", q.Order)
		}
		if q.WIP < 0 {
			v.errf(p+".wip", "wip must not be negative, got %d", q.WIP)
		}
		w.Queues = append(w.Queues, Queue{ID: q.ID, ServedBy: q.ServedBy, Order: order, WIP: q.WIP})
	}

	// Approval chains.
	chains := map[string]string{}
	for i, c := range f.Approvals {
		p := fmt.Sprintf("approvals[%d]", i)
		v.checkID(p+".id", "approval chain", c.ID, chains)
		if len(c.Steps) == 0 {
			v.errf(p+".steps", "approval chain %q has no steps", c.ID)
		}
		ch := Chain{ID: c.ID}
		for j, s := range c.Steps {
			sp := fmt.Sprintf("%s.steps[%d]", p, j)
			if v.ref(sp+".role", "role", s.Role, roles) && !held[s.Role] {
				v.errf(sp+".role", "approval chain %q names role %q, which no member holds", c.ID, s.Role)
			}
			if s.Above < 0 {
				v.errf(sp+".above", "threshold must not be negative, got %d", s.Above)
			}
			st := Step{Role: s.Role, Above: s.Above}
			if s.EscalateAfter != "" {
				st.EscalateAfter, _ = v.duration(sp+".escalate_after", s.EscalateAfter, dayLen, true)
			}
			ch.Steps = append(ch.Steps, st)
		}
		w.Approvals = append(w.Approvals, ch)
	}

	// Projects and tasks.
	projects := map[string]string{}
	tasks := map[string]string{}
	for i, pr := range f.Projects {
		for j, t := range pr.Tasks {
			v.checkID(fmt.Sprintf("projects[%d].tasks[%d].id", i, j), "task", t.ID, tasks)
		}
	}
	servedBy := map[string][]string{}
	for _, q := range f.Queues {
		if _, dup := servedBy[q.ID]; !dup {
			servedBy[q.ID] = q.ServedBy
		}
	}
	var late []int // the projects starting at or after the horizon
	for i, pr := range f.Projects {
		p := fmt.Sprintf("projects[%d]", i)
		v.checkID(p+".id", "project", pr.ID, projects)
		v.ref(p+".team", "team", pr.Team, teams)
		queueOK := v.ref(p+".queue", "queue", pr.Queue, queues)
		v.finite(p+".value", &pr.Value)
		v.nonNegative(p+".value", &pr.Value)
		proj := Project{ID: pr.ID, Title: pr.Title, Team: pr.Team, Queue: pr.Queue, Value: pr.Value}
		proj.Deadline, _ = v.when(p+".deadline", pr.Deadline, &cal, true, true)
		proj.Start, _ = v.offset(p+".start", pr.Start, &cal, false)
		switch {
		case proj.Start > 0 && proj.Deadline > 0 && proj.Start >= proj.Deadline:
			v.errf(p+".start", "project %q starts at or after its deadline", pr.ID)
		case w.Horizon > 0 && proj.Start >= w.Horizon:
			late = append(late, i)
		}
		if len(pr.Tasks) == 0 {
			v.errf(p+".tasks", "project %q has no tasks", pr.ID)
		}
		team := slices.IndexFunc(w.Teams, func(tm Team) bool { return tm.ID == pr.Team }) // its budget, for the purchases' warning
		for j, t := range pr.Tasks {
			tp := fmt.Sprintf("%s.tasks[%d]", p, j)
			if v.ref(tp+".role", "role", t.Role, roles) {
				switch {
				case !agentHeld[t.Role] && !npcServes[pr.Queue]:
					v.errf(tp+".role", "task %q needs role %q, which no agent seat holds", t.ID, t.Role)
				case queueOK && !slices.Contains(servedBy[pr.Queue], t.Role):
					// Only a role serving the project's queue may claim its tasks.
					v.errf(tp+".role", "task %q needs role %q, which does not serve queue %q", t.ID, t.Role, pr.Queue)
				}
			}
			v.skillHeld(tp+".skill", "task", t.ID, t.Role, t.Skill)
			task := Task{ID: t.ID, Title: t.Title, Role: t.Role, Purchase: t.Purchase, Skill: t.Skill, Priority: t.Priority}
			task.Effort, _ = v.duration(tp+".effort", t.Effort, dayLen, true)
			task.Value = float64(task.Effort) / float64(clock.Hour)
			if t.Value != nil {
				v.finite(tp+".value", t.Value)
				v.nonNegative(tp+".value", t.Value)
				task.Value = *t.Value
			}
			for k, d := range t.Deps {
				dp := fmt.Sprintf("%s.deps[%d]", tp, k)
				switch {
				case d == t.ID:
					v.errf(dp, "task %q depends on itself", t.ID)
				case v.ref(dp, "task", d, tasks):
					task.Deps = append(task.Deps, d)
				}
			}
			if t.Purchase < 0 {
				v.errf(tp+".purchase", "purchase must not be negative, got %d", t.Purchase)
			}
			if t.Purchase > 0 {
				switch {
				case t.Approval != "":
					if v.ref(tp+".approval", "approval chain", t.Approval, chains) {
						task.Chain = t.Approval
					}
				case len(f.Approvals) == 1:
					task.Chain = f.Approvals[0].ID
				default:
					v.errf(tp+".approval", "task %q makes a purchase: name its approval chain", t.ID)
				}
			} else if t.Approval != "" {
				v.errf(tp+".approval", "task %q names an approval chain but makes no purchase", t.ID)
			}
			if team >= 0 && t.Purchase > w.Teams[team].Budget {
				v.warnf(tp+".purchase", "task %q buys for %d, more than team %s's whole budget (%d): the within-budget rule refuses its completion, so it can never be done", t.ID, t.Purchase, pr.Team, w.Teams[team].Budget)
			}
			proj.Tasks = append(proj.Tasks, task)
		}
		w.Projects = append(w.Projects, proj)
	}
	if len(late) > 0 {
		// A warning, not an error: a horizon cut short (a test, a quick
		// look at a long portfolio) leaves the later projects out. One
		// warning for them all, at the first.
		first, more := f.Projects[late[0]], ""
		if len(late) > 1 {
			more = fmt.Sprintf(" (and %d projects after it)", len(late)-1)
		}
		v.warnf(fmt.Sprintf("projects[%d].start", late[0]), "%s falls at or after the horizon: project %q%s never starts in this world's sessions", first.Start, first.ID, more)
	}
	v.checkCycles(f)
	r := &refs{roles: roles, teams: teams, members: members, queues: queues, chains: chains, tasks: tasks,
		agentHeld: agentHeld, npcServes: npcServes, servedBy: servedBy, npcKnows: npcKnows}
	for i, pr := range f.Projects {
		for j, t := range pr.Tasks {
			w.Projects[i].Tasks[j].Info = v.info(fmt.Sprintf("projects[%d].tasks[%d].info", i, j), t.Info, r)
		}
	}
	for i, m := range f.Members {
		if m.NPC == nil {
			continue
		}
		for j, q := range m.NPC.Serves {
			v.ref(fmt.Sprintf("members[%d].npc.serves[%d]", i, j), "queue", q, queues)
		}
	}
	r.memberRole, r.chainAttr = map[string]string{}, map[string]string{}
	for _, m := range f.Members {
		r.memberRole[m.ID] = m.Role
	}
	for i, c := range f.Approvals {
		if c.Attribute != "" && v.needs(2, fmt.Sprintf("approvals[%d].attribute", i), "an approval chain reading an attribute") {
			r.chainAttr[c.ID] = c.Attribute
			if ch, ok := w.Chain(c.ID); ok {
				ch.Attribute = c.Attribute
			}
		}
	}
	v.systems(f, w, r)
	v.availability(f, w, r)
	v.cases(f, w, r)
	v.separation(f, w, r)
	v.arrivals(f, w, r)
	v.interruptions(f, w, r)
	v.delegateLimits(f, w, r)
	v.costs(f, w)
	v.calendars(f, w)

	// Scoring.
	v.finite("scoring.violation_penalty", f.Scoring.ViolationPenalty)
	v.finite("scoring.sla_penalty", f.Scoring.SLAPenalty)
	v.finite("scoring.budget_penalty", f.Scoring.BudgetPenalty)
	v.finite("scoring.wrong_penalty", f.Scoring.WrongPenalty)
	// A negative penalty would pay for what it punishes (a violation
	// earning points teaches an agent to cheat).
	v.nonNegative("scoring.violation_penalty", f.Scoring.ViolationPenalty)
	v.nonNegative("scoring.sla_penalty", f.Scoring.SLAPenalty)
	v.nonNegative("scoring.budget_penalty", f.Scoring.BudgetPenalty)
	v.nonNegative("scoring.wrong_penalty", f.Scoring.WrongPenalty)
	w.Scoring = Scoring{LateHalfLife: 5 * dayLen, ViolationPenalty: 1, SLAPenalty: 1, BudgetPenalty: 0.01}
	if f.Scoring.BudgetPenalty != nil {
		w.Scoring.BudgetPenalty = *f.Scoring.BudgetPenalty
	}
	if f.Scoring.SLAPenalty != nil {
		w.Scoring.SLAPenalty = *f.Scoring.SLAPenalty
	}
	if f.Scoring.WrongPenalty != nil {
		w.Scoring.WrongPenalty = *f.Scoring.WrongPenalty
	}
	if f.Scoring.LateHalfLife != "" {
		w.Scoring.LateHalfLife, _ = v.duration("scoring.late_half_life", f.Scoring.LateHalfLife, dayLen, true)
	}
	if f.Scoring.ViolationPenalty != nil {
		w.Scoring.ViolationPenalty = *f.Scoring.ViolationPenalty
	}
	if len(v.errs) == 0 {
		v.checkSize(f, w, v.lim)
		v.warnRecordsRunOut(w)
	}
	return w
}

// skillHeld refuses, at path, a skill no member of role has: what needs
// it could never be claimed (as one of a role nobody holds). A recorded
// world reads as it did then.
func (v *validator) skillHeld(path, what, id, role, skill string) {
	if skill == "" || role == "" || v.lim.Recorded || v.roleSkills[role+"\x00"+skill] {
		return
	}
	v.errf(path, "%s %q needs skill %q, which no member of role %q has", what, id, skill, role)
}

// warnRecordsRunOut warns of a case arrival expected to bring more cases
// than a record type it draws from has records: a case draws one that no
// earlier case named while there is one, and then one an earlier case
// named, whose outcome the two then write over each other.
func (v *validator) warnRecordsRunOut(w *World) {
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		c := slices.IndexFunc(w.Cases, func(t CaseTemplate) bool { return t.ID == a.Case })
		if a.Case == "" || c < 0 {
			continue
		}
		tpl := &w.Cases[c]
		for _, at := range tpl.Attrs {
			t, ok := w.RecordType(at.Record)
			written := slices.ContainsFunc(tpl.Steps, func(st CaseStep) bool { return st.Outcome != nil && st.Outcome.Attr == at.Name })
			// Only a record a step's outcome writes is drawn fresh (and can
			// be written over); a copied type has as many as its source.
			if at.Kind != AttrRecord || !ok || !written || t.Copy != nil {
				continue
			}
			have := len(t.Records)
			if t.Generate != nil {
				have += t.Generate.Count
			}
			if n := w.ExpectedTickets(a, 1); n > float64(have) {
				v.warnf(fmt.Sprintf("arrivals[%d]", i), "about %.0f %s cases arrive at load 1, each drawing one %s record (attribute %s), of which there are %d: once each was named, a case shares its record with an earlier one, and their outcomes write over each other (make more records)",
					n, a.Case, at.Record, at.Name, have)
			}
		}
	}
}

// ref checks that id names a defined thing of kind; it reports and returns false if not.
func (v *validator) ref(path, kind, id string, defined map[string]string) bool {
	if id == "" {
		v.errf(path, "missing %s", kind)
		return false
	}
	if defined[id] == "" {
		known := slices.Sorted(maps.Keys(defined))
		v.errf(path, "unknown %s %q (defined: %s)", kind, id, strings.Join(known, ", "))
		return false
	}
	return true
}

// checkManagerCycles reports reporting lines that loop.
func (v *validator) checkManagerCycles(f *file) {
	manager := map[string]string{}
	index := map[string]int{}
	for i, m := range f.Members {
		manager[m.ID] = m.Manager
		index[m.ID] = i
	}
	reported := map[string]bool{}
	for _, m := range f.Members {
		seen := map[string]bool{}
		var path []string
		for id := m.ID; id != "" && !seen[id]; id = manager[id] {
			seen[id] = true
			path = append(path, id)
			if next := manager[id]; next != "" && next == m.ID {
				cycle := append(path, m.ID)
				key := strings.Join(cycle, ">")
				if !reported[m.ID] {
					for _, c := range cycle {
						reported[c] = true
					}
					v.errf(fmt.Sprintf("members[%d].manager", index[m.ID]), "reporting lines loop: %s", strings.Join(cycle, " -> "))
				}
				_ = key
				break
			}
		}
	}
}

// checkCycles reports every dependency cycle among tasks, printed as the cycle.
func (v *validator) checkCycles(f *file) {
	deps := map[string][]string{}
	where := map[string]string{}
	var order []string
	for i, pr := range f.Projects {
		for j, t := range pr.Tasks {
			if _, dup := deps[t.ID]; dup {
				continue
			}
			deps[t.ID] = t.Deps
			where[t.ID] = fmt.Sprintf("projects[%d].tasks[%d]", i, j)
			order = append(order, t.ID)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for k, d := range deps[id] {
			if _, ok := deps[d]; !ok || d == id {
				continue // unknown and self dependencies are reported where deps are checked
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				i := len(stack) - 1
				for stack[i] != d {
					i--
				}
				cycle := append(append([]string{}, stack[i:]...), d)
				v.errf(fmt.Sprintf("%s.deps[%d]", where[id], k), "dependency cycle: %s", strings.Join(cycle, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for _, id := range order {
		if color[id] == white {
			visit(id)
		}
	}
}

func timeOfDay(s string) (clock.Duration, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		if strings.TrimSpace(s) == "24:00" {
			return 24 * clock.Hour, nil
		}
		return 0, err
	}
	return clock.Duration(t.Hour())*clock.Hour + clock.Duration(t.Minute())*clock.Minute, nil
}
