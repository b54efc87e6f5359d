package app_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/app"
)

// A stored session that gives a seat to a remote agent (a served one) is
// refused at once by resume and fork without --agents, naming the seat,
// where each of its turns waited out the turn timeout before: nobody can
// reach a remote seat outside corpsim serve. With --agents it plays on.
func TestResumeRefusesRemoteSeatsNobodyCanReach(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	res, err := app.Run(ctx, app.RunOptions{Data: data, World: "startup", Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := app.OpenLog(ctx, data, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := log.Session(ctx, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	seats := maps.Clone(parent.Agents)
	seats["bob"] = agents.Remote
	served := events.SessionMeta{ID: "01M00000000000000000000REM", World: parent.World, WorldHash: parent.WorldHash, Seed: 3,
		Agents: seats, Created: time.Now().UTC().Format(time.RFC3339), Parent: parent.ID, ForkSeq: 40,
		Status: events.StatusInterrupted, LastSeq: 40}
	if err := log.CreateSession(ctx, served); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	// Were it not refused, bob's turns would each wait a minute: the
	// context ends such a run, which then fails the test instead of hanging.
	limited, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	o := app.RunOptions{Data: data, TurnTimeout: time.Minute}
	for what, try := range map[string]func() error{
		"resume": func() error { _, err := app.Resume(limited, o, served.ID); return err },
		"fork": func() error {
			_, _, err := app.Fork(limited, o, app.ForkOptions{Parent: served.ID, At: 40})
			return err
		},
	} {
		if err := try(); !app.IsUsage(err) || !strings.Contains(err.Error(), "plays bob remotely") {
			t.Errorf("%s of a session with a remote seat: %v; want a usage error naming bob", what, err)
		}
	}
	o.Agents = "greedy"
	played, err := app.Resume(ctx, o, served.ID)
	if err != nil || played.Ended != "complete" {
		t.Fatalf("resume --agents greedy: %+v, %v", played, err)
	}
}

// A session recorded failed before any of its events was stored (a server
// does so for one that panicked at once) is said to be so by every command
// that reads one session, not reported as damage (verify's exit 3).
func TestEmptyFailedSessionIsNotDamage(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	log, err := app.OpenLog(ctx, data, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := events.SessionMeta{ID: "01M00000000000000000000EMP", World: "startup", Seed: 3, Agents: map[string]string{"bob": "greedy"},
		Created: time.Now().UTC().Format(time.RFC3339), Status: events.StatusFailed, Reason: "the session panicked: a defect"}
	if err := log.CreateSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, verr := app.Verify(ctx, data, meta.ID, nil)
	_, rerr := app.Resume(ctx, app.RunOptions{Data: data}, meta.ID)
	_, serr := app.Score(ctx, data, meta.ID, nil)
	for what, err := range map[string]error{"verify": verr, "resume": rerr, "score": serr} {
		if err == nil || errors.Is(err, events.ErrCorrupt) || !strings.Contains(err.Error(), "failed before any of its events was stored (the session panicked: a defect)") {
			t.Errorf("%s: %v; want it saying the session failed before storing anything, not damage", what, err)
		}
	}
}
