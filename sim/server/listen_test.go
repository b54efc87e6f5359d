package server

import (
	"context"
	"testing"
	"time"

	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/simtest"
)

// A serve answers corpsim sessions --nats from the moment its bus is
// reachable: asked once, at the first line it logs after its port takes
// connections, it answers with its (empty) list. Its bus was reachable
// before the service subscribed its responders, and a sessions --nats
// asked in between got "no responders".
func TestServeListsFromTheMomentItIsReachable(t *testing.T) {
	data := t.TempDir()
	addr := simtest.FreeAddr(t)
	asked := make(chan struct{})
	reach := &simtest.Reach{Addr: addr, Ask: func() error {
		defer close(asked)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := ListCluster(ctx, "nats://"+addr, app.ReadOperatorToken(data))
		return err
	}}
	logger := reach.Logger(simtest.TestLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeOptions{Listen: addr, Data: data, MaxMessage: DefaultMaxMessage, MaxSessions: DefaultMaxSessions,
			MaxSeats: DefaultMaxSeats, KeepEnded: DefaultKeepEnded, ShutdownGrace: 5 * time.Second, Logger: logger})
	}()
	select {
	case <-asked:
	case err := <-served:
		t.Fatalf("serve returned %v before %s was reachable while it logged", err, addr)
	case <-time.After(time.Minute):
		t.Fatalf("%s was not reachable while serve logged, for a minute", addr)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := reach.Asked(); err != nil {
		t.Fatalf("sessions --nats asked as soon as %s was reachable: got %v, want the list", addr, err)
	}
}
