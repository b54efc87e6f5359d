package openenv

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/sim/simtest"
)

func get(t *testing.T, url, auth string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// TestValidateCriteria: the routes pass every criterion `openenv validate
// URL` checks of a running server (OpenEnv's cli/_validation.py,
// validate_running_environment), with http://HOST/openenv as the URL: the
// OpenAPI document with an info.version of the 1.x standard and the paths
// of simulation mode (/reset, /step, /state), /health, /metadata's name
// and description, /schema's three schemas, and POST /mcp of {} answering
// a JSON-RPC 2.0 payload with 200.
func TestValidateCriteria(t *testing.T) {
	base := startHTTP(t, newTestServer(t, newFake("bob"), Config{})) + "/openenv"
	code, b := get(t, base+"/openapi.json", "")
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version *string `json:"version"`
		} `json:"info"`
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || code != 200 || doc.Info.Version == nil || !strings.HasPrefix(*doc.Info.Version, "1.") {
		t.Fatalf("openapi.json: %d %v, info.version %v: want 200 and a 1.x version", code, err, doc.Info.Version)
	}
	for _, p := range []string{"/reset", "/step", "/state", "/health", "/schema", "/metadata", "/mcp"} {
		if doc.Paths[p] == nil {
			t.Fatalf("openapi.json lacks the path %s (simulation mode has /reset, /step and /state)", p)
		}
	}
	var health map[string]any
	if code, b = get(t, base+"/health", ""); code != 200 || json.Unmarshal(b, &health) != nil || health["status"] != "healthy" {
		t.Fatalf("health: %d %s", code, b)
	}
	var meta map[string]any
	if code, b = get(t, base+"/metadata", ""); code != 200 || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("metadata: %d %s", code, b)
	}
	if _, ok := meta["name"].(string); !ok {
		t.Fatalf("metadata has no name: %s", b)
	}
	if _, ok := meta["description"].(string); !ok {
		t.Fatalf("metadata has no description: %s", b)
	}
	var schemas map[string]any
	if code, b = get(t, base+"/schema", ""); code != 200 || json.Unmarshal(b, &schemas) != nil {
		t.Fatalf("schema: %d %s", code, b)
	}
	for _, k := range []string{"action", "observation", "state"} {
		if _, ok := schemas[k].(map[string]any); !ok {
			t.Fatalf("schema's %s is not an object: %s", k, b)
		}
	}
	res, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var rpc map[string]any
	err = json.NewDecoder(res.Body).Decode(&rpc)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || rpc["jsonrpc"] != "2.0" || rpc["error"] == nil {
		t.Fatalf("POST /mcp {}: %d %v (%v), want 200 with a JSON-RPC 2.0 error", res.StatusCode, rpc, err)
	}
}

