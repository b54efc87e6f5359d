package agents

import (
	"testing"

	"github.com/corpsim/corpsim/org"
)

// TestCappedKeepsTheTurnEnd checks that a reply longer than a turn takes
// is cut to org.MaxActions, keeping its last action (the one that ends the
// turn), and that a short one is left alone.
func TestCappedKeepsTheTurnEnd(t *testing.T) {
	var acts []org.Action
	for range org.MaxActions + 5 {
		acts = append(acts, org.Action{Type: org.ActApprove, Request: "r1"})
	}
	acts = append(acts, org.Action{Type: org.ActWait})
	got := capped(acts)
	if len(got) != org.MaxActions || got[len(got)-1].Type != org.ActWait {
		t.Fatalf("capped to %d actions ending in %s; want %d ending in wait", len(got), got[len(got)-1].Type, org.MaxActions)
	}
	if short := acts[len(acts)-3:]; len(capped(short)) != 3 {
		t.Fatal("a short reply was changed")
	}
}
