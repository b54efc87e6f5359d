package httpgw

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
)

// TestRecountCountsAPrefixLearntAfterTheEnd: a fork's prefix learnt after
// the fork ended grows its kept record: the bytes of the ended records
// count it, and past Config.RetainBytes the record that ended first is
// forgotten, as when a session ends.
func TestRecountCountsAPrefixLearntAfterTheEnd(t *testing.T) {
	g := &Gateway{sessions: map[string]*session{}, tokens: map[string]*seat{}}
	ended := func(id string, forkSeq uint64) *session {
		s := &session{g: g, id: id, forkSeq: forkSeq, log: hclog.NewNullLogger(), changed: make(chan struct{})}
		g.sessions[id] = s
		g.keepEnded(s)
		return s
	}
	g.cfg.RetainBytes = 1 << 20
	first := ended("s1", 0)
	fork := ended("f1", 100)
	small := g.endedBytes
	if small != first.retained+fork.retained || small == 0 {
		t.Fatalf("ended records count %d bytes, want %d + %d", small, first.retained, fork.retained)
	}
	prefix := make([]events.Event, 100)
	for i := range prefix {
		prefix[i] = events.Event{Seq: uint64(i + 1), Type: "task.created", Payload: make([]byte, 200)}
	}
	g.cfg.RetainBytes = small + 10_000 // the prefix (over 20,000 bytes) goes past it
	fork.setPrefix(prefix, 0)
	if fork.retained <= 20_000 || g.endedBytes != fork.retained {
		t.Fatalf("after the prefix: the fork's record counts %d bytes, all records %d; want the prefix counted, and the first record forgotten", fork.retained, g.endedBytes)
	}
	if g.sessions["s1"] != nil || g.sessions["f1"] != fork {
		t.Fatalf("sessions kept %v: want the fork alone (the first ended first, and the records are over their bound)", g.sessions)
	}
}
