package natsserver_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/sim/simtest"
)

// TestListenOnPortZeroPicksAFreePort: "HOST:0" means a free port, as it
// does to net.Listen, not NATS's default 4222. Two servers asked for port
// 0 both start, on ports of their own, and a network client reaches each.
func TestListenOnPortZeroPicksAFreePort(t *testing.T) {
	var urls []string
	for range 2 {
		s, err := natsserver.Start(natsserver.Options{Listen: "127.0.0.1:0", Ready: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		u := s.ClientURL()
		if !strings.HasPrefix(u, "nats://127.0.0.1:") || strings.HasSuffix(u, ":0") || strings.HasSuffix(u, ":4222") {
			t.Fatalf("client URL %q: want a free port of 127.0.0.1", u)
		}
		nc, err := nats.Connect(u, nats.Timeout(5*time.Second))
		if err != nil {
			t.Fatalf("connect to %s: %v", u, err)
		}
		nc.Close()
		urls = append(urls, u)
	}
	if urls[0] == urls[1] {
		t.Fatalf("both servers at %s", urls[0])
	}
}

// A port already taken is reported at once with the reason, where the
// start waited its 10 seconds and said only that it did not start.
func TestStartSaysWhyItCannotListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv, err := natsserver.Start(natsserver.Options{Listen: l.Addr().String(), Ready: 2 * time.Minute})
	if err == nil {
		srv.Shutdown()
		t.Fatalf("started on %s, which another listener holds", l.Addr())
	}
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("the error does not say why: %v", err)
	}
}

// A server started with OpenLater takes no network client until Open; a
// responder subscribed in-process before Open answers the first request a
// network client makes once it is open.
func TestOpenLaterKeepsThePortClosedUntilOpen(t *testing.T) {
	addr := simtest.FreeAddr(t)
	s, err := natsserver.Start(natsserver.Options{Listen: addr, OpenLater: true, Ready: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	if u := s.ClientURL(); u != "" {
		t.Fatalf("client URL before Open: got %q, want none", u)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s took a connection before Open", addr)
	}
	in, err := s.Connect("responder")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := in.Subscribe("ask", func(m *nats.Msg) { _ = m.Respond([]byte("here")) }); err != nil {
		t.Fatal(err)
	}
	if err := in.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	if u := s.ClientURL(); u != "nats://"+addr {
		t.Fatalf("client URL after Open: got %q, want nats://%s", u, addr)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect after Open: %v", err)
	}
	defer nc.Close()
	msg, err := nc.Request("ask", nil, 5*time.Second)
	if err != nil || string(msg.Data) != "here" {
		t.Fatalf("first request after Open: got %v, %v; want the answer %q", msg, err, "here")
	}
	if err := s.Open(); err != nil {
		t.Fatalf("Open again: %v; want nothing done", err)
	}
}

// Open says why it cannot take its port, as Start does.
func TestOpenSaysWhyItCannotListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := natsserver.Start(natsserver.Options{Listen: l.Addr().String(), OpenLater: true, Ready: 3 * time.Second})
	if err != nil {
		t.Fatalf("start with the port closed: %v", err)
	}
	t.Cleanup(s.Shutdown)
	err = s.Open()
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("Open on a port another listener holds: got %v, want the reason", err)
	}
}
