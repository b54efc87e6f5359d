package nemogym

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/org"
)

// Of two identical calls, the engine takes the first and refuses the
// second: the refusal is the second's (it went to the first, reported
// refused, and the second accepted).
func TestResultsOfIdenticalCalls(t *testing.T) {
	wait := org.Action{Type: org.ActWait}
	body, _ := json.Marshal(map[string]any{"rejected": []org.RejectedView{{Action: wait, Kind: "state", Reason: "the turn already ended with a work or wait action"}}})
	out := results([]org.Action{wait, wait}, httpgw.Observation{Turn: 5, Body: body}, "", nil)
	if out[0] != "accepted" || !strings.HasPrefix(out[1], "refused (state)") {
		t.Fatalf("results %q; want the first accepted, the second refused", out)
	}
}

// Work before the claim, then the same work after it: the first is the
// one refused (matched from the last, the refusal went to the one taken).
func TestResultsOfARefusedEarlierCall(t *testing.T) {
	work, claim := org.Action{Type: org.ActWork, Task: "api"}, org.Action{Type: org.ActClaim, Task: "api"}
	body, _ := json.Marshal(map[string]any{"rejected": []org.RejectedView{{Action: work, Kind: "state", Reason: "task \"api\" is not yours"}}})
	out := results([]org.Action{work, claim, work}, httpgw.Observation{Turn: 5, Body: body}, "", nil)
	if !strings.HasPrefix(out[0], "refused (state)") || out[1] != "accepted" || out[2] != "accepted" {
		t.Fatalf("results %q; want the first refused, the others accepted", out)
	}
}
