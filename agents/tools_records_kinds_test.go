package agents_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/worlds"
)

// A world whose steps make decisions exports decide with their options as
// an enum; one whose steps make none does not export it.
func TestDecideToolFollowsTheWorld(t *testing.T) {
	for _, tc := range []struct {
		world string
		want  []string // nil: no decide tool
	}{
		{"access-requests", []string{"approve", "deny"}},
		{"billing-support", nil},
		{"startup", nil},
	} {
		w, err := worlds.Shipped(tc.world)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		found, asks := false, false
		for _, d := range agents.ToolDefsFor(w) {
			if d.Function.Name == "decide" {
				found, got = true, d.Function.Parameters.Properties["option"].Enum
			}
			if d.Function.Name == "message" {
				asks = strings.Contains(d.Function.Description, `"told"`)
			}
		}
		if asks != (tc.world == "billing-support") {
			t.Errorf("%s: the message tool tells how to ask for a fact: %v", tc.world, asks)
		}
		if found != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("%s: decide tool %v with options %v, want options %v", tc.world, found, got, tc.want)
		}
	}
}
