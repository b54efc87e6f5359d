package mcpseat

import (
	"encoding/json"
	"testing"
	"time"
)

// observe's wait is bounded by MaxWait: seconds too many for a Duration
// (1e30) overflowed to a negative one, and observe did not wait at all.
func TestObserveWaitBounds(t *testing.T) {
	s := &Server{cfg: Config{ObserveWait: 2 * time.Second, MaxWait: 50 * time.Second}}
	for raw, want := range map[string]time.Duration{``: 2 * time.Second, `{}`: 2 * time.Second, `{"wait":1.5}`: 1500 * time.Millisecond,
		`{"wait":100}`: 50 * time.Second, `{"wait":1e30}`: 50 * time.Second, `{"wait":0}`: 0} {
		got, err := s.observeWait(json.RawMessage(raw))
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", raw, got, err, want)
		}
	}
}
