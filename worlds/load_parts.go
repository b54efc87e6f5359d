package worlds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// The YAML library's tree of a file takes about a hundred times the file's
// size (a token with its position and text for every scalar and
// punctuation mark, a node above it): a generated world of 7.6 MB —
// 10,000 members and 100,000 tasks — took 1.2 GiB to load. Most of a large
// world file is a few long lists (projects, members) whose entries do not
// depend on each other, so loadInParts decodes such a list a part (a run of
// entries) at a time and keeps only the decoded values, never the tree of
// the whole file.
//
// It is an optimization of a file that loads without a mistake, never a
// second reader with its own rules: it takes only a file whose long lists
// it can cut without reading their YAML (see cutParts), decodes every part
// with the same parser, checks and options as Load, and gives up — Load then
// reads the whole file as before — on anything it does not expect, on any
// error in any part and on any mistake the validator finds, so that every
// error message, with its line, column and path, comes from the whole file.

// partBytes is about how much of a long list loadInParts decodes at once;
// files shorter than that are read whole.
const partBytes = 256 << 10

// keyLine is a top-level key with nothing after it on its line: the head
// of a block-style section.
var keyLine = regexp.MustCompile(`^([a-z_]+):[ ]*$`)

// loadInParts loads a world file of nodes YAML nodes a part at a time (see above). It
// returns nil when it does not apply or finds any mistake; Load then reads
// the file whole. The exceptions are a file whose only mistakes are
// limits it is over (a world too large), and a file too large to be read
// whole (large: over Limits.Nodes): their mistakes are returned, those
// the validator finds with their paths but without line and column,
// those in a part (YAML, types, unknown fields) where they are in the
// file, rather than reading the whole file's tree to place them.
func loadInParts(name string, src []byte, partBytes int, lim Limits, nodes int, par func(int, func(int))) (*World, ErrorList) {
	if len(src) < partBytes {
		return nil, nil
	}
	large := nodes > lim.Nodes
	c, ok := cutParts(src, partBytes)
	if !ok && large {
		return nil, ErrorList{tooLarge(name, nodes, lim, &c.stop)}
	}
	if !ok || len(c.parts) == 0 {
		return nil, nil
	}
	if errs := c.overLimit(name, lim); errs != nil {
		return nil, errs
	}
	if large && countNodes(c.rest) > lim.Nodes {
		return nil, nil
	}
	var f file
	root, e := decodePart(name, c.rest, &f, lim)
	if e != nil {
		if large {
			c.restError(e)
			return nil, ErrorList{e}
		}
		return nil, nil
	}
	// Each list cut out must have been the value of a top-level key: the
	// key, now alone on its line, must be one with no value in the rest.
	for _, cut := range c.cuts {
		if !emptyKeyAt(root, cut.key, cut.line) {
			return nil, nil
		}
	}
	dst := reflect.ValueOf(&f).Elem()
	for _, p := range c.parts {
		if n := countNodes(p.text); large && n > lim.Nodes {
			// An entry too large for the parser on its own.
			return nil, ErrorList{{File: name, Line: p.line, Column: 1, Path: fmt.Sprintf("%s[%d]", p.cut.key, p.first),
				Msg: fmt.Sprintf("%v: the part of the list read at once from here holds about %d YAML nodes, above the limit of %d (%s); "+
					"split an entry this large (a project of thousands of tasks into several projects), or raise the limit",
					ErrLimit, n, lim.Nodes, FlagNodes)}}
		}
	}
	// Each part is decoded on its own — with par, all of them at once
	// first; without, each as its turn comes, so that the first mistake
	// stops the reading — and they are put together in file order, the
	// first mistake in file order winning.
	decoded := make([]file, len(c.parts))
	mistakes := make([]*Error, len(c.parts))
	decodeOne := func(i int) { _, mistakes[i] = decodePart(name, c.parts[i].text, &decoded[i], lim) }
	if par != nil {
		par(len(c.parts), decodeOne)
	}
	for i, p := range c.parts {
		if par == nil {
			decodeOne(i)
		}
		if e := mistakes[i]; e != nil {
			if large {
				p.placeError(e)
				return nil, ErrorList{e}
			}
			return nil, nil
		}
		// A part holds one list field; append its entries in file order.
		field := dst.Field(p.field)
		field.Set(reflect.AppendSlice(field, reflect.ValueOf(decoded[i]).Field(p.field)))
		decoded[i] = file{} // what it held is in f now
	}
	v := &validator{name: name, lim: lim} // no tree: a mistake sends the file to Load's whole reading
	w := v.build(&f)
	if len(v.errs) > 0 {
		if len(v.errs) == v.overLimit || large {
			return nil, v.errs
		}
		return nil, nil
	}
	sum := sha256.Sum256(src)
	w.Hash = hex.EncodeToString(sum[:])
	w.File = name
	w.Warnings = v.warnings
	return w, nil
}

