package nemogym_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/nemogym"
)

// FuzzRoutes: whatever a client posts to a NeMo Gym route, with a
// session's cookie or without one, the server answers with a JSON body
// and a status it documents, and does not panic.
func FuzzRoutes(f *testing.F) {
	for _, seed := range []struct {
		route, body string
	}{
		{"seed_session", `{"world":"startup","member":"bob"}`},
		{"seed_session", `{"world":"startup"}`},
		{"seed_session", `{"world":"startup","member":"bob","agents":"bob=remote"}`},
		{"reset", `{"world":"startup","member":"bob"}`},
		{"step", `{"response":{"output":[{"type":"function_call","name":"claim","arguments":"{\"task\":\"api\"}","call_id":"c1"}]}}`},
		{"step", `{"response":{"output":[{"type":"function_call","name":"nope","arguments":"{","call_id":"c1"}]}}`},
		{"claim", `{"task":"api"}`},
		{"work", `{"task":"api","hours":-1}`},
		{"observe", `{}`},
		{"verify", `{"responses_create_params":{}}`},
		{"close", `{}`},
		{"tools", ``},
		{"claim", `[`},
		{"message", `{"to":"carol","text":"` + strings.Repeat("x", 5000) + `"}`},
		{"aggregate_metrics", `{"verify_responses":[{"_ng_task_index":0,"reward":1,"response":{"usage":{"n":true}}},{"_ng_task_index":-9e300,"reward":1e308}]}`},
		{"aggregate_metrics", `{"verify_responses":[{"reward":"1"},{},null]}`},
	} {
		f.Add(seed.route, seed.body, false)
		f.Add(seed.route, seed.body, true)
	}
	known := map[int]bool{http.StatusOK: true, http.StatusBadRequest: true, http.StatusNotFound: true, http.StatusMethodNotAllowed: true,
		http.StatusConflict: true, http.StatusRequestEntityTooLarge: true, http.StatusUnprocessableEntity: true,
		http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true, http.StatusInternalServerError: true}
	f.Fuzz(func(t *testing.T, route, body string, seeded bool) {
		ops := newFake()
		ops.endAfter = 3
		srv := nemogym.New(ops, nemogym.Config{TurnWait: 50 * time.Millisecond, PlayOutTimeout: time.Second})
		defer srv.Close()
		h := srv.Handler()
		var cookie *http.Cookie
		if seeded {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/nemo/seed_session", strings.NewReader(`{"world":"startup","member":"bob"}`)))
			if rec.Code != http.StatusOK {
				t.Fatalf("seed: %d %s", rec.Code, rec.Body)
			}
			for _, c := range rec.Result().Cookies() {
				if c.Name == nemogym.CookieName {
					cookie = c
				}
			}
			if cookie == nil {
				t.Fatal("seed set no cookie")
			}
		}
		method := http.MethodPost
		if route == "tools" {
			method = http.MethodGet
		}
		path := "/nemo/" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r == '_' {
				return r
			}
			return -1
		}, route)
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !known[rec.Code] {
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusNotFound && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) && strings.HasPrefix(rec.Body.String(), "404 page not found") {
			return // the mux's own answer to a route it does not serve
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: status %d, a body that is not JSON: %s", path, body, rec.Code, rec.Body)
		}
	})
}
