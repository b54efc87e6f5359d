package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/mcpseat"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/nemogym"
	"github.com/corpsim/corpsim/agents/openenv"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/live"
	"github.com/corpsim/corpsim/sim/server/metrics"
	"github.com/corpsim/corpsim/worlds"
)

// ServeOptions configure Serve: one corpsim serve process.
type ServeOptions struct {
	Listen          string
	NATS            string // external server URL; "" runs an embedded one
	NATSToken       string
	HTTP            string // address of the HTTP/JSON gateway; "" for none
	Data            string
	Ephemeral       bool
	OperatorToken   string // "" reads or makes DATA/operator.token
	TurnTimeout     time.Duration
	JoinTimeout     time.Duration
	MaxSessions     int
	MaxSeats        int           // seats of one session
	KeepEnded       int           // ended sessions whose records are kept (Config.KeepEnded)
	MaxWorldMemory  int64         // bytes of the running sessions' worlds (0: DefaultMaxWorldMemory)
	MaxMessage      int64         // bytes: NATS max_payload and the HTTP gateway's request bodies
	Metrics         string        // address of the /metrics listener; "" for none
	ShutdownGrace   time.Duration // how long running sessions may take to stop once ctx is done
	CheckpointEvery int
	MaxEvents       int // events one session may append (0: sim.DefaultMaxEvents)
	// Worker, if set, runs serve as one worker of a cluster (needs NATS):
	// see Worker.
	Worker   string
	Replicas int           // of the log stream and buckets in worker mode; 0: 3 if possible, else 1
	LeaseTTL time.Duration // worker mode: how long a dead worker's sessions wait before another adopts them
	// HTTPMaxConns, HTTPIdleTimeout and HTTPReadTimeout bound the clients
	// of the HTTP gateway and the metrics listener (0: httpgw's defaults:
	// 1024 connections, 1m idle, 1m to read a request).
	HTTPMaxConns    int
	HTTPIdleTimeout time.Duration
	HTTPReadTimeout time.Duration
	// NoLive turns off the live view (/live/ on the --http listener).
	NoLive bool
	// Secret keys the draws of the sessions this server creates
	// (Config.Secret); nil draws from their seeds alone.
	Secret []byte
	// NoMCP leaves the MCP server (/mcp, package mcpseat) off the --http
	// listener (--mcp=false).
	NoMCP bool
	// NoNemo leaves the NeMo Gym resources-server routes (/nemo/…,
	// package nemogym) off the --http listener (--nemo=false).
	NoNemo bool
	// NemoListen, when set, also serves the NeMo Gym routes at the root of
	// a listener of their own (http://ADDR/seed_session, …), as NeMo Gym's
	// clients address a resources server: without a path prefix.
	NemoListen string
	// NemoMaxSessions bounds the NeMo Gym sessions held at once (0: half
	// of MaxSessions). Its routes take no token (NeMo Gym's clients send
	// none), so anyone who reaches them can seed sessions: below
	// MaxSessions, it keeps the rest of the server's capacity for the
	// authenticated seats.
	NemoMaxSessions int
	// NemoDiscard deletes a NeMo Gym session's log once the adapter drops
	// it (nemogym.Config.Discard).
	NemoDiscard bool
	// NoOpenEnv leaves the OpenEnv routes (/openenv/…, package openenv) off
	// the --http listener (--openenv=false); OpenEnvIdleTimeout closes an
	// OpenEnv connection idle that long (0: 10m).
	NoOpenEnv          bool
	OpenEnvIdleTimeout time.Duration
	// OpenEnvWorld is the shipped world an OpenEnv reset that names none
	// plays (openenv.Config.DefaultWorld; --openenv-world).
	OpenEnvWorld string
	// WorldLimits bound every create request's world and load (zero
	// fields: the defaults).
	WorldLimits worlds.Limits
	// LLM plays the seats a create request gives to "llm"; nil refuses them.
	LLM    agents.Agent
	Logger hclog.Logger // nil: silent
	Stdout io.Writer    // where Serve says what it serves and what it resumed; nil: nowhere
}

