package openenv

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/httpgw"
)

// FuzzHandleFrame: whatever a client sends on /openenv/ws, the episode
// answers with one JSON frame of a known type (or, for close, none) and
// does not panic, before an episode and within one; a step or state it
// answers is of the episode it holds.
func FuzzHandleFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"reset","data":{"world":"startup"}}`,
		benchStepFrame,
		`{"type":"step","data":{"actions":{"bob":[]}}}`,
		`{"type":"step","data":null}`,
		`{"type":"step","data":{"actions":{"bob":[{"type":"claim","task":"t7","x":1}]}}}`,
		`{"type":"step","data":{"actions":{}},"data":{"actions":{"bob":[]}}}`,
		`{"type":"state"}`,
		`{"type":"close"}`,
		`{"type":"step","data":{"type":"list_tools"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"wait","arguments":{}}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"observe","arguments":null,"member":"bob"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":[1]}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wait"},"id":1}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","id":{"a":1}}}`,
		`{"type":"mcp","data":null}`,
		`{"type":5}`,
		`{"type":"step","extra":1}`,
		`[]`,
		`{"type":"step","data":{"actions":{"bob":[]}}} trailing`,
		`{`,
		``,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, frame string, reset bool) {
		fake := newFake("bob")
		fake.script = []httpgw.StepReply{{Observations: obsOf("bob")}, {Observations: obsOf("bob")}, {Observations: obsOf("bob")}}
		s := New(fake, Config{Logger: hclog.NewNullLogger()})
		defer s.Close()
		e := &episode{srv: s}
		if reset {
			if out, _ := e.handle(context.Background(), []byte(`{"type":"reset","data":{"world":"startup"}}`)); out == nil {
				t.Fatal("reset: no reply")
			}
		}
		out, quit := e.handle(context.Background(), []byte(frame))
		if out == nil {
			if !quit {
				t.Fatalf("%q: no reply, and not a close", frame)
			}
			return
		}
		var r struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%q: the reply %s is not JSON: %v", frame, out, err)
		}
		switch r.Type {
		case "observation", "state", "error":
		case "mcp":
			var d rpcResponse
			if err := json.Unmarshal(r.Data, &d); err != nil || d.JSONRPC != "2.0" || (d.Result == nil) == (d.Error == nil) {
				t.Fatalf("%q: an mcp reply without exactly one of result and error: %s", frame, out)
			}
		default:
			t.Fatalf("%q: a reply of type %q: %s", frame, r.Type, out)
		}
		if r.Type == "error" {
			var d errData
			if err := json.Unmarshal(r.Data, &d); err != nil || d.Code == "" || d.Message == "" {
				t.Fatalf("%q: an error without a code or a message: %s", frame, out)
			}
		}
	})
}

// FuzzFrameSequence: a sequence of frames (one a line) on a connection
// whose two seats are asked at once: every frame is answered with a frame
// of a known type, nothing panics, and the rewards the observation frames
// report never exceed what the steps brought (every reward is reported at
// most once; the tests of each route check it is reported at all).
func FuzzFrameSequence(f *testing.F) {
	for _, seed := range []string{
		"{\"type\":\"reset\",\"data\":{\"world\":\"startup\"}}\n{\"type\":\"step\",\"data\":{\"type\":\"call_tool\",\"tool_name\":\"wait\",\"arguments\":{}}}\n{\"type\":\"step\",\"data\":{\"type\":\"call_tool\",\"tool_name\":\"wait\"}}",
		"{\"type\":\"reset\",\"data\":{\"world\":\"startup\"}}\n{\"type\":\"mcp\",\"data\":{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"wait\",\"member\":\"carol\"},\"id\":1}}\n{\"type\":\"step\",\"data\":{\"actions\":{}}}\n{\"type\":\"step\",\"data\":{\"type\":\"call_tool\",\"tool_name\":\"observe\"}}",
		"{\"type\":\"reset\",\"data\":{\"world\":\"startup\"}}\n{\"type\":\"step\",\"data\":{\"type\":\"list_tools\"}}\n{\"type\":\"state\"}\n{\"type\":\"reset\",\"data\":{}}\n{\"type\":\"step\",\"data\":{\"type\":\"call_tool\",\"tool_name\":\"observe\"}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frames string) {
		fake := newFake("bob", "carol")
		fake.tools = `[{"type":"function","function":{"name":"wait"}},{"type":"function","function":{"name":"claim"}}]`
		for i := range 6 {
			fake.script = append(fake.script, httpgw.StepReply{Observations: obsOf(), Rewards: 1})
			if i%2 == 0 {
				fake.script[i].Observations = obsOf("bob", "carol")
			}
		}
		s := New(fake, Config{Logger: hclog.NewNullLogger()})
		defer s.Close()
		e := &episode{srv: s}
		reported := 0.0
		for i, frame := range strings.SplitN(frames, "\n", 12) {
			if i == 11 {
				break
			}
			out, quit := e.handle(context.Background(), []byte(frame))
			if quit {
				return
			}
			var r rewarded
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("%q: the reply %s is not JSON: %v", frame, out, err)
			}
			switch r.Type {
			case "observation", "state", "error", "mcp":
			default:
				t.Fatalf("%q: a reply of type %q", frame, r.Type)
			}
			if r.Type == "observation" && r.Data.Reward != nil {
				reported += *r.Data.Reward
			}
			_, _, steps := fake.snapshot()
			if given := float64(min(len(steps), len(fake.script))); reported > given+1e-9 {
				t.Fatalf("after %q: observation frames reported %v of rewards, the %d steps brought %v", frame, reported, len(steps), given)
			}
		}
	})
}
