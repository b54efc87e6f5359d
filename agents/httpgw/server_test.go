package httpgw_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
)

// serveHardened serves h the way corpsim serve does: NewServer behind a
// LimitListener, on a loopback port. It returns the address.
func serveHardened(tb testing.TB, h http.Handler, o httpgw.ServerOptions) (string, interface{ Open() int }) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := httpgw.NewServer(h, o)
	ll := httpgw.LimitListener(l, o.MaxConns, nil)
	go func() { _ = srv.Serve(ll) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String(), ll.(interface{ Open() int })
}

// rawRequest writes a whole request on a new connection before it reads
// anything (as Python's http.client and many other clients do), then
// returns the status line of the answer.
func rawRequest(tb testing.TB, addr, method, path, token string, body []byte) string {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, token, len(body))
	if _, err := io.Copy(c, io.MultiReader(strings.NewReader(head), bytes.NewReader(body))); err != nil {
		tb.Fatalf("sending %d bytes: %v (the server closed the connection before reading the body)", len(body), err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		tb.Fatalf("reading the answer: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestHTTPHygiene: IDs in paths are checked before they reach NATS,
// oversized bodies are answered 413 (not a reset connection), and the
// server holds a bounded number of connections, answering one more with
// 503, and drops idle ones.
func TestHTTPHygiene(t *testing.T) {
	s := startStack(t, httpgw.Config{MaxRequestBytes: 1 << 20})
	addr, open := serveHardened(t, s.gw.Handler(), httpgw.ServerOptions{MaxConns: 4, IdleTimeout: 300 * time.Millisecond})

	t.Run("session IDs in paths", func(t *testing.T) {
		for _, path := range []string{"/v1/sessions/a.b.c/score", "/v1/sessions/a%20b/score", "/v1/sessions/a*b/events", "/v1/sessions/" + strings.Repeat("x", 65) + "/score"} {
			start := time.Now()
			if got := rawRequest(t, addr, "GET", path, s.operator, nil); got != "HTTP/1.1 400 Bad Request" {
				t.Errorf("GET %s: got %q, want 400", path, got)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Logf("GET %s took %s (refused before NATS: expect milliseconds)", path, d)
			}
		}
		if got := rawRequest(t, addr, "POST", "/v1/sessions/a.b/control", s.operator, []byte(`{"stop":true}`)); got != "HTTP/1.1 400 Bad Request" {
			t.Errorf("control of a.b: got %q, want 400", got)
		}
	})

	t.Run("oversized bodies", func(t *testing.T) {
		big := bytes.Repeat([]byte{' '}, 10<<20)
		if got := rawRequest(t, addr, "POST", "/v1/sessions", s.operator, big); got != "HTTP/1.1 413 Request Entity Too Large" {
			t.Errorf("a 10 MB create: got %q, want 413", got)
		}
		reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "remote"})
		seat := reply.Seats["alice"]
		if got := rawRequest(t, addr, "POST", seatPath(reply.Session, seat.Member, "act"), seat.Token, big); got != "HTTP/1.1 413 Request Entity Too Large" {
			t.Errorf("a 10 MB act: got %q, want 413", got)
		}
	})

	t.Run("connection limit and idle timeout", func(t *testing.T) {
		for deadline := time.Now().Add(30 * time.Second); open.Open() > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still open after the subtests above closed theirs", open.Open())
			}
		}
		var held []net.Conn
		for i := 0; i < 4; i++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			held = append(held, c)
		}
		// A fifth connection is refused with an answer, not left hanging.
		if got := rawRequest(t, addr, "GET", "/v1/health", "", nil); got != "HTTP/1.1 503 Service Unavailable" {
			t.Errorf("a fifth connection: got %q, want 503", got)
		}
		// Idle connections are closed by the server; their places free up.
		for _, c := range held {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("an idle connection was answered, want it closed")
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("an idle connection was held for 30s: %v", err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := rawRequest(t, addr, "GET", "/v1/health", "", nil)
			if got == "HTTP/1.1 200 OK" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the idle connections closed: got %q, want 200", got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestServerOptionsValidate(t *testing.T) {
	if err := (httpgw.ServerOptions{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
	if err := (httpgw.ServerOptions{MaxConns: -1}).Validate(); err == nil {
		t.Error("a negative connection limit: no error")
	}
}

// TestLimitRefusalWithGoClient: net/http's own client, meeting a server at
// its connection limit, gets the 503 with its reason and Retry-After, for a
// GET and for a POST with a body, and logs nothing: not "Unsolicited
// response received on idle HTTP channel" (an answer sent before the
// request was read), not a reset connection (a request body left unread).
func TestLimitRefusalWithGoClient(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr, open := serveHardened(t, h, httpgw.ServerOptions{MaxConns: 1, ReadHeaderTimeout: time.Minute})
	held, err := net.Dial("tcp", addr) // the one connection the server holds
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for deadline := time.Now().Add(30 * time.Second); open.Open() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d connections, want 1", open.Open())
		}
	}
	body := bytes.Repeat([]byte("x"), 256<<10)
	for i := range 20 {
		// The request leaves a moment after the connection is made, as
		// it does from a client further away than the loopback.
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			time.Sleep(20 * time.Millisecond)
			return c, err
		}
		c := &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if i%2 == 1 {
			req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("%s %d: %v, want the 503", req.Method, i, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.CloseIdleConnections()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			!strings.Contains(string(b), "limit of 1 connections") {
			t.Fatalf("%s %d: %s %q (Retry-After %q), want 503 naming the limit", req.Method, i, resp.Status, b, resp.Header.Get("Retry-After"))
		}
	}
	if logged.Len() > 0 {
		t.Errorf("the client logged:\n%s", logged.String())
	}
}

// Request bodies held at once are bounded (BodyBudget): while slow clients
// hold bodies that fill it, one more is answered 503 with Retry-After
// before its body is read; once they are done, it is taken. A request
// with no body is never held back.
func TestBodyBudget(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	})
	addr, _ := serveHardened(t, h, httpgw.ServerOptions{BodyBudget: 1 << 20, MaxBodyBytes: 1 << 20})
	// Two slow clients declare 700 KiB and 324 KiB (the whole budget), and
	// send a byte.
	var slow []net.Conn
	for _, n := range []int{700 << 10, 324 << 10} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nx", n)
		slow = append(slow, c)
	}
	time.Sleep(200 * time.Millisecond) // their handlers hold their bodies' budget
	if got := rawRequest(t, addr, "POST", "/x", "", []byte("hello")); !strings.Contains(got, "503") {
		t.Fatalf("a body while the budget is held: %q; want 503", got)
	}
	if got := rawRequest(t, addr, "GET", "/x", "", nil); !strings.Contains(got, "200") {
		t.Fatalf("a request with no body: %q; want 200", got)
	}
	for _, c := range slow {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rawRequest(t, addr, "POST", "/x", "", []byte("hello"))
		if strings.Contains(got, "200") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a body once the slow clients left: %q; want 200", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holding reads each request's body and answers its length; a request
// to /open/x (a slow body, held) says on started that its handler took it.
func holding(started chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/open/x" {
			started <- struct{}{}
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	})
}

