package fastjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Decoder reads JSON from the data given to Reset. Each method decodes one
// value at the current position and returns false on anything it does not
// read: exactly what json.Marshal writes, whitespace aside, every key
// spelled as its tag and given once per object. A null leaves the value
// zero, as json.Unmarshal leaves it unchanged (or, for a slice or a
// pointer, sets it to nil).
//
// Short strings that recur (IDs, roles, statuses) are interned: they share
// their memory with earlier ones, which Go's immutable strings make
// invisible. A Decoder is not safe for concurrent use; its zero value is
// ready to use.
type Decoder struct {
	data []byte
	i    int

	// strs holds recently decoded short strings, by a hash of their bytes.
	strs [1 << internBits]string
}

// Reset starts reading data.
func (d *Decoder) Reset(data []byte) { d.data, d.i = data, 0 }

// End skips trailing whitespace, reports whether every byte was read, and
// lets go of the data.
func (d *Decoder) End() bool {
	d.space()
	ok := d.i == len(d.data)
	d.data, d.i = nil, 0
	return ok
}

// maxInterned bounds the strings kept in strs.
const maxInterned = 64

// intern returns b as a string, from strs when it was seen before.
func (d *Decoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInterned {
		return string(b)
	}
	e := &d.strs[internSlot(b)]
	if *e != string(b) {
		*e = string(b)
	}
	return *e
}

// internSlot picks b's slot in strs from its length and its first and last
// eight bytes (the bytes that tell IDs such as "t-1041" and "t-1042"
// apart), multiplied into the top bits: a few instructions, where a hash
// of every byte cost as much as the lookup it saves. Two strings sharing a
// slot only replace each other.
func internSlot(b []byte) uint32 {
	var head, tail uint64
	if len(b) >= 8 {
		head = binary.LittleEndian.Uint64(b)
		tail = binary.LittleEndian.Uint64(b[len(b)-8:])
	} else {
		for i, c := range b {
			head |= uint64(c) << (8 * i)
		}
	}
	h := (head*0x9E3779B97F4A7C15 ^ tail*0xC2B2AE3D27D4EB4F ^ uint64(len(b))) * 0x165667B19E3779F9
	return uint32(h >> (64 - internBits))
}

// internBits is log2 of len(Decoder.strs).
const internBits = 9

