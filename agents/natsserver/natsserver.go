// Package natsserver runs the process's own NATS server, the bus corpsim
// uses: embedded in the process by default, with no network port unless one
// is asked for, admitting clients through Auth (the operator token and one
// token per remote seat, each allowed only its own seat's subjects). With
// OpenLater its port opens only once the caller's responders are subscribed
// (Server.Open). It also starts the nodes of a JetStream cluster for tests
// (StartCluster), and External names a server corpsim does not run.
//
//	srv, err := natsserver.Start(natsserver.Options{})
//	defer srv.Shutdown()
//	nc, err := srv.Connect("driver")
package natsserver

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options configure the embedded server. The zero value is an in-process
// server without a listening port.
type Options struct {
	// Listen is "127.0.0.1:4222" to accept network clients, "" for
	// in-process only. Port 0 picks a free port, as net.Listen does
	// (ClientURL names it); NATS itself would take 0 for its default, 4222.
	Listen string
	// OpenLater, with Listen, starts the server with its port closed:
	// only in-process clients (Connect) reach it until Server.Open opens
	// the port. A caller whose responders network clients must find (a
	// list of sessions, a create) subscribes them in between: a client
	// that reached the port before them was told "no responders".
	OpenLater bool
	Logger    hclog.Logger  // nil: silent
	Ready     time.Duration // how long to wait for the server to start; 0 means 10s
	// Auth, if set, decides who may connect and what each may do; nil lets
	// anyone connect with full rights (in-process use, tests).
	Auth *Auth
	// MaxPayload is the largest message a client may publish, in bytes
	// (NATS max_payload: a create request with its world file, a turn's
	// reply, an observation, a page of history). A client publishing more
	// gets nats.ErrMaxPayload and the server does not see the message.
	// 0 means DefaultMaxPayload.
	MaxPayload int
}

// DefaultMaxPayload is the embedded server's largest message by default.
const DefaultMaxPayload = 8 << 20

// Server is a running embedded NATS server.
type Server struct {
	ns     *server.Server
	logger hclog.Logger
	auth   *Auth
	log    *startLog // the server's own logger: why Open could not listen
	closed bool      // started with OpenLater, and Open not called yet
}

// Start starts an embedded NATS server.
func Start(o Options) (*Server, error) {
	maxPayload := o.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	if maxPayload < 0 {
		return nil, fmt.Errorf("natsserver: negative MaxPayload %d", maxPayload)
	}
	opts := &server.Options{ServerName: "corpsim", NoSigs: true, NoLog: true, MaxPayload: int32(min(maxPayload, 1<<30))}
	// A server opened later starts without its accept loop (DontListen),
	// which Open runs on the host and port set here.
	opts.DontListen = o.Listen == "" || o.OpenLater
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, err
		}
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	if o.Auth != nil {
		opts.CustomClientAuthentication = o.Auth
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	ready := o.Ready
	if ready == 0 {
		ready = 10 * time.Second
	}
	l := &startLog{}
	if err := startServer(ns, l, ready, "embedded NATS server"); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	closed := o.Listen != "" && o.OpenLater
	logger.Debug("embedded NATS server started", "listen", o.Listen, "port_closed", closed)
	return &Server{ns: ns, logger: logger, auth: o.Auth, log: l, closed: closed}, nil
}

// Open opens the port of a server started with OpenLater: network clients
// reach it once Open returns, and find what in-process clients subscribed
// before it (and flushed: nats.Conn.Flush). A port it cannot take (one in
// use) is an error with the server's reason; the server still serves its
// in-process clients, and the caller shuts it down. Open does nothing for
// a server that is open already or does not listen. It is not safe for
// concurrent use: the goroutine that started the server calls it.
func (s *Server) Open() error {
	if !s.closed {
		return nil
	}
	s.closed = false
	s.ns.AcceptLoop(make(chan struct{})) // returns once the listener is up, or has failed
	if s.ns.Addr() == nil {
		why := s.log.failed()
		if why == "" {
			why = "the server is shutting down"
		}
		return fmt.Errorf("natsserver: embedded NATS server did not open its port: %s", why)
	}
	s.logger.Debug("embedded NATS server open", "url", s.ClientURL())
	return nil
}

// Connect opens a client connection to the embedded server, in-process.
// Its handshake may take up to InProcessTimeout (opts may say otherwise):
// there is no network to give up on, only a process busy with many
// sessions, where nats.go's default of 2 s failed ("read pipe: i/o
// timeout") for the 1,000 sessions of BenchmarkConcurrentSessions.
func (s *Server) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(name), nats.InProcessServer(s.ns), nats.Timeout(InProcessTimeout)}, opts...)
	if s.auth != nil {
		opts = append(opts, nats.Token(s.auth.Internal()))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect %s: %w", name, err)
	}
	return nc, nil
}

// InProcessTimeout bounds the handshake of a Connect.
const InProcessTimeout = 30 * time.Second

// ClientURL is the URL network clients use, or "" when the server does not
// listen (or, started with OpenLater, is not open yet).
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Interest reports whether anyone subscribes to subject.
func (s *Server) Interest(subject string) bool {
	return s.ns.GlobalAccount().SubscriptionInterest(subject)
}

// Shutdown stops the server and waits for it.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

func splitHostPort(hp string) (string, int, error) {
	var host string
	var port int
	for i := len(hp) - 1; i >= 0; i-- {
		if hp[i] == ':' {
			host = hp[:i]
			if _, err := fmt.Sscanf(hp[i+1:], "%d", &port); err != nil || port < 0 || port > 65535 {
				return "", 0, fmt.Errorf("natsserver: bad port in %q", hp)
			}
			return host, port, nil
		}
	}
	return "", 0, fmt.Errorf("natsserver: listen address %q needs host:port", hp)
}

// External is a NATS server or cluster corpsim does not run, reached by URL.
// Its own configuration decides who may connect and what each may do: the
// per-seat limits of Auth are then that server's to enforce.
type External struct {
	URL   string
	Token string // presented by corpsim's connections, if the server wants one
}

// Connect opens a client connection to the external server.
func (x External) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1)}, opts...)
	if x.Token != "" {
		opts = append(opts, nats.Token(x.Token))
	}
	nc, err := nats.Connect(x.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect %s to %s: %w", name, x.URL, err)
	}
	return nc, nil
}

// Interest cannot be known from outside the server: it says true, so
// sessions start at once (create them with wait and start them when the
// agents are connected).
func (x External) Interest(string) bool { return true }
