package agents

import (
	"testing"

	"github.com/corpsim/corpsim/org"
)

// A request the cheater's view does not list is another's only when the
// view lists every one of its own: with some left out (requests_more), one
// not listed may be its own, and approving it would be a self-approval or
// a state error, not the authority violation the shortcut tries.
func TestCheaterListedCountsWhatTheViewLeftOut(t *testing.T) {
	o := org.Observation{Requests: []org.RequestView{{ID: "r3"}}}
	if listed(o, "r1") || !listed(o, "r3") {
		t.Fatal("with every request listed, r1 is another's and r3 its own")
	}
	o.RequestsMore = 2
	if !listed(o, "r1") {
		t.Fatal("with two of its requests left out, r1 may be its own")
	}
}