// StateFileName is serve's record, in the data folder, of the sessions it
// runs and their remote seats' tokens (mode 0600), for a restart.
const StateFileName = "serve-state.json"

// DefaultMaxMessage is ServeOptions.MaxMessage by default: the embedded
// NATS server's own default.
const DefaultMaxMessage = natsserver.DefaultMaxPayload

// MinMessage is the smallest MaxMessage: observations and pages of
// history the server sends must fit in a message.
const MinMessage = 1 << 20

// Serve runs corpsim serve until ctx is done: the log in o.Data, an
// embedded NATS server on o.Listen (or the external o.NATS), the service
// (or a worker of a cluster), and the HTTP gateway and metrics listener if
// asked for. Started again on the same data, it resumes the sessions a
// previous Serve left. Once ctx is done it stops taking sessions, lets the
// running ones finish their batch (up to o.ShutdownGrace) and returns nil.
func Serve(ctx context.Context, o ServeOptions) error {
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	out := o.Stdout
	if out == nil {
		out = io.Discard
	}
	// The server's own messages (observations, pages of history) must fit.
	if o.MaxMessage < MinMessage || o.MaxMessage > 64<<20 {
		return app.Usagef("--max-message must be between %d (1 MiB) and %d (64 MiB) bytes", MinMessage, 64<<20)
	}
	if o.MaxSessions <= 0 || o.MaxSeats <= 0 || o.MaxWorldMemory < 0 || o.KeepEnded < 0 {
		return app.Usagef("--max-sessions, --max-seats, --max-world-memory and --keep-ended must be positive")
	}
	if o.NemoDiscard && o.Worker != "" {
		return app.Usagef("--nemo-discard deletes sessions from this server's log, and a worker of a cluster deletes none (the log is the cluster's)")
	}
	if o.NemoMaxSessions < 0 || o.NemoMaxSessions > o.MaxSessions {
		return app.Usagef("--nemo-max-sessions %d: between 1 and --max-sessions (%d), or 0 for half of --max-sessions", o.NemoMaxSessions, o.MaxSessions)
	}
	if err := app.CheckMaxEvents(o.MaxEvents); err != nil {
		return err
	}
	if o.NemoListen != "" && (o.HTTP == "" || o.NoNemo) {
		return app.Usagef("--nemo-listen serves the NeMo Gym routes of the --http gateway: it needs --http, and --nemo")
	}
	if o.HTTPMaxConns < 0 || o.HTTPIdleTimeout < 0 || o.HTTPReadTimeout < 0 || o.OpenEnvIdleTimeout < 0 {
		return app.Usagef("--http-max-conns, --http-idle-timeout, --http-read-timeout and --openenv-idle-timeout may not be negative")
	}
	if err := o.WorldLimits.Validate(); err != nil {
		return &app.UsageError{Msg: err.Error(), Err: err}
	}
	if o.OpenEnvWorld != "" {
		if o.HTTP == "" || o.NoOpenEnv {
			return app.Usagef("--openenv-world is the OpenEnv routes' default world: it needs --http, and --openenv")
		}
		if _, err := worlds.Shipped(o.OpenEnvWorld); err != nil {
			return app.Usagef("--openenv-world %q: %v", o.OpenEnvWorld, err)
		}
	}
	if o.Worker != "" && (o.NATS == "" || o.Ephemeral) {
		return app.Usagef("--worker needs --nats URL (the cluster) and a --data folder of its own (not --ephemeral)")
	}
	if o.HTTP != "" && o.NATS != "" && o.OperatorToken == "" && o.NATSToken == "" {
		// No DATA/operator.token is made for an external server, and the
		// gateway's operator endpoints must not be open to all.
		return app.Usagef("--http with --nats needs --operator-token T: the bearer token of the gateway's operator endpoints, also presented to the NATS server (with --nats-token, give the same)")
	}
	// The flags are checked: a usage error leaves nothing behind.
	tokenFile := ""
	if o.OperatorToken == "" && o.NATS == "" {
		// The embedded server's token; an external server's is its own
		// (--nats-token, below): no file is made for it.
		tokenFile = filepath.Join(o.Data, app.OperatorTokenFile)
		tok, err := app.OperatorToken(o.Data, false)
		if err != nil {
			return err
		}
		o.OperatorToken = tok
	}
	store, err := app.OpenLog(ctx, o.Data, o.Ephemeral, log)
	if err != nil {
		return err
	}
	defer store.Close()
	var bus Bus
	var embedded *natsserver.Server // nil with an external server
	var auth *natsserver.Auth
	url := o.NATS
	if o.NATS == "" {
		auth = natsserver.NewAuth(o.OperatorToken)
		if !o.Ephemeral {
			// Admitted before the server listens: remote agents of the
			// sessions a previous serve left reconnect as they were.
			seats, err := SavedSeats(filepath.Join(o.Data, StateFileName))
			if err != nil {
				return err
			}
			for _, seat := range seats {
				auth.RestoreSeat(seat)
			}
		}
		// Its port opens once the service has subscribed its responders
		// (Open, below): a client that reached it before them (a
		// sessions --nats, a create) was told "no responders".
		embedded, err = natsserver.Start(natsserver.Options{Listen: o.Listen, Auth: auth, Logger: log, MaxPayload: int(o.MaxMessage), OpenLater: true})
		if err != nil {
			return err
		}
		defer embedded.Shutdown()
		bus = embedded
	} else {
		// An external server or cluster: its configuration decides who
		// may do what; corpsim presents --nats-token if given.
		ext := natsserver.External{URL: o.NATS, Token: o.NATSToken}
		probe, err := ext.Connect("corpsim-probe")
		if err != nil {
			return err
		}
		probe.Close()
		bus = ext
		if o.OperatorToken == "" {
			o.OperatorToken = o.NATSToken
		}
	}
	stateFile := ""
	if !o.Ephemeral && o.Worker == "" {
		stateFile = filepath.Join(o.Data, StateFileName)
	}
	// The service's gauges are read at scrape time, so the metrics
	// exist before the service they describe.
	var svc *Service
	var m *metrics.Metrics
	var observer driver.Observer
	if o.Metrics != "" || o.HTTP != "" {
		m = metrics.New(func() (map[string]int, map[string]int) { return svc.Counts() })
		observer = m
	}
	var hub *live.Hub
	if o.HTTP != "" && !o.NoLive {
		hub = live.NewHub()
		observer = live.Observers{m, hub}
	}
	svcCfg := Config{Log: store, Bus: bus, Auth: auth, Logger: log, TurnTimeout: o.TurnTimeout, Secret: o.Secret,
		JoinTimeout: o.JoinTimeout, MaxSessions: o.MaxSessions, MaxSeats: o.MaxSeats, KeepEnded: o.KeepEnded, MaxWorldMemory: o.MaxWorldMemory, WorldLimits: o.WorldLimits, CheckpointEvery: o.CheckpointEvery, MaxEvents: o.MaxEvents,
		LLM: o.LLM, Observer: observer, StateFile: stateFile}
	var worker *Worker
	if o.Worker != "" {
		// No reconnect buffer on the replication connection: a publish
		// made while it reconnects must fail (and be retried from the
		// stream's tip), not be sent later after an event that was
		// lost with the old server, which would leave a hole.
		wc, err := bus.Connect("corpsim-worker-"+o.Worker, nats.ReconnectBufSize(-1))
		if err != nil {
			return err
		}
		defer wc.Close()
		worker, err = NewWorker(ctx, WorkerConfig{Name: o.Worker, Conn: wc, Replicas: o.Replicas,
			LeaseTTL: o.LeaseTTL}, svcCfg)
		if err != nil {
			return err
		}
		svc = worker.Service()
	} else if svc, err = New(svcCfg); err != nil {
		return err
	}
	defer svc.Close()
	// New returns once the server has the service's subscriptions (it
	// flushes): the embedded server's port opens now.
	if embedded != nil {
		if err := embedded.Open(); err != nil {
			return err
		}
		url = embedded.ClientURL()
	}
	if !o.Ephemeral {
		if err := app.WriteBusURL(o.Data, url); err != nil {
			return err
		}
		defer app.RemoveBusURL(o.Data)
	}
	if o.Metrics != "" {
		stop, err := serveMetrics(o, m, out, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	resume := func() {
		if worker != nil {
			// A worker resumes nothing from its own folder: the sessions
			// of a dead worker are adopted from the stream by any worker.
			return
		}
		resumed, err := svc.ResumeSaved(ctx)
		if err != nil {
			log.Error("some sessions could not be resumed", "error", err)
			for _, e := range unjoin(err) {
				fmt.Fprintf(out, "corpsim did not resume %v\n", e)
			}
		}
		if len(resumed) > 0 {
			fmt.Fprintf(out, "corpsim resumed %d session(s): %s\n", len(resumed), strings.Join(resumed, " "))
		}
	}
	endConnSessions := func() {}
	if o.HTTP != "" {
		// The gateway takes back the seats of the resumed sessions
		// before it takes requests, so that their clients' tokens
		// work from the first request.
		stop, endSessions, err := serveHTTP(o, url, m, liveLog{Log: store, svc: svc}, hub, out, log, func(gw *httpgw.Gateway) {
			resume()
			if worker == nil {
				adoptHTTPSeats(ctx, gw, svc, out, log)
			}
		})
		if err != nil {
			return err
		}
		defer stop()
		endConnSessions = endSessions
	} else {
		resume()
	}
	where := "given with --operator-token"
	if tokenFile != "" {
		where = "in " + tokenFile
	}
	if o.NATS != "" {
		where = "that of the external server (--nats-token)"
	}
	if worker != nil {
		fmt.Fprintf(out, "corpsim worker %s serving on %s (queue group %s); stop with Ctrl-C\n", o.Worker, url, WorkerQueue)
	} else {
		fmt.Fprintf(out, "corpsim serving on %s (operator token %s); stop with Ctrl-C\n", url, where)
	}
	log.Info("serving", "nats", url)
	<-ctx.Done()
	endConnSessions() // OpenEnv and NeMo Gym sessions end with their connections or cookies: nothing would play them after a restart
	log.Info("shutting down: not taking new sessions; running sessions stop after their current batch and are resumed by the next serve on this data",
		"grace", o.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownGrace)
	defer cancel()
	shutdown := svc.Shutdown
	if worker != nil {
		shutdown = worker.Shutdown // also releases the leases: other workers adopt the sessions at once
	}
	if err := shutdown(sctx); err != nil {
		log.Warn("running turns were cancelled after the grace period; their sessions resume from their last durable batch", "error", err)
	}
	if saved := svc.Saved(); len(saved) > 0 {
		fmt.Fprintf(out, "corpsim stopped; %d session(s) interrupted, resumed by the next corpsim serve --data %s: %s\n",
			len(saved), o.Data, strings.Join(saved, " "))
	} else {
		fmt.Fprintln(out, "corpsim stopped")
	}
	if gone := svc.Discarded(); len(gone) > 0 {
		fmt.Fprintf(out, "%d session(s) created with wait and never started were discarded (nothing of them was logged): %s\n",
			len(gone), strings.Join(gone, " "))
	}
	return nil
}

// unjoin returns the errors errors.Join joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// serveHTTP starts the HTTP/JSON gateway on o.HTTP, bridging to the NATS
// server at natsURL; before is called with the gateway before it listens.
// The returned stop ends its long polls, shuts the HTTP server down and
// closes the gateway.
func serveHTTP(o ServeOptions, natsURL string, m *metrics.Metrics, store live.Log, hub *live.Hub, out io.Writer, log hclog.Logger, before func(*httpgw.Gateway)) (stop, endSessions func(), err error) {
	if natsURL == "" {
		return nil, nil, app.Usagef("--http needs the NATS server to listen (--listen ADDR)")
	}
	gw, err := httpgw.New(httpgw.Config{NATSURL: natsURL, OperatorToken: o.OperatorToken,
		Logger: log.Named("http"), TurnWait: o.TurnTimeout, MaxRequestBytes: o.MaxMessage})
	if err != nil {
		return nil, nil, err
	}
	var lv *live.Server
	if hub != nil {
		if lv, err = live.New(store, hub, live.Config{OperatorToken: o.OperatorToken, Logger: log.Named("live")}); err != nil {
			gw.Close()
			return nil, nil, err
		}
	}
	before(gw)
	ln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		gw.Close()
		return nil, nil, fmt.Errorf("--http: %w", err)
	}
	mux := http.NewServeMux()
	if m != nil {
		mux.Handle("/metrics", m.Handler())
	}
	mux.Handle("/", gw.Handler())
	closeAdapters, endSessions, open, err := mountAdapters(mux, gw, o, m, out, log)
	if err != nil {
		_ = ln.Close()
		gw.Close()
		return nil, nil, err
	}
	if lv != nil {
		mux.Handle("/live/", lv.Handler())
		prev := closeAdapters
		closeAdapters = func() { lv.Close(); prev() }
	}
	srv, ln := httpServer(o, mux, ln, log.Named("http"), open)
	// Every address is printed, in one write, before the first request is
	// served (the listener is bound: connections wait in its backlog), so
	// a script that reads them once the gateway answers finds them all.
	var addrs bytes.Buffer
	fmt.Fprintf(&addrs, "corpsim HTTP gateway on http://%s/v1\n", ln.Addr())
	if lv != nil {
		fmt.Fprintf(&addrs, "corpsim live view on http://%s/live/ (open /live/?token=OPERATOR_TOKEN once)\n", ln.Addr())
	}
	if !o.NoMCP {
		fmt.Fprintf(&addrs, "corpsim MCP server on http://%s%s (a seat token as the bearer token picks the seat)\n", ln.Addr(), mcpseat.Path)
	}
	if !o.NoNemo {
		fmt.Fprintf(&addrs, "corpsim NeMo Gym resources server on http://%s/nemo\n", ln.Addr())
	}
	if !o.NoOpenEnv {
		fmt.Fprintf(&addrs, "corpsim OpenEnv environment on http://%s/openenv (WebSocket ws://%[1]s/openenv/ws)\n", ln.Addr())
	}
	if _, err := out.Write(addrs.Bytes()); err != nil {
		log.Warn("cannot print the addresses", "error", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP gateway stopped", "error", err)
		}
	}()
	log.Info("serving HTTP", "addr", ln.Addr().String())
	return func() {
		closeAdapters() // ends the adapters' connections (WebSockets, MCP streams) first
		gw.Close()      // ends long polls and steps first, so that Shutdown need not wait for them
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("HTTP gateway did not shut down cleanly", "error", err)
			_ = srv.Close()
		}
		<-done
	}, endSessions, nil
}

