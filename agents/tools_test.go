package agents_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

type toolJSON struct {
	Type     string `json:"type"`
	Function struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		} `json:"parameters"`
	} `json:"function"`
}

func mustTools(tb testing.TB) []toolJSON {
	tb.Helper()
	var tools []toolJSON
	dec := json.NewDecoder(bytes.NewReader(agents.Tools()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tools); err != nil {
		tb.Fatalf("Tools() is not a JSON array of tools: %v", err)
	}
	return tools
}

func TestToolsOnePerActionType(t *testing.T) {
	tools := mustTools(t)
	if len(tools) != len(org.ActionTypes) {
		t.Fatalf("got %d tools, want %d", len(tools), len(org.ActionTypes))
	}
	for i, tool := range tools {
		f := tool.Function
		if tool.Type != "function" || f.Name != org.ActionTypes[i] {
			t.Errorf("tool %d: got %s %q, want function %q", i, tool.Type, f.Name, org.ActionTypes[i])
		}
		if len(f.Description) < 80 {
			t.Errorf("%s: description too short to say costs and rules: %q", f.Name, f.Description)
		}
		p := f.Parameters
		if p.Type != "object" || p.AdditionalProperties == nil || *p.AdditionalProperties {
			t.Errorf("%s: parameters must be an object with additionalProperties false", f.Name)
		}
		for _, r := range p.Required {
			if _, ok := p.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", f.Name, r)
			}
		}
	}
	if !bytes.Equal(agents.Tools(), agents.Tools()) {
		t.Error("Tools() differs between calls")
	}
}

func TestToolDescriptionsStateCosts(t *testing.T) {
	want := map[string][]string{
		org.ActClaim:           {"5 minutes", "role-required", "queue-order", "wip-limit", "hand it off"},
		org.ActWork:            {"2h", "ends your turn", "dependencies-first", "budget"},
		org.ActComplete:        {"15 minutes", "work-done", "approval-required", "within-budget", "info-required"},
		org.ActRequestApproval: {"10 minutes", "as soon as you hold the task"},
		org.ActApprove:         {"10 minutes", "separation-of-duties", "approver-authority"},
		org.ActReject:          {"10 minutes", "separation-of-duties"},
		org.ActMessage:         {"5 minutes", "10 minutes later", "4000 bytes"},
		org.ActWait:            {"1 minute", "ends your turn"},
	}
	for _, tool := range mustTools(t) {
		for _, w := range want[tool.Function.Name] {
			if !strings.Contains(tool.Function.Description, w) {
				t.Errorf("%s: description does not mention %q", tool.Function.Name, w)
			}
		}
	}
}