// TestOpenAPIDocument: the components of the OpenAPI document compile as
// JSON Schema (2020-12, as OpenAPI 3.1 reads them), and what the routes
// answer fits them.
func TestOpenAPIDocument(t *testing.T) {
	f := newFake("bob")
	real := map[string]json.RawMessage{"bob": simtest.RandomObservations(t, 1, 5)[0]} // as the engine makes them
	f.script = []httpgw.StepReply{{Observations: real, Rewards: 1}, {Observations: real}}
	base := startHTTP(t, newTestServer(t, f, Config{}))
	_, b := get(t, base+"/openenv/openapi.json", "")
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	compiled := map[string]*jsonschema.Schema{}
	for _, name := range []string{"Action", "Observation", "State", "ResetRequest", "StepRequest", "StepResponse", "JSONRPC", "Error"} {
		sch, err := c.Compile("openapi.json#/components/schemas/" + name)
		if err != nil {
			t.Fatalf("component %s does not compile: %v", name, err)
		}
		compiled[name] = sch
	}
	fits := func(name, body string) {
		t.Helper()
		if err := validate(t, compiled[name], body); err != nil {
			t.Fatalf("%s does not fit %s: %v", body, name, err)
		}
	}
	fits("ResetRequest", `{"world":"startup","seed":7,"agents":"greedy,bob=remote","episode_id":null}`)
	fits("StepRequest", `{"action":{"actions":{"bob":[{"type":"claim","task":"api"}]}},"episode_id":"s1","timeout_s":5}`)
	if err := validate(t, compiled["StepRequest"], `{"action":{"actions":{"bob":[{"type":"fly"}]}},"episode_id":"s1"}`); err == nil {
		t.Fatal("StepRequest takes an action of no type corpsim has")
	}
	code, out := post(t, base+"/openenv/reset", `{"world":"startup"}`)
	raw, _ := json.Marshal(out)
	if code != 200 {
		t.Fatalf("reset: %d %s", code, raw)
	}
	fits("StepResponse", string(raw))
	_, out = post(t, base+"/openenv/step", `{"action":{"actions":{}},"episode_id":"s1"}`)
	raw, _ = json.Marshal(out)
	fits("StepResponse", string(raw))
	_, b = get(t, base+"/openenv/state?episode_id=s1", "Bearer op")
	fits("State", string(b))
	_, b = get(t, base+"/openenv/state", "")
	fits("State", string(b))
	res, err := http.Post(base+"/openenv/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"tools/list","id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	fits("JSONRPC", string(b))
	fits("JSONRPC", `{"jsonrpc":"2.0","method":"tools/list","id":1}`)
	for _, bad := range []string{`{}`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"result":{},"x":1}`} {
		if err := validate(t, compiled["JSONRPC"], bad); err == nil {
			t.Fatalf("the JSONRPC schema takes %s", bad)
		}
	}
}

// TestHTTPState: GET /openenv/state without episode_id is a fresh
// environment's state, open to all; with one it is that session's, to the
// operator alone, counting the stateless steps answered.
func TestHTTPState(t *testing.T) {
	f := newFake("bob")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
	base := startHTTP(t, newTestServer(t, f, Config{}))
	code, b := get(t, base+"/openenv/state", "")
	if code != 200 || string(b) != `{"episode_id":null,"step_count":0,"done":false,"seed":0,"seats":[]}` {
		t.Fatalf("state without an episode: %d %s", code, b)
	}
	if code, _ := get(t, base+"/openenv/state?episode_id=s1", ""); code != 401 {
		t.Fatalf("a session's state without a token: %d, want 401", code)
	}
	if code, _ := get(t, base+"/openenv/state?episode_id=s1", "Bearer seat"); code != 403 {
		t.Fatalf("a session's state with a seat's token: %d, want 403", code)
	}
	post(t, base+"/openenv/reset", `{"world":"startup"}`)
	post(t, base+"/openenv/step", `{"action":{"actions":{}},"episode_id":"s1"}`)
	post(t, base+"/openenv/step", `{"action":{"actions":{}},"episode_id":"s1"}`)
	var st state
	code, b = get(t, base+"/openenv/state?episode_id=s1", "Bearer op")
	if err := json.Unmarshal(b, &st); err != nil || code != 200 || st.EpisodeID == nil || *st.EpisodeID != "s1" || st.StepCount != 2 || st.Status != "interrupted" || !st.Done {
		t.Fatalf("state of s1: %d %s, want its 2 steps and the status the server gives (interrupted: done)", code, b)
	}
}

// TestHTTPMCP: POST /openenv/mcp lists the tools and says where calls are
// answered; malformed requests are JSON-RPC errors, answered 200.
func TestHTTPMCP(t *testing.T) {
	base := startHTTP(t, newTestServer(t, newFake("bob"), Config{DefaultWorld: "startup"}))
	for _, tc := range []struct {
		body string
		code int
		id   string
		says string
	}{
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait"},"id":4}`, rpcMethodNotFound, "4", "/openenv/ws"},
		{`{"jsonrpc":"2.0","method":"openenv/session/create","id":"x"}`, rpcMethodNotFound, `"x"`, "/mcp"},
		{`{"jsonrpc":"2.0","method":"initialize","id":5}`, rpcMethodNotFound, "5", "tools/list"},
		{`{"jsonrpc":`, rpcParseError, "null", "parse error"},
		{`[1]`, rpcInvalidRequest, "null", "invalid request"},
		{`{}`, rpcInvalidRequest, "null", "invalid request"},
	} {
		res, err := http.Post(base+"/openenv/mcp", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var r rpcResponse
		err = json.NewDecoder(res.Body).Decode(&r)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id || !strings.Contains(r.Error.Message, tc.says) {
			t.Fatalf("%s: %d %+v (%v), want error %d saying %q, id %s", tc.body, res.StatusCode, r, err, tc.code, tc.says, tc.id)
		}
	}
	// Open to all, and answering tools/list alone: a body over 64 KiB is
	// refused unread.
	big := `{"jsonrpc":"2.0","method":"tools/list","params":{"x":"` + strings.Repeat("x", maxMCPBody) + `"},"id":1}`
	res, err := http.Post(base+"/openenv/mcp", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body of %d bytes: %d, want 413", len(big), res.StatusCode)
	}
	res, err = http.Post(base+"/openenv/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"tools/list","params":{},"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	err = json.NewDecoder(res.Body).Decode(&r)
	res.Body.Close()
	if err != nil || len(r.Result.Tools) < 2 || r.Result.Tools[0].Name != "claim" || r.Result.Tools[len(r.Result.Tools)-1].Name != observeTool {
		t.Fatalf("tools/list: %+v (%v), want startup's tools, then observe", r, err)
	}
}
