package openenv

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corpsim/corpsim/agents/httpgw"
)

// TestWatchdogDeadlines: the watchdog that bounds reads and writes closes
// a connection whose client stopped reading a reply (the write timeout),
// and never one whose frame is still being handled, however long that
// takes past both timeouts.
func TestWatchdogDeadlines(t *testing.T) {
	t.Run("a reply nobody reads", func(t *testing.T) {
		// 32 MiB: more than the sockets' buffers hold, so the write blocks.
		big := json.RawMessage(`{"member":"bob","pad":"` + strings.Repeat("x", 32<<20) + `"}`)
		f := newFake("bob")
		f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: map[string]json.RawMessage{"bob": big}}}
		f.stopped = make(chan string, 4)
		s := newTestServer(t, f, Config{WriteTimeout: 50 * time.Millisecond})
		base := startHTTP(t, s)
		c := dial(t, base, "Bearer op")
		roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
		if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"step","data":{"actions":{"bob":[]}}}`)); err != nil {
			t.Fatal(err)
		}
		// The client reads nothing: the server's write of the reply
		// blocks until the watchdog closes the connection, which ends
		// the episode.
		waitStopped(t, f, "s1")
	})
	t.Run("a slow step", func(t *testing.T) {
		f := newFake("bob")
		f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
		// The step after the reset's takes four idle timeouts, eight
		// write timeouts.
		slow := &slowStep{fakeOps: f, nth: 2, delay: 400 * time.Millisecond}
		s := newTestServer(t, slow, Config{IdleTimeout: 100 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
		base := startHTTP(t, s)
		c := dial(t, base, "Bearer op")
		roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
		if r := roundTrip(t, c, `{"type":"step","data":{"actions":{"bob":[]}}}`); r.Type != "observation" {
			t.Fatalf("the slow step's reply: %+v, want an observation", r)
		}
	})
	t.Run("pings during a slow step", func(t *testing.T) {
		// OpenEnv's Python client pings every 20 s and drops a connection
		// whose ping is not answered within 20 s; here a step takes 600 ms
		// and each ping must be answered within 200 ms.
		f := newFake("bob")
		f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
		slow := &slowStep{fakeOps: f, nth: 2, delay: 600 * time.Millisecond}
		s := newTestServer(t, slow, Config{ReadAheadAfter: 50 * time.Millisecond})
		base := startHTTP(t, s)
		c := dial(t, base, "Bearer op")
		roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
		if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"step","data":{"actions":{"bob":[]}}}`)); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { // the client's reader, which also takes the pongs
			_, _, err := c.Read(context.Background())
			got <- err
		}()
		for i := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			err := c.Ping(ctx)
			cancel()
			if err != nil {
				t.Fatalf("ping %d during the slow step: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := <-got; err != nil {
			t.Fatalf("the slow step's reply: %v", err)
		}
	})
	t.Run("pings keep an idle connection", func(t *testing.T) {
		f := newFake("bob")
		f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
		s := newTestServer(t, f, Config{IdleTimeout: 300 * time.Millisecond})
		base := startHTTP(t, s)
		c := dial(t, base, "Bearer op")
		roundTrip(t, c, `{"type":"reset","data":{"world":"startup"}}`)
		go func() { _, _, _ = c.Read(context.Background()) }() // takes the pongs; ends with the connection
		// Three idle timeouts with nothing but pings.
		for range 9 {
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := c.Ping(ctx)
			cancel()
			if err != nil {
				t.Fatalf("a ping after %s of pings alone: %v (closed as idle?)", 900*time.Millisecond, err)
			}
		}
	})
}

// slowStep is fakeOps whose nth step takes delay.
type slowStep struct {
	*fakeOps
	n     atomic.Int32
	nth   int32
	delay time.Duration
}

func (o *slowStep) Step(ctx context.Context, id string, req httpgw.StepRequest, wait time.Duration) (httpgw.StepReply, error) {
	if o.n.Add(1) == o.nth {
		time.Sleep(o.delay)
	}
	return o.fakeOps.Step(ctx, id, req, wait)
}
