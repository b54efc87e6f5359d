package analyze

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corpsim/corpsim/events"
)

// TestDiffNamesWhatItsSummariesHide: two first divergent events whose
// one-line summaries read alike (a work of another length, which the
// summary leaves out) are followed by the payload keys that differ.
func TestDiffNamesWhatItsSummariesHide(t *testing.T) {
	a := &events.Event{Seq: 101, Type: "turn", Actor: "bob", Payload: []byte(`{"turn":4,"actions":[{"type":"claim","task":"alarms-1.triage"},{"type":"work","task":"alarms-1.triage","for":"41m58s"}],"seen":100,"note":"é"}`)}
	b := &events.Event{Seq: 101, Type: "turn", Actor: "bob", Payload: []byte(`{"turn":4,"actions":[{"type":"claim","task":"alarms-1.triage"},{"type":"work","task":"alarms-1.triage","for":"40m"}],"seen":100,"extra":1,"note":"ê"}`)}
	d := &Difference{Diverged: true, Seq: 101, Fields: []string{"payload"}, A: a, B: b, AText: "claim alarms-1.triage, work alarms-1.triage", BText: "claim alarms-1.triage, work alarms-1.triage"}
	var out bytes.Buffer
	d.WriteText(&out)
	// Long values are shown where they differ, far into them.
	want := `their payloads differ in actions (…s-1.triage","for":"41m58s"}], …s-1.triage","for":"40m"}]), extra (absent, 1), note ("é", "ê")`
	if !strings.Contains(out.String(), want) {
		t.Errorf("diff text lacks %q:\n%s", want, out.String())
	}
	if !utf8.Valid(out.Bytes()) {
		t.Errorf("diff text is not UTF-8: %q", out.String())
	}
	d.BText = "wait"
	out.Reset()
	d.WriteText(&out)
	if strings.Contains(out.String(), "their payloads differ") {
		t.Errorf("summaries that differ are followed by the keys too:\n%s", out.String())
	}
}
