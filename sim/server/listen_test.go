package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

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
	addr := freeAddr(t)
	asked := make(chan struct{})
	reach := &simtest.Reach{Addr: addr, Ask: func() error {
		defer close(asked)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := ListCluster(ctx, "nats://"+addr, app.ReadOperatorToken(data))
		return err
	}}
	logger := reach.Logger(hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: tWriter{t}}))
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

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// tWriter sends a logger's lines to t.Log.
type tWriter struct{ tb testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
