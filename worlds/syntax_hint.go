package worlds

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// unclosedHint names what the YAML parser's position does not: a quoted
// string or a flow collection ({…}, […]) opened on an earlier line and not
// closed where it should have been. The parser notices such a mistake only
// where the text that follows stops making sense, often a line or more
// later ("',' or '}' must be specified" on the next entry). It returns the
// line and column that opened it and what is wrong there, or 0, 0 and "".
//
// It reads the source up to the error's position as YAML's indicators go,
// not as a parser: a quote opens a string only where a scalar begins (so
// "Bob's desk" opens none), a comment starts at a '#' after a space, block
// scalars (| and >) are skipped, and brackets count only where they are
// indicators. A string may span lines in YAML; one that does and ends at
// the error's line is named too (an unclosed quote closed by the next
// quote the file holds).
//
// A bracket is blamed only when the file as a whole leaves one open (see
// scanIndicators' whole): in JSON, or YAML written in flow style, every
// line lies inside an open bracket, and a doubled comma is where the
// parser stopped.
func unclosedHint(src []byte, line, col int) (int, int, string) {
	if line < 2 {
		return 0, 0, ""
	}
	lines := strings.Split(string(src), "\n")
	if line > len(lines) {
		line = len(lines)
	}
	st := scanIndicators(lines, line, col, false)
	switch {
	case st.quote != 0:
		return st.quoteAt.line, st.quoteAt.col, fmt.Sprintf("the %s string opened here is not closed", quoteName(st.quote))
	case st.spanned.line > 0:
		return st.spanned.line, st.spanned.col, fmt.Sprintf("the %s string opened here runs on to line %d (is its closing quote missing?)", quoteName(st.spanned.ch), line)
	case len(st.flow) > 0 && st.flow[len(st.flow)-1].line < line:
		if whole := scanIndicators(lines, len(lines), 0, true); len(whole.flow) == 0 && whole.quote == 0 && !whole.broken {
			// Every bracket the file opens it closes: the mistake is
			// where the parser stopped (a doubled comma, say).
			return 0, 0, ""
		}
		o := st.flow[len(st.flow)-1]
		return o.line, o.col, fmt.Sprintf("the %c opened here is not closed (a missing %s?)", o.ch, map[byte]string{'[': "]", '{': "}"}[o.ch])
	}
	return 0, 0, ""
}

// opened is a quote or a flow collection's bracket, where it opened.
type opened struct {
	ch        byte
	line, col int
}

// indicators is what scanIndicators found open at a position.
type indicators struct {
	flow    []opened // the flow collections open at this point
	quote   byte     // '"' or '\'' while in a quoted string
	quoteAt opened   // where it opened
	spanned opened   // where the last string that spanned lines opened, if it closed on the position's line
	broken  bool     // a bracket's text ended with the bracket open (see scanIndicators' whole)
}