// decodePart decodes one YAML document as Load does, into f, and returns its
// tree, or the first mistake Load would report (or a failure of the library).
func decodePart(name string, src []byte, f *file, lim Limits) (ast.Node, *Error) {
	var astFile *ast.File
	if err := guard(func() (err error) {
		astFile, err = parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
		return err
	}); err != nil {
		return nil, syntaxError(name, src, err) // of the part: placeError shifts its line and index
	}
	if len(astFile.Docs) != 1 || astFile.Docs[0].Body == nil {
		return nil, &Error{File: name, Msg: "not one YAML document"}
	}
	root := astFile.Docs[0].Body
	if errs := duplicateKeys(name, root); len(errs) > 0 {
		return nil, errs[0]
	}
	if e := checkAliases(name, root); e != nil {
		return nil, e
	}
	if !lim.Recorded {
		if errs := checkDecoded(name, root); len(errs) > 0 {
			return nil, errs[0]
		}
	}
	if e := fractionsIntoInts(name, root, lim); e != nil {
		return nil, e
	}
	if err := guard(func() error {
		return yaml.NodeToValue(root, f, yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey())
	}); err != nil {
		return nil, fromYAMLError(name, root, err)
	}
	return root, nil
}

// emptyKeyAt reports whether the top-level mapping root has key, on line
// line (1-based), with no value.
func emptyKeyAt(root ast.Node, key string, line int) bool {
	var values []*ast.MappingValueNode
	switch c := root.(type) {
	case *ast.MappingNode:
		values = c.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{c}
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil || keyText(mv.Key) != key {
			continue
		}
		tk := mv.Key.GetToken()
		_, null := mv.Value.(*ast.NullNode)
		return null && tk != nil && tk.Position != nil && tk.Position.Line == line
	}
	return false
}

// cut is a list cut out of a file: its key, the line of the key in the
// rest and in the file, and how many entries it has.
type cut struct {
	key      string
	line     int
	fileLine int
	entries  int
}

// part is a run of entries of one top-level list, as a YAML document of
// its own: the list's key line, then the entries' lines as they are in the
// file.
type part struct {
	field int // index of the list's field in file
	text  []byte
	cut   *cut // the list's
	line  int  // the file's line of the part's second line (the first after the key)
	first int  // the index in the list of the part's first entry
}

// placeError moves e, a mistake found in p, to where it is in the file:
// its line, and the index of the list's entry in its path.
func (p *part) placeError(e *Error) {
	switch {
	case e.Line == 1:
		e.Line = p.cut.fileLine
	case e.Line > 1:
		e.Line += p.line - 2
	}
	if rest, ok := strings.CutPrefix(e.Path, p.cut.key+"["); ok {
		digits, tail, found := strings.Cut(rest, "]")
		if i, err := strconv.Atoi(digits); err == nil && found {
			e.Path = fmt.Sprintf("%s[%d]%s", p.cut.key, i+p.first, tail)
		}
	}
}

// cutFile is a world file cut by cutParts.
type cutFile struct {
	rest      []byte // every line but the entries of its long lists
	restLines []int  // the file's line of each line of rest
	cuts      []*cut
	parts     []part
	// stop is where and why a file could not be cut, when it could not.
	stop cutStop
}

// cutStop is the first thing that kept cutParts from cutting a file: its
// line and column (1-based, the column in characters as the parser
// counts them) and why.
type cutStop struct {
	line, col int
	why       string
}

// restError moves e, a mistake found in the rest, to its line in the file.
func (c *cutFile) restError(e *Error) {
	if e.Line > 0 && e.Line <= len(c.restLines) {
		e.Line = c.restLines[e.Line-1]
	}
}

// overLimit reports lists cut out with more entries than lim allows, as
// the validator would once they were decoded (the members).
func (c *cutFile) overLimit(name string, lim Limits) ErrorList {
	var errs ErrorList
	for _, cut := range c.cuts {
		if cut.key == "members" && cut.entries > lim.Members {
			errs = append(errs, &Error{File: name, Line: cut.fileLine, Column: 1, Path: "members",
				Msg: fmt.Sprintf("%v: %d members, above the limit of %d (%s)", ErrLimit, cut.entries, lim.Members, FlagMembers)})
		}
	}
	return errs
}