func (d *Decoder) space() {
	for d.i < len(d.data) && d.data[d.i] <= ' ' {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c if it comes next.
func (d *Decoder) next(c byte) bool {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// Literal consumes word (null, true or false) if it comes next, after
// whitespace, and reports whether it did.
func (d *Decoder) Literal(word string) bool {
	d.space()
	if len(d.data)-d.i >= len(word) && string(d.data[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

// Object reads an object (or null), calling field for each key with the
// decoder at the key's value. field returns the key's bit (0 for an unknown
// key) and whether its value was read; a key seen twice fails.
func (d *Decoder) Object(field func(key []byte) (uint32, bool)) bool {
	if d.Literal("null") {
		return true
	}
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen uint32
	for {
		key, ok := d.key()
		if !ok {
			return false
		}
		bit, ok := field(key)
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// key reads an object's key and the colon after it. It does not unquote
// the key: one with an escape or a byte no tag has matches no field, and
// the object fails.
func (d *Decoder) key() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	n := bytes.IndexByte(d.data[d.i:], '"')
	if n < 0 {
		return nil, false
	}
	key := d.data[d.i : d.i+n]
	d.i += n + 1
	return key, d.next(':')
}

// Array reads an array (or null), calling elem with the decoder at each
// element. empty is called for [] (to set an empty, non-nil slice).
func (d *Decoder) Array(empty func(), elem func() bool) bool {
	if d.Literal("null") {
		return true
	}
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		empty()
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash, a control character or part of a multibyte character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Str reads a string (or null) into *s.
func (d *Decoder) Str(s *string) bool {
	if d.Literal("null") {
		return true
	}
	if !d.next('"') {
		return false
	}
	start, ascii := d.i, true
	for d.i < len(d.data) {
		for d.i < len(d.data) && plain[d.data[d.i]] {
			d.i++
		}
		if d.i == len(d.data) {
			break
		}
		switch c := d.data[d.i]; {
		case c == '"':
			raw := d.data[start:d.i]
			d.i++
			if ascii || utf8.Valid(raw) {
				*s = d.intern(raw)
				return true
			}
			// Invalid UTF-8 becomes U+FFFD: let encoding/json say how.
			return unquote(d.data[start-1:d.i], s)
		case c == '\\':
			// Escapes are rare (quotes, <, >, &): encoding/json reads the string.
			return d.escaped(start-1, s)
		case c < 0x20:
			return false
		}
		ascii = false
		d.i++
	}
	return false
}

// escaped reads the string that starts at data[open] (its quote) and has an
// escape at or after d.i, with encoding/json.
func (d *Decoder) escaped(open int, s *string) bool {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return unquote(d.data[open:d.i], s)
		}
		d.i++
	}
	return false
}

// unquote sets *s to the string literal lit as encoding/json reads it.
func unquote(lit []byte, s *string) bool {
	var v string
	if json.Unmarshal(lit, &v) != nil {
		return false
	}
	*s = v
	return true
}

// Bool reads true, false (or null) into *b.
func (d *Decoder) Bool(b *bool) bool {
	switch {
	case d.Literal("true"):
		*b = true
	case d.Literal("false"):
		*b = false
	default:
		return d.Literal("null")
	}
	return true
}

// digits reads an integer's digits without a sign: 0, or a nonzero digit
// and more digits, not followed by a fraction or an exponent. It fails on
// overflow beyond max.
func (d *Decoder) digits(max uint64) (uint64, bool) {
	start := d.i
	var n uint64
	for d.i < len(d.data) {
		c := d.data[d.i]
		if c < '0' || c > '9' {
			break
		}
		if n > (max-uint64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		d.i++
	}
	switch {
	case d.i == start, d.data[start] == '0' && d.i > start+1:
		return 0, false
	case d.i < len(d.data) && (d.data[d.i] == '.' || d.data[d.i] == 'e' || d.data[d.i] == 'E'):
		return 0, false // a float: encoding/json refuses it for an integer field
	}
	return n, true
}

// Int64 reads an integer (or null) into *v.
func (d *Decoder) Int64(v *int64) bool {
	if d.Literal("null") {
		return true
	}
	if d.next('-') {
		n, ok := d.digits(1 << 63)
		*v = -int64(n)
		return ok
	}
	n, ok := d.digits(math.MaxInt64)
	*v = int64(n)
	return ok
}

// Uint64 reads a non-negative integer (or null) into *v.
func (d *Decoder) Uint64(v *uint64) bool {
	if d.Literal("null") {
		return true
	}
	d.space()
	n, ok := d.digits(math.MaxUint64)
	*v = n
	return ok
}

// Int reads an integer (or null) that fits an int into *v.
func (d *Decoder) Int(v *int) bool {
	n := int64(*v)
	ok := d.Int64(&n)
	*v = int(n)
	return ok && int64(int(n)) == n
}

// Float64 reads a JSON number (or null), as encoding/json does:
// strconv.ParseFloat of the number's text, which must be in range.
func (d *Decoder) Float64(v *float64) bool {
	if d.Literal("null") {
		return true
	}
	d.space()
	start := d.i
	if !d.skipNumber() {
		return false
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.i]), 64)
	*v = f
	return err == nil
}

// intPart reads 0, or a nonzero digit and more digits.
func (d *Decoder) intPart() bool {
	if d.i < len(d.data) && d.data[d.i] == '0' {
		d.i++
		return true
	}
	return d.someDigits()
}

func (d *Decoder) someDigits() bool {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// maxDepth is how deeply Raw follows nested arrays and objects: encoding/json
// refuses input nested more deeply than 10,000, and so does Raw (its caller
// falls back and gets encoding/json's error).
const maxDepth = 10000

// Raw reads one JSON value of any kind (null included) and sets *b to a copy
// of its bytes, as json.RawMessage keeps them: what lies between the value's
// first and last byte, whitespace inside it included. It checks the value as
// encoding/json's scanner does, depth being how many arrays and objects are
// open around it (the scanner counts them too); it fails on anything that
// scanner refuses.
func (d *Decoder) Raw(b *[]byte, depth int) bool {
	d.space()
	start := d.i
	if !d.skip(depth) {
		return false
	}
	*b = append((*b)[:0:0], d.data[start:d.i]...)
	return true
}

// skip reads one JSON value at depth (the arrays and objects open around it).
func (d *Decoder) skip(depth int) bool {
	d.space()
	if d.i == len(d.data) {
		return false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.skipList('}', depth, func() bool {
			return d.next('"') && d.skipString() && d.next(':') && d.skip(depth+1)
		})
	case c == '[':
		return d.skipList(']', depth, func() bool { return d.skip(depth + 1) })
	case c == '"':
		d.i++
		return d.skipString()
	case c == '-' || c >= '0' && c <= '9':
		return d.skipNumber()
	}
	return d.Literal("true") || d.Literal("false") || d.Literal("null")
}

// skipList reads an object or an array at depth, whose opening byte is
// next: its members (elem reads one) separated by commas, then end.
func (d *Decoder) skipList(end byte, depth int, elem func() bool) bool {
	if depth == maxDepth {
		return false
	}
	d.i++
	if d.next(end) {
		return true
	}
	for elem() {
		if !d.next(',') {
			return d.next(end)
		}
	}
	return false
}

// skipString reads the rest of a string whose opening quote was read:
// no control characters, and only JSON's escapes. Other bytes, invalid
// UTF-8 among them, pass as encoding/json's scanner lets them.
func (d *Decoder) skipString() bool {
	for d.i < len(d.data) {
		c := d.data[d.i]
		d.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if d.i == len(d.data) {
				return false
			}
			e := d.data[d.i]
			d.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(d.data)-d.i < 4 {
					return false
				}
				for _, h := range d.data[d.i : d.i+4] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				d.i += 4
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber reads a number as JSON spells it: a minus, an integer part,
// a fraction, an exponent.
func (d *Decoder) skipNumber() bool {
	d.next('-')
	if !d.intPart() {
		return false
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if !d.someDigits() {
			return false
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		return d.someDigits()
	}
	return true
}

// Plain reads a string of printable ASCII without escapes (not null) and
// returns its bytes, borrowed from the data given to Reset. Any other
// string fails, for its caller to read with encoding/json.
func (d *Decoder) Plain() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.data) && plain[d.data[d.i]] {
		d.i++
	}
	if d.i == len(d.data) || d.data[d.i] != '"' {
		return nil, false
	}
	d.i++
	return d.data[start : d.i-1], true
}