// scanIndicators reads lines up to line and column col (0: the whole
// line) as unclosedHint says, and returns what is open there.
//
// With whole, a line that begins a block entry (a "- " or a plain "key:")
// indented no further than the line that opened the outermost bracket
// still open ends that bracket's text: the brackets open then are left
// open (broken), and a ] or } in the plain text that follows closes none
// of them. (Flow text may run on at its line's indent, and JSON's lines
// begin with a quote or a bracket: neither is a block entry.)
func scanIndicators(lines []string, line, col int, whole bool) indicators {
	type open = opened
	var (
		flow       []open
		flowIndent int // the indent of the line that opened flow[0]
		broken     bool
		quote      byte
		quoteAt    open
		spanned    open
		block      = -1 // the indent of the key whose block scalar is being skipped; -1: none
	)
	for i := 0; i < line; i++ {
		text := strings.TrimRight(lines[i], "\r")
		n := i + 1
		indent := len(text) - len(strings.TrimLeft(text, " "))
		if block >= 0 && quote == 0 {
			if strings.TrimSpace(text) == "" || indent > block {
				continue
			}
			block = -1
		}
		if whole && quote == 0 && len(flow) > 0 && indent <= flowIndent && blockEntry(strings.TrimSpace(text)) {
			flow, broken = nil, true
		}
		if len(flow) == 0 {
			flowIndent = indent
		}
		end := len(text)
		if n == line && col >= 1 {
			end = byteAt(text, col-1) // up to the error's position (columns count characters)
		}
		start := true // a scalar may begin here
		key := indent // where the scalar being read began: a key's column, before its ':'
		for j := 0; j < end; j++ {
			c := text[j]
			if quote != 0 {
				switch {
				case quote == '"' && c == '\\':
					j++
				case quote == '\'' && c == '\'' && j+1 < len(text) && text[j+1] == '\'':
					j++
				case c == quote:
					if quoteAt.line < n && n == line {
						spanned = quoteAt
					}
					quote, start = 0, false
				}
				continue
			}
			switch {
			case c == ' ' || c == '\t':
				continue
			case c == '#' && (j == 0 || text[j-1] == ' ' || text[j-1] == '\t'):
				j = end // a comment, to the end of the line
				continue
			case start && (c == '"' || c == '\''):
				quote, quoteAt = c, open{c, n, utf8.RuneCountInString(text[:j]) + 1}
				continue
			case start && (c == '[' || c == '{'):
				flow = append(flow, open{c, n, utf8.RuneCountInString(text[:j]) + 1})
				continue
			case len(flow) > 0 && (c == ']' || c == '}'):
				if want := map[byte]byte{']': '[', '}': '{'}[c]; flow[len(flow)-1].ch == want {
					flow = flow[:len(flow)-1]
				}
				start = false
				continue
			case len(flow) > 0 && c == ',':
				start = true
				continue
			case c == '-' && start && (j+1 == len(text) || isBlank(text[j+1])):
				// A block sequence's entry: a scalar may follow, or a
				// block scalar, whose lines are indented past the '-'.
				if blockScalar(text[j+1:]) {
					block, j = j, end
				}
				continue
			case c == ':' && (j+1 == len(text) || isBlank(text[j+1]) || (len(flow) > 0 && strings.IndexByte(",]}", text[j+1]) >= 0)):
				start = true
				if len(flow) == 0 && blockScalar(text[j+1:]) {
					block, j = key, end // its lines are indented past its key
				}
				continue
			}
			if start {
				key = j
			}
			start = false
		}
	}
	return indicators{flow: flow, broken: broken, quote: quote, quoteAt: quoteAt, spanned: spanned}
}

// blockEntry tells whether a line's text (trimmed) begins a block
// sequence's entry or a block mapping's plain key.
func blockEntry(t string) bool {
	if t == "-" || strings.HasPrefix(t, "- ") {
		return true
	}
	k, _, ok := strings.Cut(t, ":")
	if !ok || k == "" || !(k[0] == '_' || k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	rest := t[len(k)+1:]
	return strings.IndexFunc(k, func(r rune) bool { return r == ' ' || r == '{' || r == '[' || r == ',' || r == '"' }) < 0 &&
		(rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// quoteName says which quote a string opened with.
func quoteName(q byte) string {
	if q == '"' {
		return `"…"`
	}
	return `'…'`
}

// isBlank tells YAML's separating white space.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// blockScalar tells whether rest, what follows a ':' or a '-', begins a
// block scalar (| or >, with their indicators).
func blockScalar(rest string) bool {
	rest = strings.TrimSpace(stripComment(rest))
	return rest != "" && (rest[0] == '|' || rest[0] == '>')
}

// byteAt is the byte offset of the character at index chars of text (the
// parser counts columns in characters), or len(text) past its end.
func byteAt(text string, chars int) int {
	for i := range text {
		if chars == 0 {
			return i
		}
		chars--
	}
	return len(text)
}

// stripComment cuts a trailing comment off a line's plain text.
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}
