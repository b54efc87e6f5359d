package worlds

import (
	"math"
	"testing"
)

// TestDistSampleStaysInRange: a draw is within its distribution's range
// whatever its size. A uniform {min: 0, max: 9223372036854775807} (the
// largest amount a world may give) computed max-min+1 past int64 and drew
// negative purchases and case amounts, which the rules read as no
// purchase; an exponential draw past int64 became 1 on amd64 (a float
// converted out of range) and the largest amount on arm64.
func TestDistSampleStaysInRange(t *testing.T) {
	const nearOne = 1 - 0x1p-53 // the largest u01 below 1
	tests := []struct {
		name    string
		d       Dist
		u01, e1 float64
		want    int64
	}{
		{"uniform, small, low", Dist{Kind: "uniform", Min: 50, Max: 1500}, 0, 0, 50},
		{"uniform, small, middle", Dist{Kind: "uniform", Min: 50, Max: 1500}, 0.5, 0, 50 + 725},
		{"uniform, small, high", Dist{Kind: "uniform", Min: 50, Max: 1500}, nearOne, 0, 1500},
		{"uniform, whole int64, low", Dist{Kind: "uniform", Min: 0, Max: math.MaxInt64}, 0, 0, 0},
		{"uniform, whole int64, middle", Dist{Kind: "uniform", Min: 0, Max: math.MaxInt64}, 0.5, 0, 1 << 62},
		{"uniform, whole int64, high", Dist{Kind: "uniform", Min: 0, Max: math.MaxInt64}, nearOne, 0, math.MaxInt64 - 1023},
		{"uniform, top of int64", Dist{Kind: "uniform", Min: math.MaxInt64 - 10, Max: math.MaxInt64}, nearOne, 0, math.MaxInt64},
		{"exponential", Dist{Kind: "exp", Mean: 1000}, 0, 1.5, 1500},
		{"exponential, at least 1", Dist{Kind: "exp", Mean: 1000}, 0, 0, 1},
		{"exponential past int64", Dist{Kind: "exp", Mean: 1e18}, 0, 20, math.MaxInt64},
		{"fixed", Dist{Kind: "fixed", Fixed: 7}, 0.5, 1, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.Sample(tt.u01, tt.e1); got != tt.want {
				t.Errorf("Sample(%v, %v) of %+v = %d, want %d", tt.u01, tt.e1, tt.d, got, tt.want)
			}
		})
	}
}
