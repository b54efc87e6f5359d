package mcpseat_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/mcpseat"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
)

// FuzzRequests: whatever a stranger sends to /mcp — any method, body,
// token, MCP session and protocol revision — is answered with a status the
// adapter or the SDK documents, within the request's deadline or not at
// all, and the server goes on: after every request an MCP session of
// another seat, which the fuzzer never names, still lists its tools. It
// runs over the real stack (embedded NATS, the session service, the HTTP
// gateway) on a real HTTP listener, with a live session whose seat the
// requests may act for.
func FuzzRequests(f *testing.F) {
	s := startStack(f, mcpseat.Config{MaxRequestBytes: 64 << 10, ActWait: 50 * time.Millisecond,
		ObserveWait: 50 * time.Millisecond, MaxWait: 100 * time.Millisecond, MaxSessions: 64})
	fuzzed := s.create(f, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote"})
	kept := s.create(f, wire.CreateRequest{World: "startup", Seed: 2, Agents: "greedy,bob=remote", Wait: true})
	seat, witness := fuzzed.Seats["bob"].Token, kept.Seats["bob"].Token
	session := s.openSession(f, seat)
	witnessSession := s.openSession(f, witness)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, seed := range []struct {
		method, token, session, version byte
		body                            string
	}{
		{0, 1, 0, 0, initialize},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"observe","arguments":{"wait":0.01}}}`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"claim","arguments":{"task":"t1"}}}`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"message","arguments":{"to":"alice","text":"hi"}}}`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"work","arguments":{"task":7}}}`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"corpsim://seat/observation"}}`},
		{0, 1, 1, 1, `[{"jsonrpc":"2.0","id":8,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{0, 1, 1, 1, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"wait"}}`},
		{0, 1, 0, 2, `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{` + meta + `}}`},
		{0, 1, 0, 2, `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"observe","arguments":{"wait":-5},` + meta + `}}`},
		{0, 1, 0, 2, `{"jsonrpc":"2.0","id":12,"method":"server/discover","params":{` + meta + `}}`},
		{0, 2, 1, 1, `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`},
		{0, 3, 0, 0, initialize},
		{1, 1, 1, 1, ``},
		{2, 1, 1, 1, ``},
		{0, 1, 2, 1, `{"jsonrpc":"2.0","id":14,"method":"ping"}`},
		{0, 1, 1, 3, `{"jsonrpc":"2.0","id":`},
		{3, 0, 0, 0, `{}`},
	} {
		f.Add(seed.method, seed.token, seed.session, seed.version, seed.body)
	}
	methods := []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPut}
	versions := []string{"", "2025-11-25", "2026-07-28", "2025-03-26"}
	known := map[int]bool{http.StatusOK: true, http.StatusAccepted: true, http.StatusNoContent: true,
		http.StatusBadRequest: true, http.StatusUnauthorized: true, http.StatusForbidden: true, http.StatusNotFound: true,
		http.StatusMethodNotAllowed: true, http.StatusNotAcceptable: true, http.StatusRequestEntityTooLarge: true,
		http.StatusUnsupportedMediaType: true, http.StatusServiceUnavailable: true}
	client := &http.Client{}
	send := func(method, token, mcpSession, version string, body []byte) (*http.Response, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, s.url+mcpseat.Path, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": mcpSession, "Mcp-Protocol-Version": version} {
			if v != "" && v != "Bearer " {
				req.Header.Set(k, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	f.Fuzz(func(t *testing.T, method, token, sessionPick, version byte, body string) {
		tok := []string{"", seat, s.operator, natsserver.NewToken(), body}[int(token)%5]
		sid := []string{"", session, "nosuchsession", body}[int(sessionPick)%4]
		ver := versions[int(version)%len(versions)]
		if version >= 128 {
			ver = body // any header value, e.g. one past the modern revision
		}
		resp, b, err := send(methods[int(method)%len(methods)], tok, sid, ver, []byte(body))
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "invalid header field"):
			t.Skip("not a request a client could send:", err)
		case errors.Is(err, context.DeadlineExceeded):
			// A wait, or an event stream the server holds open: it has
			// to end with the request.
		default:
			t.Fatalf("the request failed: %v", err) // a dropped connection: a panic, say
		}
		if resp != nil && !known[resp.StatusCode] { // its body may have been cut by the deadline
			t.Fatalf("status %d is not one the MCP server documents: %.300s", resp.StatusCode, b)
		}
		resp, b, err = send(http.MethodPost, witness, witnessSession, "2025-11-25", list)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"observe"`)) {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			t.Fatalf("after the request, another seat's MCP session lists no tools: HTTP %d, %v: %.300s", code, err, b)
		}
	})
}