// cutParts splits a world file into the rest of it (every line but the
// entries of its long lists) and parts of those lists of about partBytes
// each. It reports false when the file is not one it can cut safely by
// lines alone. A list is cut when it is a top-level key of file that holds
// a list, written in block style ("key:" alone on its line, then "- "
// entries, all at one indentation), and every line of it is plain: no
// quotes, anchors, aliases, tags, block scalars, merge keys or tabs, and
// brackets that close on the line they open. In such a list an entry ends
// exactly where the next line at the entries' indentation starts with "-",
// so cutting there changes nothing the parser sees within an entry.
func cutParts(src []byte, partBytes int) (c cutFile, ok bool) {
	stop := func(line, col int, why string) (cutFile, bool) {
		c.stop = cutStop{line, col, why}
		return c, false
	}
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		return stop(1, 1, "it starts with a byte order mark")
	}
	if i := bytes.IndexAny(src, "\r\t"); i >= 0 {
		line := bytes.Count(src[:i], []byte("\n")) + 1
		start := bytes.LastIndexByte(src[:i], '\n') + 1
		return stop(line, utf8.RuneCount(src[start:i])+1, "it has a tab or a carriage return")
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	keep := func(i int) { // line i (0-based) goes to the rest
		c.rest = append(c.rest, lines[i]...)
		c.restLines = append(c.restLines, i+1)
	}
	ft := reflect.TypeFor[file]()
	for i := 0; i < len(lines); {
		line := lines[i]
		if isBlankOrComment(line) || indentOf(line) > 0 {
			// Only a top-level key opens a list to cut; anything else is
			// the body of a section kept whole.
			keep(i)
			i++
			continue
		}
		if line[0] == '-' || line[0] == '.' || line[0] == '%' || line[0] == '{' || line[0] == '[' {
			// documents, directives, flow style or a list at the top
			return stop(i+1, 1, "a document, directive, flow collection or list at the top level")
		}
		keep(i)
		i++
		m := keyLine.FindSubmatch(bytes.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		sf, found := fieldByTag(ft, string(m[1]))
		if !found || sf.Type.Kind() != reflect.Slice {
			continue
		}
		// The section runs to the next line at the top level that is not
		// an entry of the list.
		end, size := i, 0
		indent := -1
		for ; end < len(lines); end++ {
			l := lines[end]
			if isBlankOrComment(l) {
				size += len(l)
				continue
			}
			if indent < 0 {
				indent = indentOf(l)
			}
			if indentOf(l) == 0 && !(indent == 0 && isEntry(l, 0)) {
				break
			}
			size += len(l)
		}
		if size < partBytes {
			for j := i; j < end; j++ {
				keep(j)
			}
			i = end
			continue
		}
		ct := &cut{key: string(m[1]), line: bytes.Count(c.rest, []byte("\n")), fileLine: i}
		c.cuts = append(c.cuts, ct)
		head := append(bytes.Clone(m[0]), '\n')
		var cur []byte
		curLine, curFirst := 0, 0
		for j := i; j < end; j++ {
			l := lines[j]
			if !isBlankOrComment(l) {
				if col, why := plainLine(l); why != "" {
					return stop(j+1, col, why)
				}
				switch in := indentOf(l); {
				case in == indent && isEntry(l, indent):
					if len(cur) >= partBytes {
						c.parts = append(c.parts, part{field: sf.Index[0], text: cur, cut: ct, line: curLine, first: curFirst})
						cur = nil
					}
					ct.entries++
				case in <= indent:
					// not an entry, not inside one
					return stop(j+1, in+1, fmt.Sprintf("a line of %s that is not a \"- \" entry at its indentation nor inside one", ct.key))
				}
			}
			if cur == nil {
				cur = append(cur, head...)
				curLine, curFirst = j+1, max(ct.entries-1, 0)
			}
			cur = append(cur, l...)
		}
		if cur != nil {
			c.parts = append(c.parts, part{field: sf.Index[0], text: cur, cut: ct, line: curLine, first: curFirst})
		}
		i = end
	}
	return c, true
}

// isBlankOrComment reports a line with nothing but spaces or a comment.
func isBlankOrComment(line []byte) bool {
	t := bytes.TrimLeft(line, " ")
	return len(t) == 0 || t[0] == '\n' || t[0] == '#'
}

func indentOf(line []byte) int {
	return len(line) - len(bytes.TrimLeft(line, " "))
}

// isEntry reports a line that starts a list entry at indentation indent.
func isEntry(line []byte, indent int) bool {
	t := line[indent:]
	return len(t) > 0 && t[0] == '-' && (len(t) == 1 || t[1] == ' ' || t[1] == '\n')
}

// plainLine reports what in a line is not plain, if anything, with its
// column in characters (why is "" for a plain line): YAML that can reach past its line
// or make one entry depend on another — quotes, anchors and aliases, tags,
// block scalars, merge keys and complex keys, directives, reserved
// characters — and brackets that do not close on the line.
func plainLine(line []byte) (col int, why string) {
	if i := bytes.IndexAny(line, "\"'&*!|><%@`?\\"); i >= 0 {
		return utf8.RuneCount(line[:i]) + 1, fmt.Sprintf("%q is not read a part at a time (quotes, anchors, aliases, tags and block scalars are not)", string(line[i]))
	}
	var open []int // the columns of the brackets open
	for i, c := range line {
		switch c {
		case '{', '[':
			open = append(open, i)
		case '}', ']':
			want := byte('{')
			if c == ']' {
				want = '['
			}
			if len(open) == 0 || line[open[len(open)-1]] != want {
				return utf8.RuneCount(line[:i]) + 1, fmt.Sprintf("the %q here closes no bracket opened on its line", string(c))
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		i := open[len(open)-1]
		return utf8.RuneCount(line[:i]) + 1, fmt.Sprintf("the %q opened here does not close on its line (is its closing bracket missing?)", string(line[i]))
	}
	return 0, ""
}
