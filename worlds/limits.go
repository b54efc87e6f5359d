package worlds

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/corpsim/corpsim/clock"
)

// Limits bound what one world file may ask of the process, so that a file
// from a stranger is refused with a message before it can exhaust memory:
// its size and nesting before the YAML parser sees it, then its members,
// tasks and arrivals once it is read. The zero value means the defaults;
// each field's flag (on run, serve, worlds validate, …) is named in
// FlagFor.
type Limits struct {
	// FileBytes is the largest world file, in bytes (default 16 MiB; the
	// generated 10,000-member, 100,000-task world is 7.6 MB).
	FileBytes int
	// Depth is the deepest nesting of flow collections ("[" and "{") and,
	// in columns, of indentation divided by two (default 64: 64 nested
	// brackets, 128 columns of indentation).
	Depth int
	// Members is the most members (agent seats and NPCs) a world may have
	// (default 20,000).
	Members int
	// Tasks is the most project tasks a world may have (default 200,000).
	Tasks int
	// Arrivals is the most tickets a session's arrival processes may be
	// expected to bring, at the session's load (default 2,000,000).
	Arrivals int
	// Burst is the most tickets one arrival process may bring at one
	// simulated instant, at the session's load (default 10,000).
	Burst int
	// MaxLoad is the largest load factor a session may run at (default 100).
	MaxLoad float64
	// Nodes is the most YAML nodes — scalars and punctuation, a long
	// scalar counting one for every 32 bytes of it — that the YAML
	// library reads at once, checked before it runs: its tree and decoding
	// take about a kilobyte per node (default 200,000). A larger file is
	// read a part at a time when its long lists (members, projects…) are
	// written in block style, each part within the limit; a file that
	// cannot be is refused.
	Nodes int
	// Recorded says the file is one a session recorded, read again to
	// replay, verify, resume or fork it: the checks added since it may
	// have been recorded (MaxNumber, a fraction where an integer goes,
	// the case expressions' probes, control characters in its text and
	// in what its escapes make, a field an interruption's kind does not
	// read) are not made, so that it reads as it
	// did then. Never recorded itself.
	Recorded bool
}

// Default limits (Limits' zero fields).
const (
	DefaultFileBytes = 16 << 20
	DefaultDepth     = 64
	DefaultMembers   = 20_000
	DefaultTasks     = 200_000
	DefaultArrivals  = 2_000_000
	DefaultBurst     = 10_000
	DefaultMaxLoad   = 100.0
	DefaultNodes     = 200_000
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.FileBytes, DefaultFileBytes)
	def(&l.Depth, DefaultDepth)
	def(&l.Members, DefaultMembers)
	def(&l.Tasks, DefaultTasks)
	def(&l.Arrivals, DefaultArrivals)
	def(&l.Burst, DefaultBurst)
	def(&l.Nodes, DefaultNodes)
	if l.MaxLoad == 0 {
		l.MaxLoad = DefaultMaxLoad
	}
	return l
}

// Raised returns the fields of l above the defaults, and zero for the
// others: what a session started within l records of it.
func (l Limits) Raised() Limits {
	d := Limits{}.WithDefaults()
	up := func(v, def int) int {
		if v > def {
			return v
		}
		return 0
	}
	out := Limits{FileBytes: up(l.FileBytes, d.FileBytes), Depth: up(l.Depth, d.Depth), Members: up(l.Members, d.Members),
		Tasks: up(l.Tasks, d.Tasks), Arrivals: up(l.Arrivals, d.Arrivals), Burst: up(l.Burst, d.Burst), Nodes: up(l.Nodes, d.Nodes)}
	if l.MaxLoad > d.MaxLoad {
		out.MaxLoad = l.MaxLoad
	}
	return out
}