func TestActionFromToolCall(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             org.Action
		err              string
	}{
		{"claim", "claim", `{"task":"api"}`, org.Action{Type: "claim", Task: "api"}, ""},
		{"work with for", "work", `{"task":"api","for":"30m"}`, org.Action{Type: "work", Task: "api", For: "30m"}, ""},
		{"work", "work", ` {"task":"api"} `, org.Action{Type: "work", Task: "api"}, ""},
		{"complete", "complete", `{"task":"api"}`, org.Action{Type: "complete", Task: "api"}, ""},
		{"request approval", "request_approval", `{"task":"servers"}`, org.Action{Type: "request_approval", Task: "servers"}, ""},
		{"approve", "approve", `{"request":"r2"}`, org.Action{Type: "approve", Request: "r2"}, ""},
		{"reject", "reject", `{"request":"r2","reason":"over budget"}`, org.Action{Type: "reject", Request: "r2", Reason: "over budget"}, ""},
		{"message", "message", `{"to":"frank","text":"hello","reply_to":"m1"}`, org.Action{Type: "message", To: "frank", Text: "hello", ReplyTo: "m1"}, ""},
		{"wait", "wait", `{}`, org.Action{Type: "wait"}, ""},
		{"wait no arguments", "wait", ``, org.Action{Type: "wait"}, ""},
		{"wait for", "wait", `{"for":"1h"}`, org.Action{Type: "wait", For: "1h"}, ""},
		{"wait until", "wait", `{"until":86400000}`, org.Action{Type: "wait", Until: 86400000}, ""},
		{"optional null", "work", `{"task":"api","for":null}`, org.Action{Type: "work", Task: "api"}, ""},

		{"unknown tool", "deploy", `{}`, org.Action{}, `unknown tool "deploy"`},
		{"empty tool name", "", `{}`, org.Action{}, `unknown tool ""`},
		{"malformed JSON", "claim", `{"task":"api"`, org.Action{}, "not a JSON object"},
		{"not an object", "claim", `["api"]`, org.Action{}, "not a JSON object"},
		{"null", "claim", `null`, org.Action{}, "null, not a JSON object"},
		{"trailing data", "claim", `{"task":"api"} {"task":"ui"}`, org.Action{}, "trailing data"},
		{"unknown argument", "claim", `{"task":"api","priority":1}`, org.Action{}, `claim has no argument "priority" (arguments: task)`},
		{"missing argument", "claim", `{}`, org.Action{}, `claim needs the argument "task"`},
		{"missing reason", "reject", `{"request":"r1"}`, org.Action{}, `reject needs the argument "reason"`},
		{"blank argument", "message", `{"to":"bob","text":"  "}`, org.Action{}, `argument "text" of message must not be blank`},
		{"wrong type", "claim", `{"task":42}`, org.Action{}, `argument "task" of claim must be a string, got 42`},
		{"wrong integer", "wait", `{"until":"soon"}`, org.Action{}, `argument "until" of wait must be an integer`},
		{"topic is not for agents", "message", `{"to":"bob","text":"x","topic":"secrets"}`, org.Action{}, `no argument "topic"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agents.ActionFromToolCall(tc.tool, []byte(tc.args))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %+v", err, tc.want)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Every property a tool declares is accepted by ActionFromToolCall, and the
// required ones are enforced: the schema and the parser agree.
func TestToolSchemasMatchParser(t *testing.T) {
	for _, tool := range mustTools(t) {
		f := tool.Function
		args := map[string]any{}
		for name, raw := range f.Parameters.Properties {
			var p struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			switch p.Type {
			case "string":
				args[name] = "x1"
			case "integer":
				args[name] = 5
			case "object":
				args[name] = map[string]any{"amount": 5}
			case "array":
				args[name] = []string{"x1", "x2"}
			default:
				t.Errorf("%s.%s: unexpected type %q", f.Name, name, p.Type)
			}
		}
		b, _ := json.Marshal(args)
		if _, err := agents.ActionFromToolCall(f.Name, b); err != nil {
			t.Errorf("%s with every argument: %v", f.Name, err)
		}
		for _, r := range f.Parameters.Required {
			partial := map[string]any{}
			for k, v := range args {
				if k != r {
					partial[k] = v
				}
			}
			b, _ := json.Marshal(partial)
			if _, err := agents.ActionFromToolCall(f.Name, b); err == nil {
				t.Errorf("%s without required %q: no error", f.Name, r)
			}
		}
	}
}

func FuzzActionFromToolCall(f *testing.F) {
	f.Add("claim", []byte(`{"task":"api"}`))
	f.Add("wait", []byte(`{"until":1}`))
	f.Add("message", []byte(`{"to":"a","text":"b"}`))
	f.Add("reject", []byte(`{"request":"r1","reason":""}`))
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		a, err := agents.ActionFromToolCall(name, args)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if a.Type != name || !slices.Contains(org.ActionTypes, a.Type) {
			t.Fatalf("tool %q gave an action of type %q", name, a.Type)
		}
	})
}

func TestToolCallFromAction(t *testing.T) {
	tests := []struct {
		name   string
		action org.Action
		tool   string
		args   string
		err    string
	}{
		{"claim", org.Action{Type: "claim", Task: "api"}, "claim", `{"task":"api"}`, ""},
		{"work for", org.Action{Type: "work", Task: "api", For: "30m"}, "work", `{"task":"api","for":"30m"}`, ""},
		{"complete", org.Action{Type: "complete", Task: "api"}, "complete", `{"task":"api"}`, ""},
		{"handoff to", org.Action{Type: "handoff", Task: "api", To: "carol"}, "handoff", `{"task":"api","to":"carol"}`, ""},
		{"handoff to the queue", org.Action{Type: "handoff", Task: "api"}, "handoff", `{"task":"api"}`, ""},
		{"request approval", org.Action{Type: "request_approval", Task: "servers"}, "request_approval", `{"task":"servers"}`, ""},
		{"approve", org.Action{Type: "approve", Request: "r2"}, "approve", `{"request":"r2"}`, ""},
		{"reject", org.Action{Type: "reject", Request: "r2", Reason: "over budget"}, "reject", `{"request":"r2","reason":"over budget"}`, ""},
		{"escalate", org.Action{Type: "escalate", Request: "r1"}, "escalate", `{"request":"r1"}`, ""},
		{"message in parameter order", org.Action{Type: "message", ReplyTo: "m1", Text: "a <b> & \"c\"", To: "frank"}, "message",
			`{"to":"frank","text":"a <b> & \"c\"","reply_to":"m1"}`, ""},
		{"wait", org.Action{Type: "wait"}, "wait", `{}`, ""},
		{"wait until", org.Action{Type: "wait", Until: 86400000}, "wait", `{"until":86400000}`, ""},

		{"unknown type", org.Action{Type: "invalid", Text: "bad call"}, "", "", `action type "invalid" is no tool`},
		{"no type", org.Action{Task: "api"}, "", "", `action type "" is no tool`},
		{"topic", org.Action{Type: "message", To: "bob", Text: "x", Topic: "secrets"}, "", "", "message has no argument for the action's topic"},
		{"field of another tool", org.Action{Type: "claim", Task: "api", Request: "r1"}, "", "", "claim has no argument for the action's request"},
		{"missing task", org.Action{Type: "claim"}, "", "", `claim needs the argument "task"`},
		{"blank reason", org.Action{Type: "reject", Request: "r1", Reason: " "}, "", "", `argument "reason" of reject must not be blank`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, args, err := agents.ToolCallFromAction(tc.action)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %s %s, %v; want an error containing %q", tool, args, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %s %s", err, tc.tool, tc.args)
			}
			if tool != tc.tool || string(args) != tc.args {
				t.Fatalf("got %s %s, want %s %s", tool, args, tc.tool, tc.args)
			}
			back, err := agents.ActionFromToolCall(tool, args)
			if err != nil || back != tc.action {
				t.Fatalf("round trip: got %+v, %v; want %+v", back, err, tc.action)
			}
		})
	}
}

// Whatever tool call parses into an action is said again, by
// ToolCallFromAction, as a call that parses into the same action.
func FuzzToolCallRoundTrip(f *testing.F) {
	f.Add("claim", []byte(`{"task":"api"}`))
	f.Add("wait", []byte(`{"until":1,"for":"2h"}`))
	f.Add("message", []byte(`{"reply_to":"m3","to":"a","text":"<b>\u00e9\n"}`))
	f.Add("reject", []byte(`{"request":"r1","reason":"no"}`))
	f.Add("handoff", []byte(`{"task":"t","to":null}`))
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		a, err := agents.ActionFromToolCall(name, args)
		if err != nil {
			return
		}
		tool, again, err := agents.ToolCallFromAction(a)
		if err != nil {
			t.Fatalf("%s %s parses into %+v, which ToolCallFromAction refuses: %v", name, args, a, err)
		}
		back, err := agents.ActionFromToolCall(tool, again)
		if err != nil || back != a {
			t.Fatalf("%+v became %s %s and came back as %+v, %v", a, tool, again, back, err)
		}
	})
}

// A world's tools name its record types and their fields; a world without
// systems has no record tools.
func TestToolsForWorld(t *testing.T) {
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	var get *agents.Tool
	defs := agents.ToolDefsFor(w)
	for i := range defs {
		if defs[i].Function.Name == org.ActGet {
			get = &defs[i]
		}
	}
	if get == nil {
		t.Fatal("billing-support has no get tool")
	}
	if e := get.Function.Parameters.Properties["record"].Enum; len(e) != 2 || e[0] != "account" || e[1] != "invoice" {
		t.Errorf("record enum %v, want [account invoice]", e)
	}
	if d := get.Function.Description; !strings.Contains(d, "status (paid|refunded)") || !strings.Contains(d, "invoice (id of a invoice)") {
		t.Errorf("get's description does not list the fields: %s", d)
	}
	s, _ := worlds.Shipped("startup")
	for _, d := range agents.ToolDefsFor(s) {
		if slices.Contains(org.RecordActions, d.Function.Name) {
			t.Errorf("startup has the record tool %s", d.Function.Name)
		}
		if d.Function.Name == org.ActOpenCase {
			t.Errorf("startup, a world with no case template, has the tool %s", d.Function.Name)
		}
	}
	if !slices.ContainsFunc(defs, func(d agents.Tool) bool { return d.Function.Name == org.ActOpenCase }) {
		t.Errorf("billing-support, a world with case templates, has no %s tool", org.ActOpenCase)
	}
}

// The record tools' actions survive as tool calls (what export writes and
// an LLM sends back).
func TestRecordToolCallsRoundTrip(t *testing.T) {
	for _, a := range []org.Action{
		{Type: org.ActGet, Record: "invoice", ID: "inv-7"},
		{Type: org.ActSearch, Record: "account", Fields: payload.NewActionAttrs(payload.Attrs{"invoice": "inv-7"}), Page: 2},
		{Type: org.ActUpdate, Record: "invoice", ID: "inv-7", Fields: payload.NewActionAttrs(payload.Attrs{"refunded": int64(120), "status": "refunded"})},
		{Type: org.ActCreate, Record: "note", ID: "n-1"},
		{Type: org.ActDelete, Record: "note", ID: "n-1"},
	} {
		name, args, err := agents.ToolCallFromAction(a)
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		back, err := agents.ActionFromToolCall(name, args)
		if err != nil || back != a {
			t.Errorf("%s %s: came back as %+v (%v), want %+v", name, args, back, err, a)
		}
	}
	if _, err := agents.ActionFromToolCall(org.ActUpdate, []byte(`{"record":"invoice","id":"inv-7"}`)); err == nil {
		t.Error("an update without fields was accepted")
	}
}
