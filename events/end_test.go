package events_test

import (
	"errors"
	"testing"

	"github.com/corpsim/corpsim/events"
)

func TestCheckEnd(t *testing.T) {
	tests := []struct {
		name   string
		status events.Status
		marker uint64
		stored uint64
		lost   bool
	}{
		{"finished, whole", events.StatusFinished, 10, 10, false},
		{"finished, short", events.StatusFinished, 10, 7, true},
		{"interrupted, short", events.StatusInterrupted, 10, 9, true},
		{"failed, empty", events.StatusFailed, 3, 0, true},
		{"finished, longer than the marker", events.StatusFinished, 10, 12, false},
		{"running has no marker", events.StatusRunning, 10, 2, false},
		{"no marker", events.StatusFinished, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := events.SessionMeta{ID: "s1", Status: tt.status, LastSeq: tt.marker}
			err := events.CheckEnd(m, tt.stored)
			if got := errors.Is(err, events.ErrLost); got != tt.lost {
				t.Fatalf("CheckEnd(%s at %d, stored %d): got %v, want lost %v", tt.status, tt.marker, tt.stored, err, tt.lost)
			}
		})
	}
}
