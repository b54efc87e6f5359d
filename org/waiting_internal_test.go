package org

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/worlds"
)

// The list a view shares when a task waits on every dependency is cut at
// its length: appending to it (a view is the agent's to keep) must never
// write into the spare room of the spec's own list.
func TestWaitingOnSharesTheSpecListClipped(t *testing.T) {
	deps := make([]string, 2, 8)
	deps[0], deps[1] = "a", "b"
	a, b := &Task{ID: "a", Status: StatusOpen}, &Task{ID: "b", Status: StatusClaimed}
	task := &Task{ID: "c", Spec: &worlds.Task{Deps: deps}, deps: []*Task{a, b}}
	s := &State{}
	w := s.waitingOn(task)
	if !slices.Equal(w, []string{"a", "b"}) || &w[0] != &deps[0] {
		t.Fatalf("waiting on both: got %q, want the spec's own list", w)
	}
	_ = append(w, "x")
	if got := deps[:3][2]; got != "" {
		t.Fatalf("appending to the view's list wrote %q into the spec's spare room", got)
	}
	b.Status = StatusDone
	if w := s.waitingOn(task); !slices.Equal(w, []string{"a"}) || cap(w) != 1 {
		t.Fatalf("waiting on a alone: got %q (cap %d)", w, cap(w))
	}
	a.Status = StatusDone
	if w := s.waitingOn(task); w != nil {
		t.Fatalf("waiting on none: got %q, want nil", w)
	}
}
