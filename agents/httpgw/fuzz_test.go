package httpgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/sim/server"
)

// FuzzRoutes: whatever a stranger sends to the gateway — any method, path,
// token and body — is answered with a status the gateway documents and a
// JSON body (a redirect of an unclean path excepted), and the gateway does
// not panic. It runs over a real bus and session service, with a live
// session whose ID and seat stand in for {id} and {seat} in a path.
func FuzzRoutes(f *testing.F) {
	s := startStackWith(f, httpgw.Config{MaxRequestBytes: 64 << 10, TurnWait: 100 * time.Millisecond}, func(c *server.Config) {
		c.MaxSessions = 4
		c.TurnTimeout = 200 * time.Millisecond
	})
	reply := s.create(f, wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy,bob=remote"})
	seat := reply.Seats["bob"]
	for _, seed := range []struct {
		method byte
		path   string
		token  byte
		body   string
	}{
		{0, "/v1/health", 0, ""},
		{1, "/v1/sessions", 1, `{"world":"startup","seed":2}`},
		{1, "/v1/sessions", 1, `{"world":"startup"}}`},
		{1, "/v1/sessions", 1, `{"world":"nope","agents":"x=y=z"}`},
		{1, "/v1/sessions", 2, `{"world":"startup"}`},
		{1, "/v1/sessions/{id}/fork", 1, `{"at":3,"seed":4}`},
		{1, "/v1/sessions/{id}/fork", 1, `{"at":-1}`},
		{1, "/v1/sessions/{id}/reset", 1, `{}`},
		{1, "/v1/sessions/{id}/control", 1, `{"pause":true}`},
		{1, "/v1/sessions/{id}/control", 1, `{"resume":true}`},
		{1, "/v1/sessions/{id}/step", 1, `{"actions":{"bob":[{"type":"wait"}]}}`},
		{1, "/v1/sessions/{id}/step", 1, `{"actions":{"bob":[{"type":"claim","task":"` + strings.Repeat("x", 300) + `"}]}}`},
		{0, "/v1/sessions/{id}/events?from=0&limit=5", 1, ""},
		{0, "/v1/sessions/{id}/events?from=18446744073709551615&limit=-1", 1, ""},
		{0, "/v1/sessions/{id}/score", 1, ""},
		{0, "/v1/sessions/{id}/score", 3, ""},
		{0, "/v1/sessions/{id}/seats/{seat}/observation?wait=50ms", 2, ""},
		{0, "/v1/sessions/{id}/seats/{seat}/observation?wait=abc", 2, ""},
		{0, "/v1/sessions/{id}/seats/carol/observation", 2, ""},
		{1, "/v1/sessions/{id}/seats/{seat}/act", 2, `{"turn":1,"actions":[{"type":"wait"}]}`},
		{1, "/v1/sessions/{id}/seats/{seat}/act", 2, `{"actions":[{"type":"claim"`},
		{1, "/v1/sessions/{id}/seats/{seat}/act", 1, `{"actions":[]}`},
		{2, "/v1/sessions/{id}/score", 1, ""},
		{0, "/v1/sessions/a.b.c/score", 1, ""},
		{0, "/v1//sessions/../health", 0, ""},
	} {
		f.Add(seed.method, seed.path, seed.token, seed.body)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}
	known := map[int]bool{http.StatusOK: true, http.StatusCreated: true, http.StatusNoContent: true,
		http.StatusBadRequest: true, http.StatusUnauthorized: true, http.StatusForbidden: true, http.StatusNotFound: true,
		http.StatusConflict: true, http.StatusRequestEntityTooLarge: true,
		http.StatusInternalServerError: true, http.StatusBadGateway: true, http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true}
	h := s.gw.Handler()
	f.Fuzz(func(t *testing.T, method byte, path string, token byte, body string) {
		path = strings.NewReplacer("{id}", reply.Session, "{seat}", "bob").Replace(path)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, methods[int(method)%len(methods)], "http://gateway"+path, strings.NewReader(body))
		if err != nil {
			t.Skip("not a request a client could send:", err)
		}
		switch token % 4 {
		case 1:
			req.Header.Set("Authorization", "Bearer "+s.operator)
		case 2:
			req.Header.Set("Authorization", "Bearer "+seat.Token)
		case 3:
			req.Header.Set("Authorization", "Bearer "+body)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch code := rec.Code; {
		case code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect || code == http.StatusPermanentRedirect:
			if rec.Header().Get("Location") == "" {
				t.Fatalf("%s %q: redirect %d without a Location", req.Method, path, code)
			}
		case !known[code]:
			t.Fatalf("%s %q: status %d is not one the gateway documents: %s", req.Method, path, code, rec.Body)
		case code == http.StatusNoContent:
		case !json.Valid(rec.Body.Bytes()):
			t.Fatalf("%s %q: status %d with a body that is not JSON: %q", req.Method, path, code, rec.Body)
		}
	})
}
