package openenv

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// toolReply is a decoded reply to a tool action or an "mcp" frame.
type toolReply struct {
	Type string `json:"type"`
	Data struct {
		Observation *struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
			EpisodeID *string          `json:"episode_id"`
			ToolName  string           `json:"tool_name"`
			Result    *json.RawMessage `json:"result"`
			Error     *struct {
				Type    string `json:"error_type"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"observation"`
		Reward *float64 `json:"reward"`
		Done   bool     `json:"done"`
		Code   string   `json:"code"`
		// An "mcp" frame's JSON-RPC response.
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"data"`
}

// rewarded is a reply frame's type and reward, if it has one.
type rewarded struct {
	Type string `json:"type"`
	Data struct {
		Reward *float64 `json:"reward"`
	} `json:"data"`
}

func sendTool(t *testing.T, e *episode, frame string) toolReply {
	t.Helper()
	out, _ := e.handle(t.Context(), []byte(frame))
	var r toolReply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reply %s is not JSON: %v", out, err)
	}
	return r
}

// toolsJSON is the tool definitions of the actions named, as a create
// reply carries them.
func toolsJSON(t *testing.T, names ...string) string {
	t.Helper()
	var defs []agents.Tool
	for _, d := range agents.ToolDefs() {
		if slices.Contains(names, d.Function.Name) {
			defs = append(defs, d)
		}
	}
	b, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func toolNames(r toolReply) []string {
	var out []string
	for _, tl := range r.Data.Observation.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestListTools: list_tools answers OpenEnv's ListToolsObservation — the
// session's tools once reset, before it the default world's, and without
// one every action's — with each tool's schema as input_schema; it makes
// no session and no step.
func TestListTools(t *testing.T) {
	f := newFake("bob")
	f.tools = toolsJSON(t, "claim", "wait")
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	r := sendTool(t, e, `{"type":"step","data":{"type":"list_tools"}}`)
	if r.Type != "observation" || r.Data.Observation == nil || r.Data.Observation.EpisodeID != nil {
		t.Fatalf("list_tools before reset: %+v", r)
	}
	if got, want := toolNames(r), append(agents.ToolNames(agents.ToolDefs()), observeTool); !slices.Equal(got, want) {
		t.Fatalf("tools before a reset %v, want every action's and observe: %v", got, want)
	}
	var sch agents.ToolSchema
	if err := json.Unmarshal(r.Data.Observation.Tools[0].InputSchema, &sch); err != nil || sch.Type != "object" || len(sch.Required) == 0 {
		t.Fatalf("claim's input_schema %s (%v): want its arguments' JSON Schema", r.Data.Observation.Tools[0].InputSchema, err)
	}
	if creates, _, steps := f.snapshot(); len(creates)+len(steps) != 0 {
		t.Fatalf("list_tools made %d sessions and %d steps", len(creates), len(steps))
	}

	f.script = []httpgw.StepReply{{Observations: obsOf("bob")}}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	r = sendTool(t, e, `{"type":"step","data":{"type":"list_tools","metadata":{}}}`)
	if got := toolNames(r); !slices.Equal(got, []string{"claim", "wait", observeTool}) || r.Data.Observation.EpisodeID == nil || *r.Data.Observation.EpisodeID != "s1" {
		t.Fatalf("list_tools after reset: tools %v, episode %v; want the session's claim, wait and s1", got, r.Data.Observation.EpisodeID)
	}
	if rs, _ := send(t, e, `{"type":"state"}`); rs.Data.StepCount != 0 {
		t.Fatalf("list_tools counted as %d steps", rs.Data.StepCount)
	}

	d := &episode{srv: newTestServer(t, newFake("bob"), Config{DefaultWorld: "meetings"})}
	w, err := worlds.Shipped("meetings")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolNames(sendTool(t, d, `{"type":"step","data":{"type":"list_tools"}}`)), append(agents.ToolNames(agents.ToolDefsFor(w)), observeTool); !slices.Equal(got, want) {
		t.Fatalf("tools before a reset with a default world %v, want meetings' %v", got, want)
	}
}

// TestCallTool: call_tool answers the asked seat's turn with the one
// action its tool makes and returns OpenEnv's CallToolObservation (the
// observation that followed as "result"); a call that cannot be an action
// is a tool error that sends nothing; the rewards of the calls add up to
// the score.
func TestCallTool(t *testing.T) {
	f := newFake("bob", "carol")
	f.tools = toolsJSON(t, "claim", "work", "wait")
	score := 4.0
	f.script = []httpgw.StepReply{
		{Observations: obsOf("bob", "carol"), Rewards: 1}, // reset
		{Observations: obsOf("bob"), Rewards: 0.5},
		{Observations: obsOf(), Rewards: 0.5}, // no turn came in time
		{Observations: obsOf("bob")},          // wait's wait
		{Observations: obsOf(), Rewards: 2, Done: true, Status: "finished", Score: &score},
	}
	rec := &recorder{}
	s := newTestServer(t, f, Config{Recorder: rec})
	e := &episode{srv: s}
	if r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`); r.Type != "error" || r.Data.Code != CodeSession {
		t.Fatalf("call_tool before reset: %+v, want SESSION_ERROR", r)
	}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	steps := func() []httpgw.StepRequest { _, _, st := f.snapshot(); return st }
	before := len(steps())
	// observe shows reset's turns again, and the reward reset left for
	// the first step, without stepping.
	r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe","arguments":{}}}`)
	var seen observation
	if o := r.Data.Observation; o == nil || o.Error != nil || o.Result == nil || json.Unmarshal(*o.Result, &seen) != nil || len(seen.Seats) != 2 || *r.Data.Reward != 1 {
		t.Fatalf("observe after reset: %+v, want bob's and carol's turns and reset's reward 1", r)
	}
	if r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe"}}`); *r.Data.Reward != 0 {
		t.Fatalf("observe again: reward %v, want 0 (reported once)", *r.Data.Reward)
	}

	for _, tc := range []struct{ name, data, kind, says string }{
		{"an unknown tool", `{"type":"call_tool","tool_name":"fly","arguments":{}}`, toolNotFound, "claim, work, wait, observe"},
		{"observe with arguments", `{"type":"call_tool","tool_name":"observe","arguments":{"wait":3}}`, toolInvalid, "no arguments"},
		{"a tool the world lacks", `{"type":"call_tool","tool_name":"approve","arguments":{"request":"r1"}}`, toolNotFound, "unknown tool"},
		{"a missing argument", `{"type":"call_tool","tool_name":"claim","arguments":{}}`, toolInvalid, `"task"`},
		{"an unknown argument", `{"type":"call_tool","tool_name":"claim","arguments":{"task":"a","speed":2}}`, toolInvalid, "speed"},
		{"a member not of the episode", `{"type":"call_tool","tool_name":"claim","arguments":{"task":"a"},"member":"zed"}`, toolInvalid, "not a seat"},
	} {
		r := sendTool(t, e, `{"type":"step","data":`+tc.data+`}`)
		o := r.Data.Observation
		if r.Type != "observation" || o == nil || o.Error == nil || o.Error.Type != tc.kind || !strings.Contains(o.Error.Message, tc.says) || o.Result != nil || r.Data.Done {
			t.Fatalf("%s: %+v, want a %s tool error saying %q", tc.name, r, tc.kind, tc.says)
		}
	}
	if n := len(steps()) - before; n != 0 {
		t.Fatalf("refused calls sent %d steps", n)
	}
	for _, bad := range []string{
		`{"type":"call_tool"}`,
		`{"type":"list_tools","tool_name":"x"}`,
		`{"type":"call_tool","tool_name":"wait","speed":1}`,
		`{"type":"jump"}`,
	} {
		if r := sendTool(t, e, `{"type":"step","data":`+bad+`}`); r.Type != "error" || r.Data.Code != CodeValidation {
			t.Fatalf("step data %s: %+v, want VALIDATION_ERROR", bad, r)
		}
	}

	total := 1.0 // observe's
	// Two seats asked: the first call is kept for the first seat waiting
	// and shows the other; the second, for carol, sends both.
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"api"}}}`)
	o := r.Data.Observation
	var res observation
	if r.Type != "observation" || o == nil || o.ToolName != "claim" || o.Error != nil || o.Result == nil || *r.Data.Reward != 0 ||
		json.Unmarshal(*o.Result, &res) != nil || len(res.Seats) != 1 || res.Seats["carol"] == nil {
		t.Fatalf("the first of two seats' calls: %+v, want carol still waiting, no reward", r)
	}
	if n := len(steps()) - before; n != 0 {
		t.Fatalf("a call with a seat still waiting sent %d steps", n)
	}
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"b"},"member":"bob"}}`)
	if o := r.Data.Observation; o.Error == nil || o.Error.Type != toolInvalid || !strings.Contains(o.Error.Message, "carol") {
		t.Fatalf("a second call for bob's turn: %+v, want invalid_args naming carol, who still waits", r)
	}
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"work","arguments":{"task":"api"},"member":"carol"}}`)
	o = r.Data.Observation
	if r.Type != "observation" || o == nil || o.ToolName != "work" || o.Error != nil || o.Result == nil || r.Data.Reward == nil {
		t.Fatalf("call_tool work: %+v", r)
	}
	total += *r.Data.Reward
	res = observation{}
	if err := json.Unmarshal(*o.Result, &res); err != nil || res.EpisodeID != "s1" || len(res.Seats) != 1 || res.Seats["bob"] == nil {
		t.Fatalf("the call's result %s (%v): want the next observation, bob asked", *o.Result, err)
	}
	st := steps()
	if got := st[len(st)-1].Actions; len(st) != before+1 || len(got) != 2 || !slices.Equal(got["bob"], []org.Action{{Type: "claim", Task: "api"}}) ||
		!slices.Equal(got["carol"], []org.Action{{Type: "work", Task: "api"}}) {
		t.Fatalf("the calls sent %+v in %d steps, want bob's claim and carol's work in one", got, len(st)-before)
	}

	// One seat asked: a call needs no member. Then none asked: a call other
	// than wait does nothing; wait waits for the next turn.
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"work","arguments":{"task":"api","for":"1h"}}}`)
	total += *r.Data.Reward
	st = steps()
	if got := st[len(st)-1].Actions; !slices.Equal(got["bob"], []org.Action{{Type: "work", Task: "api", For: "1h"}}) {
		t.Fatalf("the call sent %+v, want bob's work", got)
	}
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"b"}}}`)
	if o := r.Data.Observation; o.Error == nil || o.Error.Type != toolExecution || !strings.Contains(o.Error.Message, "call wait") {
		t.Fatalf("a call with no turn waiting: %+v, want an execution_error pointing at wait", r)
	}
	n := len(steps())
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":null}}`)
	total += *r.Data.Reward
	st = steps()
	if len(st) != n+1 || st[n].Actions != nil || r.Data.Observation.Error != nil {
		t.Fatalf("wait with no turn waiting sent %+v (reply %+v), want one step answering nothing", st[n:], r)
	}

	// The last call ends the episode; the rewards add up to the score.
	r = sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`)
	total += *r.Data.Reward
	if !r.Data.Done || total != score {
		t.Fatalf("last call: done %v, rewards %v; want done and %v", r.Data.Done, total, score)
	}
	if r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`); r.Type != "error" || r.Data.Code != CodeSession {
		t.Fatalf("call_tool after the end: %+v, want SESSION_ERROR", r)
	}
	if rs, _ := send(t, e, `{"type":"state"}`); rs.Data.StepCount != 4 {
		t.Fatalf("state counts %d steps, want the 4 that the calls made", rs.Data.StepCount)
	}
}

