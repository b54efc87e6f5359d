package clock

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

// Time is simulated time in milliseconds since the world's start instant
// (Time 0 is Calendar.Start). It is a plain integer: comparing and sorting
// Times is exact and deterministic.
type Time int64

// Duration is a span of simulated time in milliseconds. Depending on use it is
// wall-calendar time (the difference of two Times) or working time (the effort
// passed to Calendar.AddWork).
type Duration int64

// Common durations. There is no Day constant: the length of a working day
// belongs to the Calendar (see Calendar.DayLength).
const (
	Millisecond Duration = 1
	Second               = 1000 * Millisecond
	Minute               = 60 * Second
	Hour                 = 60 * Minute
)

// Add returns the time t+d. Like integer addition it wraps on overflow.
func (t Time) Add(d Duration) Time { return t + Time(d) }

// Sub returns the duration t-u. Like integer subtraction it wraps on overflow.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// String formats d in whole hours, minutes, seconds and milliseconds, leaving
// out zero units: "2h30m", "45m", "1h5s", "1s500ms", "0s" for zero and a
// leading "-" when negative. It never uses days, so ParseDuration reads a
// non-negative result back to the same Duration whatever the day length.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	var buf [48]byte
	b := buf[:0]
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u // two's complement: also right for math.MinInt64
	}
	for _, unit := range [...]struct {
		size uint64
		name string
	}{{uint64(Hour), "h"}, {uint64(Minute), "m"}, {uint64(Second), "s"}, {1, "ms"}} {
		if n := u / unit.size; n > 0 {
			b = strconv.AppendUint(b, n, 10)
			b = append(b, unit.name...)
			u -= n * unit.size
		}
	}
	return string(b)
}

const unitList = "(expected w, d, h, m, s or ms)"

// ParseDuration parses a non-negative duration written as a sequence of
// numbers with units, such as "90m", "2h", "1h30m", "45s", "250ms", "1d",
// "2d4h", "0.5h" or "1.5d". The units are w, d, h, m, s and ms; "d" is one
// working day of length dayLen (for example 8h) and "w" is five working days.
// dayLen matters only when "d" or "w" is used, and must then be positive.
// Fractions are allowed on every number; a result finer than a millisecond is
// truncated toward zero. Parsing uses integer arithmetic only, so it gives the
// same result on every platform.
//
// Errors name the input and the problem, for example
//
//	clock: invalid duration "2x": unknown unit "x" (expected w, d, h, m, s or ms)
func ParseDuration(s string, dayLen Duration) (Duration, error) {
	if s == "" {
		return 0, parseError(s, "empty string")
	}
	if s[0] == '-' {
		return 0, parseError(s, "negative durations are not allowed")
	}
	var total uint64
	for rest := s; rest != ""; {
		// A number: digits, optionally followed by '.' and more digits.
		i := 0
		for i < len(rest) && isDigit(rest[i]) {
			i++
		}
		intPart, frac := rest[:i], ""
		if i < len(rest) && rest[i] == '.' {
			j := i + 1
			for j < len(rest) && isDigit(rest[j]) {
				j++
			}
			frac, i = rest[i+1:j], j
		}
		if intPart == "" && frac == "" {
			return 0, parseError(s, fmt.Sprintf("expected a number at %q", rest))
		}
		num := rest[:i]
		rest = rest[i:]

		// A unit: everything up to the next number.
		j := 0
		for j < len(rest) && rest[j] != '.' && !isDigit(rest[j]) {
			j++
		}
		name := rest[:j]
		rest = rest[j:]
		var unit uint64
		switch name {
		case "":
			return 0, parseError(s, fmt.Sprintf("missing unit after %q %s", num, unitList))
		case "ms":
			unit = uint64(Millisecond)
		case "s":
			unit = uint64(Second)
		case "m":
			unit = uint64(Minute)
		case "h":
			unit = uint64(Hour)
		case "d", "w":
			if dayLen <= 0 {
				return 0, parseError(s, fmt.Sprintf("unit %q needs a positive day length, got %v", name, dayLen))
			}
			unit = uint64(dayLen)
			if name == "w" {
				unit *= 5 // cannot overflow uint64: dayLen < 2^63
			}
		default:
			return 0, parseError(s, fmt.Sprintf("unknown unit %q %s", name, unitList))
		}

		v, ok := scale(intPart, frac, unit)
		if !ok || v > math.MaxInt64-total {
			return 0, parseError(s, "out of range")
		}
		total += v
	}
	return Duration(total), nil
}

func parseError(s, msg string) error {
	return fmt.Errorf("clock: invalid duration %q: %s", s, msg)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scale returns intPart.frac × unit, truncated to an integer, and whether it
// fits in an int64. intPart and frac hold only decimal digits; unit < 2^64.
func scale(intPart, frac string, unit uint64) (uint64, bool) {
	var n uint64
	for i := 0; i < len(intPart); i++ {
		d := uint64(intPart[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	hi, v := bits.Mul64(n, unit)
	if hi != 0 || v > math.MaxInt64 {
		return 0, false
	}
	// The fraction f/10^k, keeping at most 18 digits so 10^k fits in uint64.
	f, pow := uint64(0), uint64(1)
	for i := 0; i < len(frac) && pow < 1e18; i++ {
		f = f*10 + uint64(frac[i]-'0')
		pow *= 10
	}
	if f > 0 {
		// f*unit/pow < unit because f < pow, so Div64 cannot overflow.
		hi, lo := bits.Mul64(f, unit)
		q, _ := bits.Div64(hi, lo, pow)
		if q > math.MaxInt64-v {
			return 0, false
		}
		v += q
	}
	return v, true
}

// Human formats d for people, to two units at most and rounded to the
// smaller: "250ms", "45s", "12m30s", "3h45m", "2d3h" (days of 24 hours:
// use it for spans of wall-calendar time), and whole days from ten days
// on ("154d"). Machine output uses the exact milliseconds instead.
func (d Duration) Human() string {
	if d < 0 {
		return "-" + (-d).Human()
	}
	const day = 24 * Hour
	round := func(unit Duration) Duration { return (d + unit/2) / unit * unit }
	two := func(big, small Duration, bn, sn string) string {
		r := round(small)
		b, s := r/big, (r%big)/small
		if s == 0 {
			return strconv.FormatInt(int64(b), 10) + bn
		}
		return strconv.FormatInt(int64(b), 10) + bn + strconv.FormatInt(int64(s), 10) + sn
	}
	switch {
	case d < Second:
		return strconv.FormatInt(int64(d), 10) + "ms"
	case round(Second) < Minute:
		return strconv.FormatInt(int64(round(Second)/Second), 10) + "s"
	case round(Second) < Hour:
		return two(Minute, Second, "m", "s")
	case round(Minute) < day:
		return two(Hour, Minute, "h", "m")
	case round(Hour) < 10*day:
		return two(day, Hour, "d", "h")
	}
	return strconv.FormatInt(int64(round(day)/day), 10) + "d"
}
