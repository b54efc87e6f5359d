package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/proto"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/sim/server/metrics"
)

// ServeOptions configure corpsim serve.
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
	MaxMessage      int64         // bytes: NATS max_payload and the HTTP gateway's request bodies
	Metrics         string        // address of the /metrics listener; "" for none
	ShutdownGrace   time.Duration // how long running sessions may take to stop on SIGTERM
	CheckpointEvery int
	// Worker, if set, runs serve as one worker of a cluster (needs NATS):
	// see server.Worker.
	Worker   string
	Replicas int           // of the log stream and buckets in worker mode; 0: 3 if possible, else 1
	LeaseTTL time.Duration // worker mode: how long a dead worker's sessions wait before another adopts them
}

// stateFileName is serve's record, in the data folder, of the sessions it
// runs and their remote seats' tokens (mode 0600), for a restart.
const stateFileName = "serve-state.json"

// minMessage is the smallest --max-message: observations and pages of
// history the server sends must fit in a message.
const minMessage = 1 << 20

func (a *app) serveCmd() *cobra.Command {
	o := ServeOptions{}
	var lf llmFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run an environment server: clients create sessions over NATS and remote agents play seats",
		Long: `Run an environment server on an embedded NATS server listening on --listen.
Operators (with the operator token, kept in DATA/operator.token) create and control
sessions on corpsim.v1.sessions.create and corpsim.v1.s.<session>.control; each
remote seat gets its own credentials, which may only answer that seat's turns.
With --http ADDR, an HTTP/JSON gateway serves the same protocol under /v1 (bearer
tokens: the operator token, or a seat's token), including a Gym-style step.
With --metrics ADDR (and on the --http listener), /metrics serves Prometheus metrics.

On SIGTERM or SIGINT, serve stops taking sessions, lets each running session
finish the batch it is on (up to --shutdown-grace), records it interrupted and
exits 0. Started again on the same --data, it resumes those sessions (also after
a kill): built-in seats are re-created, remote seats keep their tokens (kept in
DATA/serve-state.json, mode 0600) and the session waits for them to reconnect.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tokenFile := ""
			if o.OperatorToken == "" {
				if err := os.MkdirAll(o.Data, 0o755); err != nil {
					return err
				}
				tokenFile = filepath.Join(o.Data, "operator.token")
				if b, err := os.ReadFile(tokenFile); err == nil {
					o.OperatorToken = strings.TrimSpace(string(b))
				} else {
					o.OperatorToken = natsserver.NewToken()
					if err := os.WriteFile(tokenFile, []byte(o.OperatorToken+"\n"), 0o600); err != nil {
						return err
					}
				}
			}
			// The server's own messages (observations, pages of history) must fit.
			if o.MaxMessage < minMessage || o.MaxMessage > 64<<20 {
				return usagef("--max-message must be between %d (1 MiB) and %d (64 MiB) bytes", minMessage, 64<<20)
			}
			if o.MaxSessions <= 0 || o.MaxSeats <= 0 {
				return usagef("--max-sessions and --max-seats must be positive")
			}
			if o.Worker != "" && (o.NATS == "" || o.Ephemeral) {
				return usagef("--worker needs --nats URL (the cluster) and a --data folder of its own (not --ephemeral)")
			}
			log, err := OpenLog(o.Data, o.Ephemeral, a.logger)
			if err != nil {
				return err
			}
			defer log.Close()
			var bus server.Bus
			var auth *natsserver.Auth
			url := o.NATS
			if o.NATS == "" {
				auth = natsserver.NewAuth(o.OperatorToken)
				if !o.Ephemeral {
					// Admitted before the server listens: remote agents of the
					// sessions a previous serve left reconnect as they were.
					seats, err := server.SavedSeats(filepath.Join(o.Data, stateFileName))
					if err != nil {
						return err
					}
					for _, seat := range seats {
						auth.RestoreSeat(seat)
					}
				}
				embedded, err := natsserver.Start(natsserver.Options{Listen: o.Listen, Auth: auth, Logger: a.logger, MaxPayload: int(o.MaxMessage)})
				if err != nil {
					return err
				}
				defer embedded.Shutdown()
				bus, url = embedded, embedded.ClientURL()
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
				if o.OperatorToken == "" || tokenFile != "" {
					o.OperatorToken = o.NATSToken
				}
			}
			if !o.Ephemeral {
				if err := writeBusURL(o.Data, url); err != nil {
					return err
				}
				defer removeBusURL(o.Data)
			}
			var llmAgent agents.Agent
			if cmd.Flags().Changed("llm-model") {
				if llmAgent, err = lf.agent(cmd, "llm", a); err != nil {
					return err
				}
			}
			stateFile := ""
			if !o.Ephemeral && o.Worker == "" {
				stateFile = filepath.Join(o.Data, stateFileName)
			}
			// The service's gauges are read at scrape time, so the metrics
			// exist before the service they describe.
			var svc *server.Service
			var m *metrics.Metrics
			var observer driver.Observer
			if o.Metrics != "" || o.HTTP != "" {
				m = metrics.New(func() (map[string]int, map[string]int) { return svc.Counts() })
				observer = m
			}
			svcCfg := server.Config{Log: log, Bus: bus, Auth: auth, Logger: a.logger, TurnTimeout: o.TurnTimeout,
				JoinTimeout: o.JoinTimeout, MaxSessions: o.MaxSessions, MaxSeats: o.MaxSeats, CheckpointEvery: o.CheckpointEvery,
				LLM: llmAgent, Observer: observer, StateFile: stateFile}
			var worker *server.Worker
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
				worker, err = server.NewWorker(cmd.Context(), server.WorkerConfig{Name: o.Worker, Conn: wc, Replicas: o.Replicas,
					LeaseTTL: o.LeaseTTL}, svcCfg)
				if err != nil {
					return err
				}
				svc = worker.Service()
			} else if svc, err = server.New(svcCfg); err != nil {
				return err
			}
			defer svc.Close()
			if o.Metrics != "" {
				stop, err := serveMetrics(o.Metrics, m, a)
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
				if resumed, err := svc.ResumeSaved(cmd.Context()); err != nil {
					a.logger.Error("some sessions could not be resumed", "error", err)
				} else if len(resumed) > 0 {
					fmt.Fprintf(a.stdout, "corpsim resumed %d session(s): %s\n", len(resumed), strings.Join(resumed, " "))
				}
			}
			if o.HTTP != "" {
				// The gateway takes back the seats of the resumed sessions
				// before it takes requests, so that their clients' tokens
				// work from the first request.
				stop, err := serveHTTP(o, url, m, a, func(gw *httpgw.Gateway) {
					resume()
					if worker == nil {
						adoptHTTPSeats(cmd.Context(), gw, svc, a)
					}
				})
				if err != nil {
					return err
				}
				defer stop()
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
				fmt.Fprintf(a.stdout, "corpsim worker %s serving on %s (queue group %s); stop with Ctrl-C\n", o.Worker, url, server.WorkerQueue)
			} else {
				fmt.Fprintf(a.stdout, "corpsim serving on %s (operator token %s); stop with Ctrl-C\n", url, where)
			}
			a.logger.Info("serving", "nats", url)
			<-cmd.Context().Done()
			a.logger.Info("shutting down: not taking new sessions; running sessions stop after their current batch and are resumed by the next serve on this data",
				"grace", o.ShutdownGrace)
			ctx, cancel := context.WithTimeout(context.Background(), o.ShutdownGrace)
			defer cancel()
			shutdown := svc.Shutdown
			if worker != nil {
				shutdown = worker.Shutdown // also releases the leases: other workers adopt the sessions at once
			}
			if err := shutdown(ctx); err != nil {
				a.logger.Warn("running turns were cancelled after the grace period; their sessions resume from their last durable batch", "error", err)
			}
			if saved := svc.Saved(); len(saved) > 0 {
				fmt.Fprintf(a.stdout, "corpsim stopped; %d session(s) interrupted, resumed by the next corpsim serve --data %s: %s\n",
					len(saved), o.Data, strings.Join(saved, " "))
			} else {
				fmt.Fprintln(a.stdout, "corpsim stopped")
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "address of the embedded NATS server")
	f.StringVar(&o.NATS, "nats", "", "use this external NATS server or cluster instead of an embedded one (its configuration enforces who may do what)")
	f.StringVar(&o.NATSToken, "nats-token", "", "token corpsim presents to the external NATS server")
	f.StringVar(&o.HTTP, "http", "", "also serve the HTTP/JSON gateway on this address, e.g. 127.0.0.1:8080")
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	f.BoolVar(&o.Ephemeral, "ephemeral", false, "keep the log in memory only")
	f.StringVar(&o.OperatorToken, "operator-token", "", "operator token (default: read or create DATA/operator.token)")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", 30*time.Second, "default wall-clock budget of one agent turn")
	f.DurationVar(&o.JoinTimeout, "join-timeout", 60*time.Second, "how long a new session waits for its remote seats")
	f.IntVar(&o.MaxSessions, "max-sessions", server.DefaultMaxSessions, "sessions running at once; a create beyond it is refused")
	f.IntVar(&o.MaxSeats, "max-seats", server.DefaultMaxSeats, "seats (members played) of one session; a create beyond it is refused")
	f.Int64Var(&o.MaxMessage, "max-message", natsserver.DefaultMaxPayload, "largest message in bytes (at least 1 MiB): the embedded NATS server's max_payload and the HTTP gateway's request bodies (create, fork, reset)")
	f.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9090 (also on the --http listener)")
	f.DurationVar(&o.ShutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM/SIGINT, how long running sessions may take to finish their batch before their turns are cancelled")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 0, "take a checkpoint every N events (0: 1000; negative: never)")
	f.StringVar(&o.Worker, "worker", "", "run as the worker NAME of a cluster (needs --nats): take sessions through the queue group "+server.WorkerQueue+", replicate their logs to JetStream, adopt the sessions of dead workers")
	f.IntVar(&o.Replicas, "replicas", 0, "worker mode: replicas of the log stream and buckets (0: 3 if the cluster has them, else 1)")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", server.DefaultLeaseTTL, "worker mode: a session's lease; a dead worker's sessions are adopted after it expires")
	lf.add(c)
	return c
}

// serveHTTP starts the HTTP/JSON gateway on o.HTTP, bridging to the NATS
// server at natsURL; before is called with the gateway before it listens.
// The returned stop ends its long polls, shuts the HTTP server down and
// closes the gateway.
func serveHTTP(o ServeOptions, natsURL string, m *metrics.Metrics, a *app, before func(*httpgw.Gateway)) (stop func(), err error) {
	if natsURL == "" {
		return nil, usagef("--http needs the NATS server to listen (--listen ADDR)")
	}
	gw, err := httpgw.New(httpgw.Config{NATSURL: natsURL, OperatorToken: o.OperatorToken,
		Logger: a.logger.Named("http"), TurnWait: o.TurnTimeout, MaxRequestBytes: o.MaxMessage})
	if err != nil {
		return nil, err
	}
	before(gw)
	ln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		gw.Close()
		return nil, fmt.Errorf("--http: %w", err)
	}
	handler := gw.Handler()
	if m != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		mux.Handle("/", handler)
		handler = mux
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("HTTP gateway stopped", "error", err)
		}
	}()
	fmt.Fprintf(a.stdout, "corpsim HTTP gateway on http://%s/v1\n", ln.Addr())
	a.logger.Info("serving HTTP", "addr", ln.Addr().String())
	return func() {
		gw.Close() // ends long polls and steps first, so that Shutdown need not wait for them
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			a.logger.Warn("HTTP gateway did not shut down cleanly", "error", err)
			_ = srv.Close()
		}
		<-done
	}, nil
}

// adoptHTTPSeats gives the HTTP gateway back the remote seats it played
// for the sessions this serve resumed, so that their clients come back with
// the tokens they had. A session that cannot be adopted runs on; its
// seats' turns time out.
func adoptHTTPSeats(ctx context.Context, gw *httpgw.Gateway, svc *server.Service, a *app) {
	var adopted []string
	for _, saved := range svc.SeatsVia(proto.ViaHTTP) {
		turnWait, _ := time.ParseDuration(saved.TurnTimeout)
		if err := gw.Adopt(ctx, saved.Session, saved.Seats, turnWait); err != nil {
			a.logger.Warn("the HTTP gateway cannot take back a resumed session's seats; their turns will time out", "session", saved.Session, "error", err)
			continue
		}
		adopted = append(adopted, saved.Session)
	}
	if len(adopted) > 0 {
		fmt.Fprintf(a.stdout, "corpsim HTTP gateway took back the seats of %d session(s): %s\n", len(adopted), strings.Join(adopted, " "))
	}
}

// serveMetrics serves m at http://addr/metrics until stop is called.
func serveMetrics(addr string, m *metrics.Metrics, a *app) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("metrics listener stopped", "error", err)
		}
	}()
	fmt.Fprintf(a.stdout, "corpsim metrics on http://%s/metrics\n", ln.Addr())
	a.logger.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}