// TestMCPFrames: an "mcp" frame carries MCP's JSON-RPC over the
// connection: tools/list with inputSchema, tools/call as a
// CallToolResult, whose reward the next observation frame reports; bad
// requests are JSON-RPC errors and the connection goes on.
func TestMCPFrames(t *testing.T) {
	f := newFake("bob")
	f.tools = toolsJSON(t, "claim", "wait")
	score := 3.0
	f.script = []httpgw.StepReply{
		{Observations: obsOf("bob")},
		{Observations: obsOf("bob"), Rewards: 2},
		{Observations: obsOf(), Rewards: 1, Done: true, Status: "finished", Score: &score},
	}
	s := newTestServer(t, f, Config{})
	e := &episode{srv: s}
	for _, tc := range []struct {
		frame, id string
		code      int
	}{
		{`{"type":"mcp","data":{}}`, "null", rpcInvalidRequest},
		{`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","id":1,"extra":2}}`, "null", rpcInvalidRequest},
		{`{"type":"mcp","data":{"jsonrpc":"1.0","method":"tools/list","id":"a"}}`, `"a"`, rpcInvalidRequest},
		{`{"type":"mcp","data":{"jsonrpc":"2.0","method":"prompts/list","id":7}}`, "7", rpcMethodNotFound},
		{`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}},"id":8}}`, "8", rpcInvalidParams},
		{`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait"},"id":9}}`, "9", rpcServerError}, // before reset
	} {
		r := sendTool(t, e, tc.frame)
		if r.Type != "mcp" || r.Data.JSONRPC != "2.0" || string(r.Data.ID) != tc.id || r.Data.Error == nil || r.Data.Error.Code != tc.code || r.Data.Error.Message == "" {
			t.Fatalf("%s: %+v, want JSON-RPC error %d with id %s", tc.frame, r.Data, tc.code, tc.id)
		}
	}
	r := sendTool(t, e, `{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","id":2}}`)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Data.Result, &list); err != nil || len(list.Tools) != len(agents.ToolDefs())+1 || len(list.Tools[0].InputSchema) == 0 || string(r.Data.ID) != "2" {
		t.Fatalf("tools/list before reset: %s (%v), want every action's tools with inputSchema", r.Data.Result, err)
	}

	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	r = sendTool(t, e, `{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"claim","arguments":{}},"id":3}}`)
	var res callResult
	if err := json.Unmarshal(r.Data.Result, &res); err != nil || !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, `"task"`) {
		t.Fatalf("tools/call with bad arguments: %s (%v), want an isError result saying what is wrong", r.Data.Result, err)
	}
	r = sendTool(t, e, `{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"claim","arguments":{"task":"api"}},"id":"c"}}`)
	var ok struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		StructuredContent observation `json:"structuredContent"`
		IsError           bool        `json:"isError"`
	}
	if err := json.Unmarshal(r.Data.Result, &ok); err != nil || ok.IsError || ok.StructuredContent.EpisodeID != "s1" || ok.StructuredContent.Seats["bob"] == nil || len(ok.Content) != 1 || ok.Content[0].Type != "text" {
		t.Fatalf("tools/call: %s (%v), want the next observation as structuredContent and text", r.Data.Result, err)
	}
	var text observation
	if err := json.Unmarshal([]byte(ok.Content[0].Text), &text); err != nil || text.EpisodeID != "s1" {
		t.Fatalf("tools/call's text %q is not the observation's JSON: %v", ok.Content[0].Text, err)
	}
	// The call's reward (2) and the next's (1), which ends the episode,
	// wait for the next observation frame: list_tools takes none, a step
	// after the end is refused, observe shows the end with them.
	r = sendTool(t, e, `{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait","arguments":{}},"id":4}}`)
	if err := json.Unmarshal(r.Data.Result, &ok); err != nil || ok.IsError || ok.StructuredContent.Status != "finished" || ok.StructuredContent.Score == nil {
		t.Fatalf("the last tools/call: %s (%v), want the end with its score", r.Data.Result, err)
	}
	if r := sendTool(t, e, `{"type":"step","data":{"type":"list_tools"}}`); *r.Data.Reward != 0 || !r.Data.Done {
		t.Fatalf("list_tools after the end: %+v, want reward 0 and done", r.Data)
	}
	if r, _ := send(t, e, `{"type":"step","data":{"actions":{}}}`); r.Data.Code != CodeSession {
		t.Fatalf("a step after the end: %+v, want SESSION_ERROR", r)
	}
	rs := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe"}}`)
	if rs.Data.Reward == nil || *rs.Data.Reward != 3 || !rs.Data.Done || rs.Data.Observation.Error != nil {
		t.Fatalf("observe after an mcp call ended the episode: %+v, want the calls' 2 and 1, done", rs.Data)
	}
	if rs := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe"}}`); *rs.Data.Reward != 0 {
		t.Fatalf("observe again: %+v, want reward 0 (reported once)", rs.Data)
	}
}