// mountAdapters mounts the protocol adapters (OpenEnv, MCP, NeMo Gym) on
// the --http listener's mux, each over the gateway's operations, unless its
// flag turns it off. The returned function closes them.
//
// endSessions stops the sessions that belong to an adapter's connections
// or cookies (OpenEnv: one environment per WebSocket; NeMo Gym: sessions
// named by cookies this process alone knows): serve calls it before it shuts the service down, so that a
// restart does not resume sessions no connection controls any more. open
// tells the requests of the routes that take bodies from anyone (NeMo
// Gym's), for the server's budget of bodies (httpgw.ServerOptions.Open).
func mountAdapters(mux *http.ServeMux, gw *httpgw.Gateway, o ServeOptions, m *metrics.Metrics, out io.Writer, log hclog.Logger) (closeAll, endSessions func(), open func(*http.Request) (int64, bool), err error) {
	var closers []func()
	endSessions = func() {}
	closeAll = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	if !o.NoOpenEnv {
		oe := openenv.New(gw, openenv.Config{Logger: log.Named("openenv"), Recorder: m.Adapter("openenv"),
			MaxMessageBytes: o.MaxMessage, IdleTimeout: o.OpenEnvIdleTimeout, DefaultWorld: o.OpenEnvWorld})
		mux.Handle("/openenv/", oe.Handler())
		closers = append(closers, oe.Close)
		endOpenEnv := endSessions
		endSessions = func() { endOpenEnv(); oe.Close() } // idempotent: closeAll calls it again
	}
	var mcp nemogym.MCPServer // the MCP server, which the NeMo Gym routes also offer
	if !o.NoMCP {
		srv := mcpseat.New(gw, mcpseat.Config{Logger: log.Named("mcp"), MaxRequestBytes: o.MaxMessage, Recorder: m.Adapter("mcp")})
		mcp = srv
		mux.Handle(mcpseat.Path, srv)
		closers = append(closers, srv.Close)
	}
	if !o.NoNemo {
		nemoMax := o.NemoMaxSessions
		if nemoMax == 0 {
			// Its routes take no token: by default strangers who reach
			// them hold at most half the sessions, and the authenticated
			// seats keep the rest.
			nemoMax = max(1, o.MaxSessions/2)
		}
		ng := nemogym.New(gw, nemogym.Config{Logger: log.Named("nemo"), Recorder: m.Adapter("nemo"),
			MaxSessions: nemoMax, MaxBodyBytes: o.MaxMessage, TurnWait: o.TurnTimeout, OperatorToken: o.OperatorToken,
			Discard: o.NemoDiscard, MCP: mcp})
		mux.Handle("/nemo/", ng.Handler())
		open = func(r *http.Request) (int64, bool) {
			if !strings.HasPrefix(r.URL.Path, "/nemo/") {
				return 0, false
			}
			return ng.BodyLimit(r.URL.Path), true
		}
		closers = append(closers, ng.Close)
		endOthers := endSessions
		endSessions = func() { endOthers(); ng.EndSessions() }
		if o.NemoListen != "" {
			ln, err := net.Listen("tcp", o.NemoListen)
			if err != nil {
				closeAll()
				return nil, nil, nil, fmt.Errorf("--nemo-listen: %w", err)
			}
			// The same routes at the root: /seed_session is /nemo/seed_session.
			h := ng.Handler()
			root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r2 := r.Clone(r.Context())
				r2.URL.Path, r2.URL.RawPath = "/nemo"+r.URL.Path, ""
				h.ServeHTTP(w, r2)
			})
			srv, ln := httpServer(o, root, ln, log.Named("nemo"), func(r *http.Request) (int64, bool) { return ng.BodyLimit(r.URL.Path), true })
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("NeMo Gym listener stopped", "error", err)
				}
			}()
			fmt.Fprintf(out, "corpsim NeMo Gym resources server also on http://%s/ (no prefix)\n", ln.Addr())
			closers = append(closers, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					_ = srv.Close()
				}
				<-done
			})
		}
	}
	return closeAll, endSessions, open, nil
}