// Raise returns l with each limit that to sets (a non-zero field) raised
// to it where l's (or its default) is lower: the limits a stored session
// runs within when it is resumed or forked, the operator's (l) with those
// the session recorded raising (to). A field to leaves zero is l's,
// lowered too.
func (l Limits) Raise(to Limits) Limits {
	d := l.WithDefaults()
	up := func(v *int, have, rec int) {
		if rec != 0 {
			*v = max(have, rec)
		}
	}
	up(&l.FileBytes, d.FileBytes, to.FileBytes)
	up(&l.Depth, d.Depth, to.Depth)
	up(&l.Members, d.Members, to.Members)
	up(&l.Tasks, d.Tasks, to.Tasks)
	up(&l.Arrivals, d.Arrivals, to.Arrivals)
	up(&l.Burst, d.Burst, to.Burst)
	up(&l.Nodes, d.Nodes, to.Nodes)
	if to.MaxLoad != 0 {
		l.MaxLoad = max(d.MaxLoad, to.MaxLoad)
	}
	return l
}

// Validate reports a limit that is negative or not a finite number.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"file bytes", l.FileBytes}, {"depth", l.Depth}, {"members", l.Members}, {"tasks", l.Tasks}, {"arrivals", l.Arrivals}, {"burst", l.Burst}, {"nodes", l.Nodes}} {
		if f.v < 0 {
			return fmt.Errorf("worlds: the %s limit must not be negative, got %d", f.name, f.v)
		}
	}
	if l.MaxLoad < 0 || math.IsNaN(l.MaxLoad) || math.IsInf(l.MaxLoad, 0) {
		return fmt.Errorf("worlds: the load limit must be a positive number, got %v", l.MaxLoad)
	}
	return nil
}

// Flags of the limits, for refusals that say how to raise them.
const (
	FlagFileBytes = "--max-world-bytes"
	FlagDepth     = "--max-world-depth"
	FlagMembers   = "--max-members"
	FlagTasks     = "--max-tasks"
	FlagArrivals  = "--max-arrivals"
	FlagBurst     = "--max-burst"
	FlagMaxLoad   = "--max-load"
	FlagNodes     = "--max-world-nodes"
)

// ErrLimit is wrapped by every refusal for a limit, at load time (inside an
// ErrorList entry's message) and by Admit.
var ErrLimit = errors.New("worlds: over a limit")

// MinLoad is the least load a new session may run at (CheckNewLoad): a
// thousandth of the world's arrivals, its gaps a thousand times as long.
const MinLoad = 1e-3

// CheckLoad reports a load factor that a session cannot run at: not a
// finite number, not above zero, or above max (0: DefaultMaxLoad). A
// session recorded at a load is read again at it (resume, fork, a worker
// adopting it); a new one is checked by CheckNewLoad.
func CheckLoad(load, max float64) error {
	if max == 0 {
		max = DefaultMaxLoad
	}
	switch {
	case math.IsNaN(load) || math.IsInf(load, 0):
		return fmt.Errorf("load %v is not a finite number (a load is a factor such as 0.5, 1 or 2)", load)
	case load <= 0:
		return fmt.Errorf("load %v must be more than zero (a load is a factor such as 0.5, 1 or 2)", load)
	case load > max:
		return fmt.Errorf("%w: load %v is above the limit of %v (%s)", ErrLimit, load, max, FlagMaxLoad)
	}
	return nil
}

// CheckNewLoad is CheckLoad for a session about to be made: a load below
// MinLoad is refused too. (Gaps are divided by the load: a vanishing one
// overflowed them into arrivals that never stopped coming at one instant;
// the engine now brings no ticket after a gap too long for a time, and
// sessions recorded at such loads still resume.)
func CheckNewLoad(load, max float64) error {
	if err := CheckLoad(load, max); err != nil {
		return err
	}
	if load < MinLoad {
		return fmt.Errorf("load %v is below the least of %v (a load is a factor such as 0.5, 1 or 2)", load, MinLoad)
	}
	return nil
}

