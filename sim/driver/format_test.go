package driver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/driver"
)

// A stored session of log format 1 (sim/testdata holds the first 60 events
// of one, recorded by the build before the change) is neither resumed,
// forked nor replayed: Load and ReadOrigin refuse it, saying what to do.
func TestLoadRefusesAFormat1Log(t *testing.T) {
	f, err := os.Open("../testdata/format1-support-desk-seed7.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []events.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev events.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		ev.Session = ""
		evs = append(evs, ev)
	}
	ctx := context.Background()
	log := memlog.New()
	if err := log.CreateSession(ctx, events.SessionMeta{ID: "old", Status: events.StatusInterrupted}); err != nil {
		t.Fatal(err)
	}
	if err := log.Append(ctx, "old", 0, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.ReadOrigin(ctx, log, "old"); !errors.Is(err, payload.ErrLogFormat) || !strings.Contains(err.Error(), "format 1") {
		t.Errorf("ReadOrigin: got %v, want the log format refused", err)
	}
	if _, _, err := driver.Load(ctx, log, "old", 0, 0); !errors.Is(err, payload.ErrLogFormat) {
		t.Errorf("Load: got %v, want the log format refused", err)
	}
}
