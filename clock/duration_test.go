package clock

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTimeAddSub(t *testing.T) {
	tests := []struct {
		name string
		t    Time
		d    Duration
		want Time
	}{
		{"zero", 0, 0, 0},
		{"forward", 1000, 90 * Minute, 1000 + 5_400_000},
		{"backward", 5000, -2 * Second, 3000},
		{"negative time", -10, 4, -6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.Add(tt.d); got != tt.want {
				t.Errorf("%d.Add(%v) = %d, want %d", tt.t, tt.d, got, tt.want)
			}
			if got := tt.want.Sub(tt.t); got != tt.d {
				t.Errorf("%d.Sub(%d) = %v, want %v", tt.want, tt.t, got, tt.d)
			}
		})
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		name string
		d    Duration
		want string
	}{
		{"zero", 0, "0s"},
		{"millisecond", 1, "1ms"},
		{"seconds and ms", 1500 * Millisecond, "1s500ms"},
		{"minutes", 45 * Minute, "45m"},
		{"hours and minutes", 2*Hour + 30*Minute, "2h30m"},
		{"zero minutes left out", Hour + 5*Second, "1h5s"},
		{"all units", 26*Hour + 3*Minute + 4*Second + 5, "26h3m4s5ms"},
		{"negative", -(90 * Minute), "-1h30m"},
		{"max", math.MaxInt64, "2562047788015h12m55s807ms"},
		{"min", math.MinInt64, "-2562047788015h12m55s808ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("Duration(%d).String() = %q, want %q", int64(tt.d), got, tt.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	const day = 8 * Hour
	tests := []struct {
		name   string
		in     string
		dayLen Duration
		want   Duration
	}{
		{"minutes", "90m", day, 90 * Minute},
		{"hours", "2h", day, 2 * Hour},
		{"hours and minutes", "1h30m", day, 90 * Minute},
		{"seconds", "45s", day, 45 * Second},
		{"milliseconds", "250ms", day, 250},
		{"day", "1d", day, 8 * Hour},
		{"days and hours", "2d4h", day, 20 * Hour},
		{"week", "1w", day, 40 * Hour},
		{"week of short days", "2w", 6 * Hour, 60 * Hour},
		{"half hour", "0.5h", day, 30 * Minute},
		{"day and a half", "1.5d", day, 12 * Hour},
		{"leading dot", ".25h", day, 15 * Minute},
		{"trailing dot", "3.m", day, 3 * Minute},
		{"sub-millisecond truncated", "1.9ms", day, 1},
		{"repeated units add", "1h1h", day, 2 * Hour},
		{"zero", "0s", day, 0},
		{"no day length needed", "3h", 0, 3 * Hour},
		{"long fraction", "0.333333333333333333333333h", day, 1_199_999},
		{"leading zeros", "007m", day, 7 * Minute},
		{"max", "9223372036854775807ms", day, math.MaxInt64},
		{"max by parts", "2562047788015h12m55s807ms", 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDuration(tt.in, tt.dayLen)
			if err != nil {
				t.Fatalf("ParseDuration(%q, %v) failed: %v", tt.in, tt.dayLen, err)
			}
			if got != tt.want {
				t.Errorf("ParseDuration(%q, %v) = %v, want %v", tt.in, tt.dayLen, got, tt.want)
			}
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		dayLen Duration
		want   string
	}{
		{"empty", "", 8 * Hour, `clock: invalid duration "": empty string`},
		{"negative", "-1h", 8 * Hour, `clock: invalid duration "-1h": negative durations are not allowed`},
		{"missing unit", "15", 8 * Hour, `clock: invalid duration "15": missing unit after "15" (expected w, d, h, m, s or ms)`},
		{"missing last unit", "1h30", 8 * Hour, `clock: invalid duration "1h30": missing unit after "30" (expected w, d, h, m, s or ms)`},
		{"unknown unit", "2x", 8 * Hour, `clock: invalid duration "2x": unknown unit "x" (expected w, d, h, m, s or ms)`},
		{"capital unit", "2H", 8 * Hour, `clock: invalid duration "2H": unknown unit "H" (expected w, d, h, m, s or ms)`},
		{"space", "1h 30m", 8 * Hour, `clock: invalid duration "1h 30m": unknown unit "h " (expected w, d, h, m, s or ms)`},
		{"unit first", "h", 8 * Hour, `clock: invalid duration "h": expected a number at "h"`},
		{"plus sign", "+1h", 8 * Hour, `clock: invalid duration "+1h": expected a number at "+1h"`},
		{"lone dot", ".h", 8 * Hour, `clock: invalid duration ".h": expected a number at ".h"`},
		{"two dots", "1.5.5h", 8 * Hour, `clock: invalid duration "1.5.5h": missing unit after "1.5" (expected w, d, h, m, s or ms)`},
		{"day without day length", "1d", 0, `clock: invalid duration "1d": unit "d" needs a positive day length, got 0s`},
		{"week with negative day length", "1w", -Hour, `clock: invalid duration "1w": unit "w" needs a positive day length, got -1h`},
		{"too many digits", "99999999999999999999ms", 8 * Hour, `clock: invalid duration "99999999999999999999ms": out of range`},
		{"product overflows", "9999999999999h", 8 * Hour, `clock: invalid duration "9999999999999h": out of range`},
		{"sum overflows", "9223372036854775807ms1ms", 8 * Hour, `clock: invalid duration "9223372036854775807ms1ms": out of range`},
		{"fraction overflows", "2562047788015h12m55s807.9ms1.5ms", 8 * Hour, `clock: invalid duration "2562047788015h12m55s807.9ms1.5ms": out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDuration(tt.in, tt.dayLen)
			if err == nil {
				t.Fatalf("ParseDuration(%q, %v) = %v, want error %q", tt.in, tt.dayLen, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("ParseDuration(%q, %v) error:\n got %s\nwant %s", tt.in, tt.dayLen, err, tt.want)
			}
		})
	}
}

func TestDurationStringRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []Duration{0, 1, 999, Second, Minute, Hour, 25 * Hour, math.MaxInt64}
	for range 2000 {
		values = append(values, Duration(rng.Int64N(int64(400*Hour))), Duration(rng.Int64()))
	}
	for _, d := range values {
		s := d.String()
		got, err := ParseDuration(s, 0)
		if err != nil {
			t.Fatalf("ParseDuration(%q) of Duration(%d).String() failed: %v", s, int64(d), err)
		}
		if got != d {
			t.Fatalf("ParseDuration(%q) = %d, want %d", s, int64(got), int64(d))
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90m", "2h", "1h30m", "45s", "1d", "2d4h", "0.5h", "1.5d", "1w", "250ms",
		"", "-1h", "15", "2x", ".", "1..2h", "9223372036854775807ms", "0.000000000000000000001h"} {
		f.Add(s, int64(8*Hour))
	}
	f.Add("1d", int64(0))
	f.Add("3w", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, s string, dayLen int64) {
		d, err := ParseDuration(s, Duration(dayLen))
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q, %d) = %v, want non-negative", s, dayLen, d)
		}
		got, err := ParseDuration(d.String(), 0)
		if err != nil {
			t.Fatalf("ParseDuration(%q) of the String of ParseDuration(%q) failed: %v", d.String(), s, err)
		}
		if got != d {
			t.Fatalf("ParseDuration(%q) = %d, want %d (from %q)", d.String(), int64(got), int64(d), s)
		}
	})
}

func TestDurationHuman(t *testing.T) {
	const day = 24 * Hour
	for _, c := range []struct {
		d    Duration
		want string
	}{
		{0, "0ms"}, {250, "250ms"}, {999, "999ms"}, {Second, "1s"}, {45*Second + 400, "45s"},
		{59*Second + 600, "1m"}, {12*Minute + 30*Second, "12m30s"},
		{3*Hour + 44*Minute + 32*Second + 552, "3h45m"}, {2 * Hour, "2h"}, {23*Hour + 59*Minute + 40*Second, "1d"},
		{2*day + 3*Hour + 10*Minute, "2d3h"}, {154*day + 5*Hour, "154d"}, {3700*Hour + 30*Minute, "154d"},
		{-90 * Second, "-1m30s"},
	} {
		if got := c.d.Human(); got != c.want {
			t.Errorf("Duration(%d).Human() = %q, want %q", int64(c.d), got, c.want)
		}
	}
}
