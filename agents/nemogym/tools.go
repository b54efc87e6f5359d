package nemogym

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/worlds"
)

// Tool is a tool in the Responses API's function-tool shape, as NeMo Gym
// task rows list them under responses_create_params.tools.
type Tool struct {
	Type        string            `json:"type"` // always "function"
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Parameters  agents.ToolSchema `json:"parameters"`
	Strict      bool              `json:"strict"` // false: most tools have optional arguments
}

// observeDescription is the observe tool's description.
const observeDescription = "See your observation now: waits until you are asked to decide (your turn) and returns the turn number " +
	"and what you can see (JSON: your tasks, the tasks you may take, approvals, messages, budget, projects, and the actions of yours " +
	"refused since your last turn), or that the session has ended with the team score. Every other tool answers your turn with " +
	"its action and returns what came of it and your next observation."

// Tools returns the adapter's tools: every action of agents.ToolDefs, in
// its order, then observe.
func Tools() []Tool { return tools(agents.ToolDefs()) }

// ToolsOf returns the tools of a session of world w: its actions as
// `corpsim tools --world` lists them (agents.ToolDefsFor: the record tools
// only in a world with systems, naming its record types and fields), then
// observe.
func ToolsOf(w *worlds.World) []Tool { return tools(agents.ToolDefsFor(w)) }

func tools(defs []agents.Tool) []Tool {
	out := make([]Tool, 0, len(defs)+1)
	for _, d := range defs {
		out = append(out, Tool{Type: "function", Name: d.Function.Name, Description: d.Function.Description, Parameters: d.Function.Parameters})
	}
	return append(out, Tool{Type: "function", Name: "observe", Description: observeDescription,
		Parameters: agents.ToolSchema{Type: "object", Properties: map[string]agents.ToolProperty{}, Required: []string{}}})
}

// responsesTools returns the tools of a session from its create reply's
// tools (wire.CreateReply.Tools: its world's actions in the chat shape),
// and observe; every action when the reply has none.
func responsesTools(chat json.RawMessage) ([]Tool, error) {
	if len(chat) == 0 {
		return Tools(), nil
	}
	var defs []agents.Tool
	if err := json.Unmarshal(chat, &defs); err != nil {
		return nil, fmt.Errorf("its tools do not decode: %v", err)
	}
	return tools(defs), nil
}

// toolsJSON is GET /nemo/tools' answer.
var toolsJSON = encodeTools(Tools())

func encodeTools(t []Tool) []byte {
	b, err := json.Marshal(t)
	if err != nil {
		panic("nemogym: tools do not encode: " + err.Error())
	}
	return append(b, '\n')
}

// worldTools are GET /nemo/tools?world=W's answers, by shipped world.
var worldTools sync.Map // name -> []byte

// toolsOfWorld is the encoded tools of the shipped world name, or an error
// naming the shipped worlds.
func toolsOfWorld(name string) ([]byte, error) {
	if b, ok := worldTools.Load(name); ok {
		return b.([]byte), nil
	}
	w, err := worlds.Shipped(name)
	if err != nil {
		return nil, err
	}
	b := encodeTools(ToolsOf(w))
	worldTools.Store(name, b)
	return b, nil
}
