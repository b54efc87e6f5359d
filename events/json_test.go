package events

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestAppendJSONMatchesMarshalJSON(t *testing.T) {
	base := Event{ID: NewID([32]byte{1}, 1_700_000_000_000, 5, 3), Session: "01S", Seq: 3, Time: 5, Type: "task.claimed", Actor: "bob", Cause: 2,
		Payload: json.RawMessage(`{"task":"api","busy_until":300000}`)}
	tests := []struct {
		name string
		edit func(*Event)
	}{
		{"full", func(*Event) {}},
		{"no actor, cause or payload", func(e *Event) { e.Actor, e.Cause, e.Payload = "", 0, nil }},
		{"escaped actor", func(e *Event) { e.Actor = `a"b<c>` }},
		{"unicode type", func(e *Event) { e.Type = "tâche" }},
		{"html in payload", func(e *Event) { e.Payload = json.RawMessage(`{"text":"\u003cb\u003e"}`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			tt.edit(&e)
			want, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendJSON([]byte("x"), &e); !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Fatalf("got  %s\nwant %s", got[1:], want)
			}
			var back Event
			if err := json.Unmarshal(AppendJSON(nil, &e), &back); err != nil || !bytes.Equal(Encode(&back), Encode(&e)) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}
