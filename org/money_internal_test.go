package org

import (
	"math"
	"math/big"
	"testing"

	"github.com/corpsim/corpsim/clock"
)

// hourly is rate × work / hour exactly, for every rate and stint a world
// can give, and the largest int64 where that does not fit: a product that
// wrapped made an overrun of 1e17 score as no overrun at all.
func TestHourlyDoesNotWrap(t *testing.T) {
	cases := []struct {
		rate int64
		work clock.Duration
	}{
		{40, 2 * clock.Hour}, {30, 90 * clock.Minute}, {7, 1}, {1, clock.Hour - 1},
		{1e12, 3 * 24 * clock.Hour}, {1e13, 2 * clock.Hour}, {math.MaxInt64, clock.Hour},
		{math.MaxInt64, math.MaxInt64}, {0, clock.Hour}, {40, 0},
	}
	for _, c := range cases {
		want := new(big.Int).Mul(big.NewInt(c.rate), big.NewInt(int64(c.work)))
		want.Quo(want, big.NewInt(int64(clock.Hour)))
		if !want.IsInt64() {
			want.SetInt64(math.MaxInt64)
		}
		if got := hourly(c.rate, c.work); got != want.Int64() {
			t.Errorf("hourly(%d, %d) = %d, want %d", c.rate, c.work, got, want.Int64())
		}
		if c.rate*int64(c.work)/int64(clock.Hour) != want.Int64() && c.rate < 1e9 {
			t.Errorf("a small rate %d: the plain product differs", c.rate)
		}
	}
	if got := AddSat(math.MaxInt64-5, 10); got != math.MaxInt64 {
		t.Errorf("AddSat past the largest int64: %d", got)
	}
	if got := AddSat(-5, 10); got != 5 {
		t.Errorf("AddSat(-5, 10) = %d", got)
	}
}
