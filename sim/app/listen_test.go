package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/sim/simtest"
)

// A run --listen answers corpsim sessions --nats from the moment its bus
// is reachable: asked once, at the first line the run logs (or the first
// batch it lands) after its port takes connections, it lists the session
// running. Its bus was reachable before its list responder subscribed,
// and a sessions --nats asked in between got "no responders".
func TestRunListenListsFromTheMomentItIsReachable(t *testing.T) {
	data := t.TempDir()
	addr := simtest.FreeAddr(t)
	var listed []server.ClusterSession
	reach := &simtest.Reach{Addr: addr, Ask: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		listed, err = server.ListCluster(ctx, "nats://"+addr, app.ReadOperatorToken(data))
		return err
	}}
	logger := reach.Logger(simtest.TestLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 1, Agents: "greedy", Data: data, Listen: addr,
		Logger: logger, Progress: func(uint64, int64) { reach.Probe() }})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := reach.Asked()
	if !asked {
		t.Fatalf("%s was never reachable while the run logged or landed a batch", addr)
	}
	if err != nil {
		t.Fatalf("sessions --nats asked as soon as %s was reachable: got %v, want the running session", addr, err)
	}
	if len(listed) != 1 || listed[0].ID != res.Session || listed[0].Status != events.StatusRunning {
		t.Fatalf("sessions --nats listed %+v; want session %s, running", listed, res.Session)
	}
}