// ExpectedTickets is how many tickets arrival a is expected to bring in a
// session of world w at load: its count when it has one, otherwise its
// working span divided by its mean gap. It is what the arrivals limit is
// checked against; a Poisson process may bring a few more.
func (w *World) ExpectedTickets(a *Arrival, load float64) float64 {
	if a.Count > 0 {
		return math.Round(float64(a.Count) * load)
	}
	if a.Process == "scheduled" && len(a.At) > 0 {
		return float64(len(a.At)) * load
	}
	until := a.Until
	if until == 0 || until > w.Horizon {
		until = w.Horizon
	}
	if until <= a.Start || a.Every <= 0 {
		return 0
	}
	span := float64(w.Calendar.WorkBetween(a.Start, until))
	switch a.Process {
	case "bursty":
		burst := max(1, math.Round(float64(a.Burst)*load))
		return (span/float64(a.Every) + 1) * burst
	default: // poisson and scheduled with every: gaps shrink with the load
		return span/float64(a.Every)*load + 1
	}
}

// burstAt is the most tickets arrival a brings at one instant at load.
func burstAt(a *Arrival, load float64) float64 {
	switch {
	case a.Process == "bursty":
		return max(1, math.Round(float64(a.Burst)*load))
	case a.Process == "scheduled" && len(a.At) > 0:
		// A load above 1 brings each instant's tickets that many times.
		most, run := 0, 0
		for i := range a.At {
			if i > 0 && a.At[i] == a.At[i-1] {
				run++
			} else {
				run = 1
			}
			most = max(most, run)
		}
		return float64(most) * math.Ceil(load)
	case a.Every > 0 && float64(a.Every)/load < 1:
		// A gap below a millisecond brings its tickets at one instant.
		return math.Ceil(load / float64(a.Every))
	}
	return 1
}

// Admit reports whether a session of w may run at load within lim: the
// load is checked, and so are the tickets its arrivals would bring, in all
// and at one instant. The refusal names the arrival, the limit and its
// flag, and wraps ErrLimit.
func (w *World) Admit(load float64, lim Limits) error {
	lim = lim.WithDefaults()
	if err := CheckLoad(load, lim.MaxLoad); err != nil {
		return err
	}
	total := 0.0
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		if b := burstAt(a, load); b > float64(lim.Burst) {
			return fmt.Errorf("%w: at load %v arrival %q brings %.0f tickets at one instant, above the limit of %d (%s)",
				ErrLimit, load, a.ID, b, lim.Burst, FlagBurst)
		}
		total += w.ExpectedTickets(a, load)
	}
	if total > float64(lim.Arrivals) {
		return fmt.Errorf("%w: at load %v the arrivals would bring about %.0f tickets, above the limit of %d (%s)",
			ErrLimit, load, total, lim.Arrivals, FlagArrivals)
	}
	return nil
}