// TestObserveWaits: observe when the last observation asked no seat waits
// for the next turn (one step answering nothing) and shows it.
func TestObserveWaits(t *testing.T) {
	f := newFake("bob")
	f.tools = toolsJSON(t, "wait")
	f.script = []httpgw.StepReply{
		{Observations: obsOf("bob")},
		{Observations: obsOf()}, // the wait ran out
		{Observations: obsOf("bob"), Rewards: 2},
	}
	e := &episode{srv: newTestServer(t, f, Config{})}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{"for":"1h"}}}`)
	r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe","arguments":{}}}`)
	var seen observation
	if o := r.Data.Observation; o == nil || o.Result == nil || json.Unmarshal(*o.Result, &seen) != nil || seen.Seats["bob"] == nil || *r.Data.Reward != 2 {
		t.Fatalf("observe with no turn waiting: %+v, want bob's next turn and its reward", r)
	}
	_, _, st := f.snapshot()
	if len(st) != 3 || st[2].Actions != nil {
		t.Fatalf("steps %+v, want reset's, wait's and one answering nothing", st)
	}
}

// TestStepTakesQueuedCalls: a plain step sends the tool calls already made
// of the turns it does not answer itself.
func TestStepTakesQueuedCalls(t *testing.T) {
	f := newFake("bob", "carol")
	f.tools = toolsJSON(t, "claim", "wait")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob", "carol")}, {Observations: obsOf("bob")}}
	e := &episode{srv: newTestServer(t, f, Config{})}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"api"}}}`)
	if r, _ := send(t, e, `{"type":"step","data":{"actions":{"carol":[{"type":"wait"}]}}}`); r.Type != "observation" {
		t.Fatalf("step: %+v", r)
	}
	_, _, st := f.snapshot()
	got := st[len(st)-1].Actions
	if len(st) != 2 || !slices.Equal(got["bob"], []org.Action{{Type: "claim", Task: "api"}}) || !slices.Equal(got["carol"], []org.Action{{Type: "wait"}}) {
		t.Fatalf("the step sent %+v, want bob's call and carol's wait", got)
	}
	if len(e.queued) != 0 {
		t.Fatalf("calls %v still kept after the step sent them", e.queued)
	}
}

func twoSeatsAsked(t *testing.T) (*fakeOps, *episode) {
	t.Helper()
	f := newFake("bob", "carol")
	f.tools = toolsJSON(t, "claim", "wait")
	f.script = []httpgw.StepReply{{Observations: obsOf("bob", "carol")}, {Observations: obsOf("bob", "carol"), Rewards: 1}}
	e := &episode{srv: newTestServer(t, f, Config{})}
	send(t, e, `{"type":"reset","data":{"world":"startup"}}`)
	return f, e
}

func (f *fakeOps) failSteps(err error) {
	f.mu.Lock()
	f.stepErr = err
	f.mu.Unlock()
}

// TestCallsKeptThroughAFailedStep: a step the gateway refuses sent
// nothing, so the calls kept before it stay kept, and a call naming no
// seat still goes to the seat that waits (a 400 of a plain step; a 409 of
// the call that would have sent them, whose own call is dropped).
func TestCallsKeptThroughAFailedStep(t *testing.T) {
	for _, tc := range []struct{ name, failing string }{
		{"a plain step", `{"type":"step","data":{"actions":{"zed":[]}}}`},
		{"the last call", `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, e := twoSeatsAsked(t)
			sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"api"}}}`) // kept: bob's
			f.failSteps(&httpgw.Error{Status: http.StatusConflict, Msg: "another step of the session is running"})
			if r, _ := send(t, e, tc.failing); r.Type != "error" {
				t.Fatalf("a refused step answered %+v", r)
			}
			f.failSteps(nil)
			sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`) // carol's
			_, _, st := f.snapshot()
			got := st[len(st)-1].Actions
			if !slices.Equal(got["bob"], []org.Action{{Type: "claim", Task: "api"}}) || !slices.Equal(got["carol"], []org.Action{{Type: "wait"}}) {
				t.Fatalf("after the refused step the calls sent %+v, want bob's claim and carol's wait", got)
			}
		})
	}
}

