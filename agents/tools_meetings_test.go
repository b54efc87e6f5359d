package agents_test

import (
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// schedule_meeting is a tool with its attendees as an array: a recorded
// booking becomes a tool call and back, exactly; worlds without
// availability do not offer it.
func TestScheduleMeetingTool(t *testing.T) {
	a := org.Action{Type: org.ActScheduleMeeting, Task: "reviews-1.book", Attendees: payload.NewNames("lou", "dana"),
		Start: "2026-02-03T10:00:00Z", For: "1h"}
	name, args, err := agents.ToolCallFromAction(a)
	if err != nil || name != org.ActScheduleMeeting || string(args) != `{"task":"reviews-1.book","attendees":["lou","dana"],"start":"2026-02-03T10:00:00Z","for":"1h"}` {
		t.Fatalf("tool call %s %s, %v", name, args, err)
	}
	back, err := agents.ActionFromToolCall(name, args)
	if err != nil || back != a {
		t.Fatalf("back %+v, %v; want %+v", back, err, a)
	}
	if _, err := agents.ActionFromToolCall(name, []byte(`{"task":"x","attendees":"lou","start":"s","for":"1h"}`)); err == nil {
		t.Fatal("attendees as a text were taken")
	}
	has := func(w *worlds.World) bool {
		for _, d := range agents.ToolDefsFor(w) {
			if d.Function.Name == org.ActScheduleMeeting {
				return d.Function.Parameters.Properties["attendees"].Items != nil
			}
		}
		return false
	}
	m, err := worlds.Shipped("meetings")
	if err != nil {
		t.Fatal(err)
	}
	b, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	if !has(m) || has(b) {
		t.Errorf("schedule_meeting offered: meetings %v, billing-support %v; want true, false", has(m), has(b))
	}
}
