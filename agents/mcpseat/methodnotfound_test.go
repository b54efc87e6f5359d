package mcpseat_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/mcpseat"
	"github.com/corpsim/corpsim/agents/wire"
)

// TestUnknownMethodIsMethodNotFound: a request for a method the server
// does not have, on an MCP session (2025-11-25 and earlier), is answered
// as MCP's streamable HTTP transport requires of any request — a JSON-RPC
// response, here the error -32601 with the request's id — not an HTTP
// refusal, which clients report as a transport failure. A notification of
// an unknown method is still refused with 400 (the transport's answer to
// a notification it does not accept), and the session goes on.
func TestUnknownMethodIsMethodNotFound(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	tok := reply.Seats["bob"].Token
	id := s.openSession(t, tok)
	for _, c := range []struct {
		name, version, body, id string
	}{
		{"number id", "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"seats/steal"}`, `3`},
		{"string id", "2025-11-25", `{"jsonrpc":"2.0","id":"x-7","method":"seats/steal","params":{}}`, `"x-7"`},
		{"2025-06-18", "2025-06-18", `{"jsonrpc":"2.0","id":4,"method":"completion/completes"}`, `4`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := s.raw(t, "POST", tok, id, c.version, []byte(c.body))
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("got HTTP %d (%s): %s, want 200 with a JSON-RPC response", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &got); err != nil || got.JSONRPC != "2.0" || string(got.ID) != c.id || got.Error == nil || got.Error.Code != -32601 {
				t.Fatalf("got %s (%v), want a JSON-RPC error -32601 with id %s", b, err, c.id)
			}
		})
	}
	if resp, b := s.raw(t, "POST", tok, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","method":"notifications/stolen"}`)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown notification: got HTTP %d: %s, want 400", resp.StatusCode, b)
	}
	if resp, b := s.raw(t, "POST", tok, id, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"observe"`) {
		t.Fatalf("the MCP session after them: HTTP %d: %.200s", resp.StatusCode, b)
	}
	if _, _, _, failed := s.rec.get(); failed["-32601"] != 3 {
		t.Errorf("failures recorded %v, want 3 of -32601", failed)
	}
}

// TestUnknownMethodOutsideASession: without an MCP session, or on one
// that is not open, an unknown method keeps the transport's refusals.
func TestUnknownMethodOutsideASession(t *testing.T) {
	s := startStack(t, mcpseat.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=remote", Wait: true})
	tok := reply.Seats["bob"].Token
	body := []byte(`{"jsonrpc":"2.0","id":3,"method":"seats/steal"}`)
	for _, c := range []struct {
		name, session string
		want          int
	}{
		{"no MCP session", "", http.StatusBadRequest},
		{"an MCP session not open", "nosuchsession", http.StatusNotFound},
	} {
		if resp, b := s.raw(t, "POST", tok, c.session, "2025-11-25", body); resp.StatusCode != c.want {
			t.Errorf("%s: got HTTP %d: %s, want %d", c.name, resp.StatusCode, b, c.want)
		}
	}
}
