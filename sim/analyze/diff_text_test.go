package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// TestDiffNamesWhatItsSummariesHide: two first divergent events whose
// one-line summaries read alike (a work of another length, which the
// summary leaves out) are followed by the payload keys that differ.
func TestDiffNamesWhatItsSummariesHide(t *testing.T) {
	a := &events.Event{Seq: 101, Type: "turn", Actor: "bob", Payload: []byte(`{"turn":4,"actions":[{"type":"work","task":"help-4","for":"41m58s"}],"seen":100}`)}
	b := &events.Event{Seq: 101, Type: "turn", Actor: "bob", Payload: []byte(`{"turn":4,"actions":[{"type":"work","task":"help-4","for":"40m"}],"seen":100,"extra":1}`)}
	d := &Difference{Diverged: true, Seq: 101, Fields: []string{"payload"}, A: a, B: b, AText: "work help-4", BText: "work help-4"}
	var out bytes.Buffer
	d.WriteText(&out)
	want := `their payloads differ in actions ([{"type":"work","task":"help-4","for":"41m58s"}], [{"type":"work","task":"help-4","for":"40m"}]), extra (absent, 1)`
	if !strings.Contains(out.String(), want) {
		t.Errorf("diff text lacks %q:\n%s", want, out.String())
	}
	d.BText = "wait"
	out.Reset()
	d.WriteText(&out)
	if strings.Contains(out.String(), "their payloads differ") {
		t.Errorf("summaries that differ are followed by the keys too:\n%s", out.String())
	}
}