// checkShape refuses a file too large or too deeply nested for the YAML
// parser, before it runs: the parser's tree takes about a hundred times a
// file's size, and its recursion follows the nesting (100,000 nested "["
// took 2.2 GB). Flow collections are counted where a "[" or "{" opens a
// value (at the start of a line's content, or after ":", "-", "," or
// another opener), outside quotes and comments; block nesting is counted
// by indentation. It returns the file's nodes (see countNodes), which the
// caller holds to lim.Nodes.
func checkShape(name string, src []byte, lim Limits) (int, *Error) {
	if len(src) > lim.FileBytes {
		return 0, &Error{File: name, Msg: fmt.Sprintf("%v: the file is %d bytes, above the limit of %d (%s)",
			ErrLimit, len(src), lim.FileBytes, FlagFileBytes)}
	}
	line, col := 1, 0
	depth := 0
	var quote byte   // the open quote, or 0
	indent := true   // still in the line's leading spaces
	opens := true    // a "[" or "{" here would open a collection
	comment := false // in a comment, to the end of the line
	var nodes nodeCount
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			nodes.space()
			line, col, indent, comment = line+1, 0, true, false
			opens = true
			continue
		}
		if comment {
			continue
		}
		if indent {
			if c == ' ' {
				if col > 2*lim.Depth {
					return 0, &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf(
						"%v: indented more than %d columns (nesting limit %d, %s)", ErrLimit, 2*lim.Depth, lim.Depth, FlagDepth)}
				}
				continue
			}
			indent = false
		}
		switch {
		case quote != 0:
			nodes.text()
			switch {
			case quote == '"' && c == '\\':
				i++
				col++
				nodes.text()
			case c == quote:
				quote = 0
				opens = false
				nodes.space()
			}
			continue
		case c == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n'):
			comment = true
			nodes.space()
		case c == '"' || c == '\'':
			if opens {
				quote = c
				nodes.space()
			}
			nodes.text()
			opens = false
		case c == '[' || c == '{':
			nodes.mark()
			if !opens {
				continue
			}
			depth++
			if depth > lim.Depth {
				return 0, &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf(
					"%v: collections nested more than %d deep (%s)", ErrLimit, lim.Depth, FlagDepth)}
			}
		case (c == ']' || c == '}') && depth > 0:
			nodes.mark()
			depth--
			opens = false
		case c == ',':
			nodes.mark()
			opens = true
		case c == ']' || c == '}':
			nodes.mark()
			opens = false
		case c == ':' && (i+1 == len(src) || src[i+1] == ' ' || src[i+1] == '\n' || src[i+1] == '\r'):
			nodes.mark()
			opens = true
		case c == ':' || c == '-':
			nodes.text()
			opens = true
		case c == ' ' || c == '\t' || c == '\r':
			nodes.space()
		default:
			nodes.text()
			opens = false
		}
	}
	nodes.space()
	if e := checkMapKeys(name, src); e != nil {
		return 0, e
	}
	return nodes.n, nil
}

// maxMapKeys bounds the keys of one block mapping. The YAML library
// parses a block mapping one key deeper in its recursion per key, copying
// the keys after it at each level: time and memory grow with the square of
// the keys (65,000 keys in 256 KB took 2 GB; 5,000 take 11 MB). No mapping of a world comes
// near the bound.
const maxMapKeys = 5_000

// checkMapKeys refuses a block mapping with more than maxMapKeys keys,
// counting, line by line, the keys at each column of indentation (a key
// of a list's entry after its "- ") until a line at a shallower column or
// a new entry ends the mapping.
func checkMapKeys(name string, src []byte) *Error {
	var keys []int // keys of the mapping open at each column
	open := -1     // the deepest column with a mapping open
	closeFrom := func(col int) {
		for ; open >= col; open-- {
			keys[open] = 0
		}
	}
	for line, rest := 1, src; len(rest) > 0; line++ {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		col := 0
		for col < len(l) && l[col] == ' ' {
			col++
		}
		if col == len(l) || l[col] == '#' || l[col] == '\r' {
			continue
		}
		closeFrom(col + 1)
		for col < len(l) && l[col] == '-' && (col+1 == len(l) || l[col+1] == ' ') {
			closeFrom(col + 1) // a new entry: a new mapping, if any, within it
			col++
			for col < len(l) && l[col] == ' ' {
				col++
			}
		}
		if !isKeyAt(l, col) {
			continue
		}
		for len(keys) <= col {
			keys = append(keys, 0)
		}
		keys[col]++
		open = max(open, col)
		if keys[col] > maxMapKeys {
			return &Error{File: name, Line: line, Column: col + 1, Msg: fmt.Sprintf(
				"%v: a mapping with more than %d keys", ErrLimit, maxMapKeys)}
		}
	}
	return nil
}

