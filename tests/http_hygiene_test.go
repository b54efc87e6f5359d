package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// healthOn sends GET /v1/health on c (keep-alive) and returns the status.
func healthOn(c net.Conn, r *bufio.Reader) (int, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprint(c, "GET /v1/health HTTP/1.1\r\nHost: corpsim\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedWithin reports whether the server closes c (a read ends) within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestHTTPIdleAndSlowClients: a real serve --http with a small connection
// limit. 20 keep-alive clients that go idle take the limit's places and
// the rest are answered 503 at once; the idle ones are closed after the
// idle timeout, so the operator's request is answered; a client that
// sends its body a byte at a time is cut at the read timeout.
func TestHTTPIdleAndSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	haddr := freeAddr(t)
	const limit = 4
	sp := startServe(t, t.TempDir(), "--http", haddr, "--http-max-conns", fmt.Sprint(limit),
		"--http-idle-timeout", "1s", "--http-read-timeout", "2s")

	var held []net.Conn
	refused := 0
	for range 20 {
		c, err := net.Dial("tcp", haddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		code, err := healthOn(c, bufio.NewReader(c))
		switch {
		case err != nil:
			t.Fatalf("an idle client's first request: %v", err)
		case code == http.StatusServiceUnavailable:
			refused++
		case code == http.StatusOK:
			held = append(held, c)
		default:
			t.Fatalf("an idle client's first request: %d", code)
		}
	}
	if len(held) != limit || refused != 20-limit {
		t.Fatalf("%d connections held and %d refused, want %d and %d", len(held), refused, limit, 20-limit)
	}
	// The operator, while the idle clients hold every place: answered once
	// they are closed, after the idle timeout (1s), not never.
	start := time.Now()
	var answered time.Duration
	for time.Since(start) < 20*time.Second {
		// A connection of its own for each try, as a client that was
		// refused makes (the refusal closes the connection).
		if c, err := net.Dial("tcp", haddr); err == nil {
			code, err := healthOn(c, bufio.NewReader(c))
			c.Close()
			if err == nil && code == http.StatusOK {
				answered = time.Since(start)
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if answered == 0 {
		t.Fatalf("the operator's request was not answered within 20s while %d idle connections were open\n%s", limit, sp.stderr.String())
	}
	for i, c := range held {
		if !closedWithin(c, 3*time.Second) {
			t.Errorf("idle connection %d was not closed by the server", i)
		}
	}
	t.Logf("%d idle connections held, %d refused with 503; the operator answered after %v", limit, refused, answered.Round(time.Millisecond))

	// A slow body: headers at once, then a byte every 100ms of a body that
	// would take hours.
	c, err := net.Dial("tcp", haddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	token := strings.TrimSpace(string(mustRead(t, filepath.Join(sp.data, "operator.token"))))
	fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: corpsim\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", token)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	start = time.Now()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	b, err := io.ReadAll(c)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a client sending its body a byte at a time was not cut within 15s (read timeout 2s); got %q", b)
	}
	if took < time.Second {
		t.Errorf("the slow client was cut after %v, before the read timeout", took)
	}
	first, _, _ := strings.Cut(string(b), "\r\n")
	t.Logf("slow body cut after %v: %q", took.Round(time.Millisecond), first)
	sp.stop(t, 30*time.Second)
}