// adoptHTTPSeats gives the HTTP gateway back the remote seats it played
// for the sessions this serve resumed, so that their clients come back with
// the tokens they had. A session that cannot be adopted runs on; its
// seats' turns time out.
func adoptHTTPSeats(ctx context.Context, gw *httpgw.Gateway, svc *Service, out io.Writer, log hclog.Logger) {
	var adopted []string
	for _, saved := range svc.SeatsVia(wire.ViaHTTP) {
		turnWait, _ := time.ParseDuration(saved.TurnTimeout)
		if err := gw.Adopt(ctx, saved.Session, saved.Seats, turnWait); err != nil {
			log.Warn("the HTTP gateway cannot take back a resumed session's seats; their turns will time out", "session", saved.Session, "error", err)
			continue
		}
		adopted = append(adopted, saved.Session)
	}
	if len(adopted) > 0 {
		fmt.Fprintf(out, "corpsim HTTP gateway took back the seats of %d session(s): %s\n", len(adopted), strings.Join(adopted, " "))
	}
}

// httpServer is the HTTP server of h on ln with every timeout set and at
// most o.HTTPMaxConns connections open (one more is answered 503), so that
// idle or slow clients cannot hold the process's file descriptors.
func httpServer(o ServeOptions, h http.Handler, ln net.Listener, log hclog.Logger, open func(*http.Request) (int64, bool)) (*http.Server, net.Listener) {
	// NeMo Gym's routes take bodies from anyone (its clients send no
	// token): theirs (open) do not count against the operator's and the
	// seats'.
	so := httpgw.ServerOptions{MaxConns: o.HTTPMaxConns, IdleTimeout: o.HTTPIdleTimeout, ReadTimeout: o.HTTPReadTimeout, Logger: log,
		MaxBodyBytes: max(o.MaxMessage, nemogym.DefaultMaxVerifyBytes), Open: open}
	return httpgw.NewServer(h, so), httpgw.LimitListener(ln, o.HTTPMaxConns, log)
}