// isKeyAt reports whether line l holds a block mapping's key at col: a
// plain or quoted scalar followed by ":" and a space or the line's end.
func isKeyAt(l []byte, col int) bool {
	if col >= len(l) {
		return false
	}
	i := col
	switch l[i] {
	case '[', '{', '#', '|', '>', '!', '&', '*', '%', '@', '`':
		return false
	case '"', '\'':
		q := l[i]
		for i++; i < len(l) && l[i] != q; i++ {
			if q == '"' && l[i] == '\\' {
				i++
			}
		}
		i++
		return i < len(l) && l[i] == ':' && (i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\r')
	}
	for ; i < len(l); i++ {
		switch {
		case l[i] == ':' && (i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\r'):
			return true
		case l[i] == '#' && l[i-1] == ' ':
			return false
		}
	}
	return false
}

// nodeCount counts what the YAML library makes of a file as checkShape
// scans it (see countNodes).
type nodeCount struct {
	n    int
	word int // bytes of the scalar being scanned; 0 between scalars
}

// text counts a byte of a scalar: a scalar's first byte is a node, and so
// is every scalarBytes more of it.
func (c *nodeCount) text() {
	if c.word%scalarBytes == 0 {
		c.n++
	}
	c.word++
}

// mark counts punctuation ("[", "]", "{", "}", ",", ": "): a node, which
// ends the scalar before it.
func (c *nodeCount) mark() { c.n++; c.word = 0 }

// space ends the scalar being scanned.
func (c *nodeCount) space() { c.word = 0 }

// scalarBytes is how many bytes of a scalar count as one node: the YAML
// library's scanner allocates about fifty bytes per byte of a scalar, and
// about a kilobyte per node.
const scalarBytes = 32

// countNodes estimates the nodes of src as the YAML library reads it:
// each scalar and each punctuation mark, and a long scalar once more for
// every 32 bytes of it (a quoted one counted whole, spaces included). The
// library's tree and its decoding take about a kilobyte per node, so the
// count, held to Limits.Nodes before the library runs, bounds the memory
// reading a file takes.
func countNodes(src []byte) int {
	n, _ := checkShape("", src, Limits{FileBytes: len(src), Depth: math.MaxInt / 4})
	return n
}

// checkSize refuses a world with more members, tasks or expected arrivals
// (at load 1) than lim allows, at the field that says so.
func (v *validator) checkSize(f *file, w *World, lim Limits) {
	over := func(path, format string, args ...any) {
		v.errf(path, format, args...)
		v.overLimit++
	}
	if n := len(f.Members); n > lim.Members {
		over("members", "%v: %d members, above the limit of %d (%s)", ErrLimit, n, lim.Members, FlagMembers)
	}
	n := 0
	for _, p := range f.Projects {
		n += len(p.Tasks)
	}
	if n > lim.Tasks {
		over("projects", "%v: %d tasks, above the limit of %d (%s)", ErrLimit, n, lim.Tasks, FlagTasks)
	}
	total := 0.0
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		p := fmt.Sprintf("arrivals[%d]", i)
		if b := burstAt(a, 1); b > float64(lim.Burst) {
			field := ".every"
			if a.Process == "bursty" {
				field = ".burst"
			} else if len(a.At) > 0 {
				field = ".at"
			}
			over(p+field, "%v: brings %.0f tickets at one instant, above the limit of %d (%s)", ErrLimit, b, lim.Burst, FlagBurst)
			continue
		}
		x := w.ExpectedTickets(a, 1)
		total += x
		if x > float64(lim.Arrivals) {
			field := ".every"
			if a.Process == "bursty" {
				field = ".burst"
			}
			over(p+field, "%v: would bring about %.0f tickets in a session, above the limit of %d (%s); give it a count, an until or a longer gap",
				ErrLimit, x, lim.Arrivals, FlagArrivals)
			return
		}
	}
	if total > float64(lim.Arrivals) {
		over("arrivals", "%v: the arrivals would bring about %.0f tickets in a session, above the limit of %d (%s)", ErrLimit, total, lim.Arrivals, FlagArrivals)
	}
}

// workOf is the least working time a ticket of t needs.
func workOf(t *Template) clock.Duration {
	switch t.Effort.Kind {
	case "fixed":
		return clock.Duration(t.Effort.Fixed)
	case "uniform":
		return clock.Duration(t.Effort.Min)
	}
	return 0
}
