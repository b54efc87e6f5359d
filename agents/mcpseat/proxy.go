package mcpseat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/corpsim/corpsim/agents/wire"
)

// ProxyConfig configures Proxy. URL and Token are required.
type ProxyConfig struct {
	// URL is the corpsim server's HTTP listener (http://127.0.0.1:8080) or
	// its MCP endpoint (…/mcp).
	URL   string
	Token string // the seat's token
	// HTTPClient makes the requests to the server; nil: a client with no
	// overall timeout (observe waits for the seat's turn).
	HTTPClient *http.Client
	Logger     hclog.Logger // nil: silent
}

// Endpoint is the MCP endpoint of a server URL: the URL itself when its
// path ends in /mcp, else the URL with /mcp appended.
func Endpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("mcpseat: %q is not an http:// or https:// URL of a corpsim server", raw)
	}
	if !strings.HasSuffix(u.Path, Path) {
		u.Path = strings.TrimSuffix(u.Path, "/") + Path
	}
	return u.String(), nil
}

// bearerTransport adds the seat token to every request, and keeps what
// the server said when it last refused it (the SDK's error names only the
// status).
type bearerTransport struct {
	token string
	next  http.RoundTripper

	mu      sync.Mutex
	refusal string
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := t.next.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		t.mu.Lock()
		t.refusal = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		t.mu.Unlock()
	}
	return resp, err
}

func (t *bearerTransport) lastRefusal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refusal
}

// upstream is the proxy's client session with the server, made again
// after it broke.
type upstream struct {
	client    *mcp.Client
	transport func() mcp.Transport

	mu sync.Mutex
	cs *mcp.ClientSession
}

func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		return u.cs, nil
	}
	cs, err := u.client.Connect(ctx, u.transport(), nil)
	if err != nil {
		return nil, err
	}
	u.cs = cs
	return cs, nil
}

// broke forgets cs, so that the next call connects again.
func (u *upstream) broke(cs *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs == cs {
		u.cs = nil
		_ = cs.Close()
	}
}

func (u *upstream) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		_ = u.cs.Close()
		u.cs = nil
	}
}

// Proxy serves one seat of a running corpsim server to a local MCP client
// over t (for `corpsim mcp`: stdin and stdout), until the client goes away
// or ctx is done. It connects to the server's /mcp with the seat's token
// first — a refused token is an error before anything is served — and
// offers the local client the server's own tools, resource and
// instructions; each call is forwarded as it is and its result returned as
// it came, so the proxy adds no rule of its own.
//
// Upstream it speaks the newest revision the SDK and the server share
// (2026-07-28, which has no sessions: nothing to expire while the local
// agent thinks); the local client may speak any revision the SDK serves
// over stdio. A call the server cannot be reached for is a tool error
// saying so (an action may or may not have reached the engine: observe
// tells); the next call connects again.
func Proxy(ctx context.Context, t mcp.Transport, cfg ProxyConfig) error {
	if cfg.Token == "" {
		return errors.New("mcpseat: a seat token is required")
	}
	endpoint, err := Endpoint(cfg.URL)
	if err != nil {
		return err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	bt := &bearerTransport{token: cfg.Token, next: next}
	authed := *hc
	authed.Transport = bt
	up := &upstream{
		client: mcp.NewClient(&mcp.Implementation{Name: "corpsim-mcp", Title: "corpsim mcp (stdio proxy)", Version: wire.Version},
			&mcp.ClientOptions{Logger: newSlog(log.Named("upstream"))}),
		transport: func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &authed, DisableStandaloneSSE: true}
		},
	}
	defer up.close()
	cs, err := up.session(ctx)
	if err != nil {
		if why := bt.lastRefusal(); why != "" {
			return fmt.Errorf("mcpseat: the server at %s refused the seat token (%s): %w", endpoint, why, err)
		}
		return fmt.Errorf("mcpseat: connect to %s with the seat token: %w", endpoint, err)
	}
	var instructions string
	if ir := cs.InitializeResult(); ir != nil {
		instructions = ir.Instructions
	}
	local := mcp.NewServer(&mcp.Implementation{Name: "corpsim", Title: "corpsim seat (stdio)", Version: wire.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       newSlog(log.Named("stdio")),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
		SetCacheable: cacheable,
	})
	tools := 0
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpseat: list the seat's tools: %w", err)
		}
		local.AddTool(tool, forwardTool(up, log))
		tools++
	}
	for res, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpseat: list the seat's resources: %w", err)
		}
		local.AddResource(res, forwardResource(up))
	}
	log.Info("serving a seat over stdio", "server", endpoint, "tools", tools, "protocol", cs.InitializeResult().ProtocolVersion)
	ss, err := local.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-done
		return nil
	case err := <-done:
		if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			return err
		}
		return nil
	}
}

func forwardTool(up *upstream, log hclog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs, err := up.session(ctx)
		if err != nil {
			return unreachable(err), nil
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		if err != nil {
			if ctx.Err() != nil {
				// The local client cancelled this call (or went away):
				// the connection is not broken, and closing it would
				// fail every other call in flight.
				return nil, ctx.Err()
			}
			if !isTransport(err) {
				return nil, err // the server's own JSON-RPC error (an unknown tool), as it gave it
			}
			log.Warn("the server could not be reached", "tool", req.Params.Name, "error", err)
			up.broke(cs)
			return unreachable(err), nil
		}
		return res, nil
	}
}

func forwardResource(up *upstream) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs, err := up.session(ctx)
		if err != nil {
			return nil, err
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
		if err != nil && ctx.Err() == nil && isTransport(err) { // not a cancellation (forwardTool)
			up.broke(cs)
		}
		return res, err
	}
}

// isTransport reports whether err is the connection's, not the server's
// answer.
func isTransport(err error) bool {
	var werr *jsonrpc.Error
	return !errors.As(err, &werr)
}

func unreachable(err error) *mcp.CallToolResult {
	return toolError(map[string]any{"error": err.Error(), "status": http.StatusBadGateway},
		fmt.Sprintf("the corpsim server could not be reached: %v. If this was an action, it may or may not have answered your turn: call observe.", err))
}
