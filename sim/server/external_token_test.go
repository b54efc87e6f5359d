package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/simtest"
)

// A serve on an external NATS server makes no DATA/operator.token: its
// operator token is the external server's (--nats-token), as the README
// says. It made one anyway, which nothing used, and a sessions --nats URL
// --data DIR then presented that file's token to the external server.
func TestServeOnAnExternalServerMakesNoOperatorToken(t *testing.T) {
	ext, err := natsserver.Start(natsserver.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Shutdown()
	data := t.TempDir()
	var out simtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeOptions{NATS: ext.ClientURL(), Data: data, MaxMessage: DefaultMaxMessage, MaxSessions: DefaultMaxSessions,
			MaxSeats: DefaultMaxSeats, KeepEnded: DefaultKeepEnded, ShutdownGrace: 5 * time.Second, Stdout: &out})
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "serving") {
		select {
		case err := <-served:
			t.Fatalf("serve returned %v before it served; it said %q", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start in a minute; it said %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(data, app.OperatorTokenFile)); err == nil {
		t.Errorf("serve --nats made %s; an external server's token is its own", app.OperatorTokenFile)
	}
	if tok := app.ReadOperatorToken(data); tok != "" {
		t.Errorf("the data folder offers operator token %q to sessions --nats; want none", tok)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
