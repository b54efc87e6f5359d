package fastjson

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Finite reports whether f is a number JSON can hold (not NaN or infinite).
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// AppendFloat formats f as encoding/json does (finite values only).
func AppendFloat(dst []byte, f float64) []byte {
	// A whole number (a ticket's value, a budget, most rewards) is its
	// integer's digits, as the shortest 'f' form writes it: much faster
	// than the float formatter. -0 is left to it ("-0"), and so is a
	// magnitude where not every integer is a float (2^53 and up).
	if t := int64(f); float64(t) == f && t > -1<<53 && t < 1<<53 && (t != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, t, 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// AppendString quotes s as encoding/json does. Plain printable ASCII, the
// common case, is copied; anything else (escapes, HTML characters, non-ASCII,
// invalid UTF-8) takes encoding/json's own path.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !verbatim[s[i]] {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// verbatim[c] says that byte c is copied as it is into a quoted string:
// printable ASCII but for the quote, the backslash and the characters
// encoding/json escapes for HTML (one load per byte instead of seven
// comparisons: every payload's strings go through AppendString).
var verbatim = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendList appends key and list as a JSON array (null when nil), each
// element written by elem.
func AppendList[T any](dst []byte, key string, list []T, elem func(*T, []byte) []byte) []byte {
	dst = append(dst, key...)
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = elem(&list[i], dst)
	}
	return append(dst, ']')
}

// AppendStringAt is AppendString in the form AppendList takes.
func AppendStringAt(s *string, dst []byte) []byte { return AppendString(dst, *s) }

// AppendKeyInt appends key (e.g. `,"time":`) and n.
func AppendKeyInt(dst []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(dst, key...), n, 10)
}

// AppendKeyIntOmit is AppendKeyInt for an omitempty field: nothing for 0.
func AppendKeyIntOmit(dst []byte, key string, n int64) []byte {
	if n == 0 {
		return dst
	}
	return AppendKeyInt(dst, key, n)
}

// AppendKeyString appends key and s.
func AppendKeyString(dst []byte, key, s string) []byte {
	return AppendString(append(dst, key...), s)
}

// AppendKeyStringOmit is AppendKeyString for an omitempty field: nothing
// for "".
func AppendKeyStringOmit(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return AppendKeyString(dst, key, s)
}