// serveMetrics serves m at http://o.Metrics/metrics until stop is called.
func serveMetrics(o ServeOptions, m *metrics.Metrics, out io.Writer, log hclog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", o.Metrics)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv, ln := httpServer(o, mux, ln, log.Named("metrics"), nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err)
		}
	}()
	fmt.Fprintf(out, "corpsim metrics on http://%s/metrics\n", ln.Addr())
	log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}

// ListCluster lists the sessions of the cluster at the NATS URL (its
// metadata bucket and log stream), with the worker holding each running
// session's lease; token, if set, is presented to the server. A corpsim
// that is no cluster of workers (serve, or run --listen, on its embedded
// server) keeps no log stream: its own list (wire.ListSubject) is asked
// instead, and only the metadata is known.
func ListCluster(ctx context.Context, url, token string) ([]ClusterSession, error) {
	// A permission refused to the stream's API is no cluster: the check
	// below stops waiting for an answer that will not come.
	denied := make(chan struct{})
	var once sync.Once
	opts := []nats.Option{nats.Name("corpsim sessions"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			once.Do(func() { close(denied) })
		}
	})}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("%w: give the operator token (--token, or --data with the server's data folder)", err)
	}
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A server without JetStream answers at once; one whose permissions
	// refuse the stream's API says so on the side (denied).
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	go func() {
		select {
		case <-denied:
			scancel()
		case <-sctx.Done():
		}
	}()
	_, serr := js.Stream(sctx, jsreplica.Stream)
	scancel()
	select {
	case <-denied:
		serr = errors.New("its JetStream API is not permitted to this user")
	default:
	}
	if serr != nil {
		metas, err := listSessions(ctx, nc)
		if err != nil && !errors.Is(err, events.ErrCorrupt) {
			return nil, fmt.Errorf("no cluster log stream (%w), and the server's list: %w", serr, err)
		}
		out := make([]ClusterSession, 0, len(metas))
		for _, m := range metas {
			out = append(out, ClusterSession{SessionMeta: m, Events: m.LastSeq, Alone: true})
		}
		return out, err // with a list that is not whole, the damage
	}
	return ClusterSessions(ctx, js)
}

// listSessions asks the corpsim at nc for its sessions' metadata. When
// the server's store could not read some (wire.DamagedHeader), it returns
// the others with an error that wraps events.ErrCorrupt and says so.
func listSessions(ctx context.Context, nc *nats.Conn) ([]events.SessionMeta, error) {
	msg, err := nc.RequestWithContext(ctx, wire.ListSubject, []byte("{}"))
	if err != nil {
		return nil, err
	}
	var metas []events.SessionMeta
	if err := json.Unmarshal(msg.Data, &metas); err != nil {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg.Data, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("the list's reply: %w", err)
	}
	if d := msg.Header.Get(wire.DamagedHeader); d != "" {
		return metas, listDamaged(d)
	}
	return metas, nil
}

// listDamaged is a server's list that is not whole: its store could not
// read some sessions' metadata (wire.DamagedHeader says what). It is
// events.ErrCorrupt, as the damage is.
type listDamaged string

func (d listDamaged) Error() string { return "the server lists only some sessions: " + string(d) }

func (d listDamaged) Is(target error) bool { return target == events.ErrCorrupt }
