package sim_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// format1Log is the first 60 events of a session recorded in log format 1,
// before payloads had tags of their own: `corpsim run --world support-desk
// --seed 7` with the build of main before the change, printed by `corpsim
// log`. Its task.created payloads are keyed "ID", "Title", "Effort", ….
const format1Log = "testdata/format1-support-desk-seed7.jsonl"

// mustReadJSONL reads a log printed by corpsim log.
func mustReadJSONL(tb testing.TB, path string) []events.Event {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var evs []events.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev events.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return evs
}

func seqOf(evs []events.Event) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// A log of format 1 is refused, with a sentence that names its format and
// says what to do, rather than read as format 2.
func TestRebuildRefusesAFormat1Log(t *testing.T) {
	evs := mustReadJSONL(t, format1Log)
	if !strings.Contains(string(evs[13].Payload), `"task":{"ID":"general-1","Title":`) {
		t.Fatalf("the fixture is not a format-1 log: event 14 is %s", evs[13].Payload)
	}
	_, err := sim.Rebuild(seqOf(evs), "s", sim.Config{})
	if !errors.Is(err, payload.ErrLogFormat) {
		t.Fatalf("Rebuild: got %v, want an error wrapping payload.ErrLogFormat", err)
	}
	for _, want := range []string{"format 1", "reads formats 2 to 9", "corpsim run --world support-desk --seed 7"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Rebuild: got %q, want it to say %q", err, want)
		}
	}
}

// The engine records the format it writes — the newest, with a draw key
// or without — and a log it wrote is read back.
func TestEngineRecordsTheLogFormat(t *testing.T) {
	src, err := worlds.Source("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("support-desk.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"": payload.LogFormat, "s3cret": payload.LogFormat} { // order: each case is its own
		e, err := sim.New(sim.Config{World: w, Source: src, Seed: 7, DrawKey: payload.NewDrawKey([]byte(key), 7)})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		first := e.Ready().Events[0]
		p, err := payload.As[payload.SessionStarted](&first, nil)
		if err != nil || p.Format != want {
			t.Fatalf("secret %q: session.started: format %d, %v; want %d", key, p.Format, err, want)
		}
		if _, err := sim.Rebuild(seqOf([]events.Event{first}), "s", sim.Config{}); err != nil {
			t.Fatalf("Rebuild of the engine's own session.started: %v", err)
		}
	}
}