// The open routes' bodies (Open: routes anyone may send a body to) are
// held in a budget of their own: strangers filling it with slow bodies
// hold back the open routes' bodies only, not the others'.
func TestOpenBodyBudget(t *testing.T) {
	started := make(chan struct{}, 2)
	h := holding(started)
	addr, _ := serveHardened(t, h, httpgw.ServerOptions{BodyBudget: 4 << 20, OpenBodyBudget: 1 << 20, MaxBodyBytes: 1 << 20,
		Open: func(r *http.Request) (int64, bool) { return 1 << 20, strings.HasPrefix(r.URL.Path, "/open/") }})
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /open/x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nx", 512<<10)
	}
	<-started
	<-started // their handlers hold the open budget
	if got := rawRequest(t, addr, "POST", "/open/y", "", []byte("hello")); !strings.Contains(got, "503") {
		t.Fatalf("an open route's body while its budget is held: %q; want 503", got)
	}
	if got := rawRequest(t, addr, "POST", "/x", "", []byte("hello")); !strings.Contains(got, "200") {
		t.Fatalf("another route's body while the open budget is held: %q; want 200", got)
	}
}

// A body of unknown length (chunked) to an open route counts for that
// route's limit, not for the largest any route takes: three held to a
// route of 256 KiB leave room in a budget of 1 MiB, a fourth fills it.
func TestOpenBodyBudgetChunked(t *testing.T) {
	started := make(chan struct{}, 4)
	h := holding(started)
	addr, _ := serveHardened(t, h, httpgw.ServerOptions{BodyBudget: 4 << 20, OpenBodyBudget: 1 << 20, MaxBodyBytes: 4 << 20,
		Open: func(r *http.Request) (int64, bool) { return 256 << 10, strings.HasPrefix(r.URL.Path, "/open/") }})
	hold := func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /open/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n")
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("a chunked body to the open route was never taken (refused for the budget?)")
		}
	}
	for range 3 {
		hold()
	}
	if got := rawRequest(t, addr, "POST", "/open/y", "", []byte("hello")); !strings.Contains(got, "200") {
		t.Fatalf("a body beside three chunked ones of a 256 KiB route, in a budget of 1 MiB: %q; want 200", got)
	}
	hold()
	if got := rawRequest(t, addr, "POST", "/open/y", "", []byte("hello")); !strings.Contains(got, "503") {
		t.Fatalf("a body beside four chunked ones: %q; want 503", got)
	}
}