// TestObserveAfterTheSessionIsGone: once a step finds the session gone,
// observe shows the end, not the turns that waited.
func TestObserveAfterTheSessionIsGone(t *testing.T) {
	f, e := twoSeatsAsked(t)
	sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"api"}}}`)
	f.failSteps(&httpgw.Error{Status: http.StatusNotFound, Msg: "unknown session"})
	if r, _ := send(t, e, `{"type":"step","data":{"actions":{}}}`); r.Data.Code != CodeSession {
		t.Fatalf("a step of a session gone: %+v, want SESSION_ERROR", r)
	}
	r := sendTool(t, e, `{"type":"step","data":{"type":"call_tool","tool_name":"observe"}}`)
	var res observation
	if o := r.Data.Observation; o == nil || o.Result == nil || json.Unmarshal(*o.Result, &res) != nil || len(res.Seats) != 0 || res.Status != "stopped" || !r.Data.Done {
		t.Fatalf("observe after the session went: %+v, want the end (stopped), no seat", r)
	}
}

// TestRewardsAddUpInAnyOrder: whatever frames a client sends — calls with
// and without a seat, plain steps, observe, list_tools, mcp calls, state —
// the rewards its observation frames report add up to what the steps
// brought, each once, once it observes after the end.
func TestRewardsAddUpInAnyOrder(t *testing.T) {
	frames := []string{
		`{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{},"member":"bob"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{},"member":"carol"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"observe"}}`,
		`{"type":"step","data":{"type":"list_tools"}}`,
		`{"type":"step","data":{"actions":{}}}`,
		`{"type":"step","data":{"actions":{"carol":[]}}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait"},"id":1}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait","member":"carol"},"id":1}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"observe"},"id":1}}`,
		`{"type":"state"}`,
	}
	const observe, plainStep = 3, 5
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		f := newFake("bob", "carol")
		f.tools = toolsJSON(t, "claim", "wait")
		for i := range 8 {
			r := httpgw.StepReply{Observations: obsOf(), Rewards: float64(i + 1)}
			switch rng.IntN(3) {
			case 0:
				r.Observations = obsOf("bob", "carol")
			case 1:
				r.Observations = obsOf("carol")
			}
			f.script = append(f.script, r)
		}
		e := &episode{srv: New(f, Config{})}
		reported := 0.0
		var sent []string
		do := func(frame string) {
			out, _ := e.handle(t.Context(), []byte(frame))
			var r rewarded
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("%s: %s is not JSON", frame, out)
			}
			if r.Type == "observation" && r.Data.Reward != nil {
				reported += *r.Data.Reward
			}
			sent = append(sent, frame+" -> "+string(out))
		}
		do(`{"type":"reset","data":{"world":"startup"}}`)
		for range 14 {
			do(frames[rng.IntN(len(frames))])
		}
		for i := 0; i < 20 && !e.done; i++ {
			do(frames[plainStep])
		}
		do(frames[observe])
		e.srv.Close()
		_, _, st := f.snapshot()
		want := 0.0
		for i := range min(len(st), len(f.script)) {
			want += f.script[i].Rewards
		}
		if reported != want || !e.done {
			t.Fatalf("seed %d: the frames reported %v of rewards, the steps brought %v (done %v):\n%s", seed, reported, want, e.done, strings.Join(sent, "\n"))
		}
	}
}
