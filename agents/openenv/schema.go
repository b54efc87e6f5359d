package openenv

import (
	"encoding/json"
	"sync"

	"github.com/invopop/jsonschema"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/org"
)

// schemaJSON is the body of GET /openenv/schema: OpenEnv's SchemaResponse,
// {"action", "observation", "state"}, each a JSON Schema (draft 2020-12).
// The action's title is not "Action": verifiers takes that title for an
// MCP environment's generic action.
var schemaJSON = sync.OnceValue(func() []byte {
	return encode(map[string]any{
		"action":      actionSchema(),
		"observation": observationSchema(),
		"state":       stateSchema(),
	})
})

const draft = "https://json-schema.org/draft/2020-12/schema"

// actionSchema is a step's data: {"actions": {member: [action…]}}, each
// action one of corpsim's action types with the arguments `corpsim tools`
// lists.
func actionSchema() map[string]any {
	var oneOf []any
	for _, t := range agents.ToolDefs() {
		props := map[string]any{"type": map[string]any{"const": t.Function.Name}}
		for name, p := range t.Function.Parameters.Properties { // order: each property goes to its own key
			props[name] = p
		}
		oneOf = append(oneOf, map[string]any{
			"title":                t.Function.Name,
			"description":          t.Function.Description,
			"type":                 "object",
			"properties":           props,
			"required":             append([]string{"type"}, t.Function.Parameters.Required...),
			"additionalProperties": false,
		})
	}
	return map[string]any{
		"$schema":     draft,
		"title":       "CorpsimStepAction",
		"description": "Answers the turns of the previous observation, by member: the actions each remote seat takes now. A member without an entry waits; {} waits for all.",
		"type":        "object",
		"properties": map[string]any{
			"actions": map[string]any{
				"description":          "member -> the actions of its turn, applied in order",
				"type":                 "object",
				"additionalProperties": map[string]any{"type": "array", "maxItems": org.MaxActions, "items": map[string]any{"$ref": "#/$defs/Action"}},
			},
			"metadata": map[string]any{"type": "object", "description": "OpenEnv's action metadata; ignored"},
		},
		"additionalProperties": false,
		"$defs":                map[string]any{"Action": map[string]any{"oneOf": oneOf}},
	}
}

// observationSchema is an observation reply's "observation": the seats
// asked now, each with org.Observation's schema, reflected from the type
// the engine encodes.
func observationSchema() map[string]any {
	r := jsonschema.Reflector{DoNotReference: false, ExpandedStruct: false}
	b, err := json.Marshal(r.Reflect(&org.Observation{}))
	if err != nil {
		panic("openenv: the observation schema does not encode: " + err.Error())
	}
	var seat map[string]any
	if err := json.Unmarshal(b, &seat); err != nil {
		panic("openenv: the observation schema does not decode: " + err.Error())
	}
	defs, _ := seat["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
	}
	return map[string]any{
		"$schema":     draft,
		"title":       "CorpsimObservation",
		"description": "The seats asked to decide now, each with its own view of the company; once done, the session's status and final team score.",
		"type":        "object",
		"properties": map[string]any{
			"seats": map[string]any{
				"description":          "member -> its observation (echo nothing: the adapter answers the turn)",
				"type":                 "object",
				"additionalProperties": map[string]any{"$ref": "#/$defs/Observation"},
			},
			"episode_id": map[string]any{"type": "string", "description": "the corpsim session ID"},
			"status":     map[string]any{"type": "string", "enum": []string{"finished", "interrupted", "stopped"}, "description": "once done"},
			"score":      map[string]any{"type": "number", "description": "once done: the final team score"},
			"warnings":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"tools": map[string]any{"type": "array", "items": map[string]any{"type": "object"},
				"description": "reset's observation only: the world's actions as tool definitions in the OpenAI function-calling format (corpsim tools --world)"},
		},
		"required": []string{"seats", "episode_id"},
		"$defs":    defs,
	}
}

func stateSchema() map[string]any {
	return map[string]any{
		"$schema": draft,
		"title":   "CorpsimState",
		"type":    "object",
		"properties": map[string]any{
			"episode_id": map[string]any{"type": []string{"string", "null"}, "description": "the corpsim session ID; null before the first reset"},
			"step_count": map[string]any{"type": "integer", "minimum": 0, "description": "steps of this episode"},
			"done":       map[string]any{"type": "boolean"},
			"status":     map[string]any{"type": "string"},
			"world":      map[string]any{"type": "string"},
			"seed":       map[string]any{"type": "integer", "minimum": 0},
			"seats":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the remote members this connection plays"},
		},
		"required": []string{"episode_id", "step_count"},
	}
}

// metadataJSON is the body of GET /openenv/metadata: OpenEnv's
// EnvironmentMetadata, with exactly its fields.
var metadataJSON = sync.OnceValue(func() []byte {
	return encode(struct {
		Name             string  `json:"name"`
		Description      string  `json:"description"`
		ReadmeContent    *string `json:"readme_content"`
		Version          *string `json:"version"`
		Author           *string `json:"author"`
		DocumentationURL *string `json:"documentation_url"`
	}{
		Name: "corpsim",
		Description: "A simulated company that AI agents work inside: teams, roles, work queues, approvals, budgets, projects and arriving " +
			"requests. reset creates a session of a world (world, seed, load, agents); step answers the remote seats' turns with " +
			"{\"actions\": {member: [action…]}}; rewards add up to the team score.",
		Version: version(),
	})
})
