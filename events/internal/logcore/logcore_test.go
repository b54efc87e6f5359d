package logcore_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/internal/logcore"
)

func TestPlan(t *testing.T) {
	root := events.SessionMeta{ID: "r"}
	p := events.SessionMeta{ID: "p", Parent: "r", ForkSeq: 5}
	f := events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 8}
	z := events.SessionMeta{ID: "z", Parent: "f", ForkSeq: 8} // forked where f forked
	const inf = math.MaxUint64
	tests := []struct {
		name  string
		chain []events.SessionMeta
		from  uint64
		want  []logcore.Segment
	}{
		{"root", []events.SessionMeta{root}, 0, []logcore.Segment{{"r", 1, inf}}},
		{"root from 7", []events.SessionMeta{root}, 7, []logcore.Segment{{"r", 7, inf}}},
		{"fork", []events.SessionMeta{p, root}, 1, []logcore.Segment{{"r", 1, 5}, {"p", 6, inf}}},
		{"fork from parent's last", []events.SessionMeta{p, root}, 5, []logcore.Segment{{"r", 5, 5}, {"p", 6, inf}}},
		{"fork from own", []events.SessionMeta{p, root}, 6, []logcore.Segment{{"p", 6, inf}}},
		{"two levels", []events.SessionMeta{f, p, root}, 3, []logcore.Segment{{"r", 3, 5}, {"p", 6, 8}, {"f", 9, inf}}},
		{"empty middle", []events.SessionMeta{z, f, p, root}, 1, []logcore.Segment{{"r", 1, 5}, {"p", 6, 8}, {"z", 9, inf}}},
		// g forks f inside p's prefix: none of f's or p's own events, and
		// only r's up to 3.
		{"fork inside the grandparent's prefix", []events.SessionMeta{{ID: "g", Parent: "f", ForkSeq: 3}, f, p, root}, 1,
			[]logcore.Segment{{"r", 1, 3}, {"g", 4, inf}}},
		{"fork inside the parent's prefix", []events.SessionMeta{{ID: "g", Parent: "f", ForkSeq: 7}, f, p, root}, 2,
			[]logcore.Segment{{"r", 2, 5}, {"p", 6, 7}, {"g", 8, inf}}},
		{"max", []events.SessionMeta{p, root}, inf, []logcore.Segment{{"p", inf, inf}}},
		{"fork at max", []events.SessionMeta{{ID: "m", Parent: "r", ForkSeq: inf}, root}, inf, []logcore.Segment{{"r", inf, inf}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := logcore.Plan(tt.chain, tt.from); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Plan(from %d): got %v, want %v", tt.from, got, tt.want)
			}
		})
	}
}
