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
