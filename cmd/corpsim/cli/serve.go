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

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/natsbus"
	"github.com/corpsim/corpsim/sim/service"
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
	CheckpointEvery int
}

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
tokens: the operator token, or a seat's token), including a Gym-style step.`,
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
					o.OperatorToken = natsbus.NewToken()
					if err := os.WriteFile(tokenFile, []byte(o.OperatorToken+"\n"), 0o600); err != nil {
						return err
					}
				}
			}
			log, err := OpenLog(o.Data, o.Ephemeral, a.logger)
			if err != nil {
				return err
			}
			defer log.Close()
			var bus service.Bus
			var auth *natsbus.Auth
			url := o.NATS
			if o.NATS == "" {
				auth = natsbus.NewAuth(o.OperatorToken)
				embedded, err := natsbus.Start(natsbus.Options{Listen: o.Listen, Auth: auth, Logger: a.logger})
				if err != nil {
					return err
				}
				defer embedded.Shutdown()
				bus, url = embedded, embedded.ClientURL()
			} else {
				// An external server or cluster: its configuration decides who
				// may do what; corpsim presents --nats-token if given.
				ext := natsbus.External{URL: o.NATS, Token: o.NATSToken}
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
			svc, err := service.New(service.Config{Log: log, Bus: bus, Auth: auth, Logger: a.logger, TurnTimeout: o.TurnTimeout,
				JoinTimeout: o.JoinTimeout, MaxSessions: o.MaxSessions, CheckpointEvery: o.CheckpointEvery, LLM: llmAgent})
			if err != nil {
				return err
			}
			defer svc.Close()
			if o.HTTP != "" {
				stop, err := serveHTTP(o, url, a)
				if err != nil {
					return err
				}
				defer stop()
			}
			where := "given with --operator-token"
			if tokenFile != "" {
				where = "in " + tokenFile
			}
			if o.NATS != "" {
				where = "that of the external server (--nats-token)"
			}
			fmt.Fprintf(a.stdout, "corpsim serving on %s (operator token %s); stop with Ctrl-C\n", url, where)
			a.logger.Info("serving", "nats", url)
			<-cmd.Context().Done()
			a.logger.Info("shutting down: running sessions are left interrupted and can be resumed")
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
	f.IntVar(&o.MaxSessions, "max-sessions", 1000, "sessions running at once")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 0, "take a checkpoint every N events (0: 1000; negative: never)")
	lf.add(c)
	return c
}

// serveHTTP starts the HTTP/JSON gateway on o.HTTP, bridging to the NATS
// server at natsURL. The returned stop ends its long polls, shuts the HTTP
// server down and closes the gateway.
func serveHTTP(o ServeOptions, natsURL string, a *app) (stop func(), err error) {
	if natsURL == "" {
		return nil, usagef("--http needs the NATS server to listen (--listen ADDR)")
	}
	gw, err := httpgw.New(httpgw.Config{NATSURL: natsURL, OperatorToken: o.OperatorToken,
		Logger: a.logger.Named("http"), TurnWait: o.TurnTimeout})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		gw.Close()
		return nil, fmt.Errorf("--http: %w", err)
	}
	srv := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}
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
