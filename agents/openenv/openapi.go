package openenv

import (
	"maps"
	"sync"
)

// apiVersion is the version of OpenEnv's HTTP standard these routes keep
// (openenv-http/1.x: the info.version `openenv validate` reads).
const apiVersion = "1.0.0"

// openapiJSON is the body of GET /openenv/openapi.json: the stateless
// routes, the JSON-RPC route and the informational ones, as OpenEnv's
// FastAPI server describes its own (`openenv validate` reads the version
// and the paths: /reset, /step and /state say simulation mode). The
// WebSocket /ws, which OpenAPI cannot describe, is in the description.
var openapiJSON = sync.OnceValue(func() []byte {
	withID := func(sch map[string]any, id string) map[string]any {
		out := maps.Clone(sch)
		out["$id"] = "https://corpsim.invalid/openenv/" + id // a base for the schema's own "#/$defs/…"
		return out
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	body := func(name string) map[string]any {
		return map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(name)}}}
	}
	answer := func(desc, name string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref(name)}}}
	}
	refusals := func(codes ...string) map[string]any {
		out := map[string]any{}
		for _, c := range codes {
			out[c] = answer(statusText[c], "Error")
		}
		return out
	}
	op := func(summary, desc string, secured bool, req map[string]any, ok map[string]any, errs map[string]any) map[string]any {
		o := map[string]any{"summary": summary, "description": desc, "responses": map[string]any{"200": ok}}
		maps.Copy(o["responses"].(map[string]any), errs)
		if req != nil {
			o["requestBody"] = req
		}
		if secured {
			o["security"] = []any{map[string]any{"operator": []any{}}, map[string]any{"basic": []any{}}}
		} else {
			o["security"] = []any{}
		}
		return o
	}
	stepResponse := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"observation": ref("Observation"),
			"reward":      map[string]any{"type": "number", "description": "the team reward recorded since the previous observation"},
			"done":        map[string]any{"type": "boolean"},
		},
		"required": []string{"observation", "reward", "done"},
	}
	resetRequest := map[string]any{
		"type":        "object",
		"description": "A create request: a shipped world's name or a world file's text, and the seats the caller plays (\"remote\").",
		"properties": map[string]any{
			"world":        map[string]any{"type": "string", "description": "a shipped world's name, as corpsim worlds lists them"},
			"source":       map[string]any{"type": "string", "description": "or a world file's text (YAML or JSON)"},
			"seed":         map[string]any{"type": []string{"integer", "null"}, "minimum": 0},
			"load":         map[string]any{"type": []string{"number", "null"}, "exclusiveMinimum": 0},
			"agents":       map[string]any{"type": []string{"string", "null"}, "description": `seats as for corpsim run, e.g. "greedy,bob=remote"; default: every agent seat remote`},
			"turn_timeout": map[string]any{"type": []string{"string", "null"}, "description": `per turn, e.g. "10s"`},
			"join_timeout": map[string]any{"type": []string{"string", "null"}},
			"episode_id":   map[string]any{"type": []string{"string", "null"}, "maxLength": 255, "description": "accepted and ignored: the episode's ID is the corpsim session's"},
		},
		"additionalProperties": false,
	}
	stepRequest := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action":     ref("Action"),
			"episode_id": map[string]any{"type": "string", "description": "the session reset returned"},
			"timeout_s":  map[string]any{"type": "number", "exclusiveMinimum": 0, "maximum": 600},
			"request_id": map[string]any{"type": "string"},
		},
		"required":             []string{"action", "episode_id"},
		"additionalProperties": false,
	}
	rpc := map[string]any{
		"type":        "object",
		"description": "JSON-RPC 2.0: a request (method) or a response (result or error)",
		"required":    []string{"jsonrpc"},
		"oneOf": []any{
			map[string]any{"required": []string{"method"}, "not": map[string]any{"anyOf": []any{map[string]any{"required": []string{"result"}}, map[string]any{"required": []string{"error"}}}}},
			map[string]any{"required": []string{"id", "result"}, "not": map[string]any{"required": []string{"error"}}},
			map[string]any{"required": []string{"id", "error"}, "not": map[string]any{"required": []string{"result"}}},
		},
		"additionalProperties": false,
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"method":  map[string]any{"type": "string"},
			"params":  map[string]any{"type": "object"},
			"id":      map[string]any{"type": []string{"string", "integer", "null"}},
			"result":  map[string]any{},
			"error": map[string]any{"type": "object", "required": []string{"code", "message"}, "properties": map[string]any{
				"code": map[string]any{"type": "integer"}, "message": map[string]any{"type": "string"}}},
		},
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "corpsim OpenEnv",
			"version": apiVersion,
			"description": "corpsim's sessions over OpenEnv's protocol. The stateful WebSocket GET /ws (one environment per " +
				"connection: reset, step, state, mcp and close frames) is the main route; the stateless routes below create and " +
				"step sessions by episode_id. Credentials: the operator token as a bearer token, or as the password of Basic credentials.",
		},
		"servers": []any{map[string]any{"url": "/openenv"}},
		"paths": map[string]any{
			"/reset": map[string]any{"post": op("Start an episode",
				"Creates a session and answers its first observation; the observation's episode_id names it.",
				true, body("ResetRequest"), answer("the first observation", "StepResponse"), refusals("401", "403", "413", "422", "503"))},
			"/step": map[string]any{"post": op("Step an episode",
				"Answers the turns of the episode's previous observation and returns the next. Tool actions are answered on /ws.",
				true, body("StepRequest"), answer("the next observation", "StepResponse"), refusals("401", "403", "404", "409", "413", "422", "502", "504"))},
			"/state": map[string]any{"get": map[string]any{
				"summary":     "An episode's state",
				"description": "Without episode_id, a fresh environment's state (open to all). With it, that session's (the operator's).",
				"parameters": []any{map[string]any{"name": "episode_id", "in": "query", "required": false,
					"schema": map[string]any{"type": "string"}}},
				"responses": map[string]any{"200": answer("the state", "State"), "401": answer(statusText["401"], "Error"),
					"403": answer(statusText["403"], "Error"), "404": answer(statusText["404"], "Error")},
			}},
			"/health":   map[string]any{"get": op("Health check", "Whether the server is up.", false, nil, answer("healthy", "Health"), nil)},
			"/schema":   map[string]any{"get": op("JSON Schemas", "The action's, the observation's and the state's.", false, nil, answer("the schemas", "Schemas"), nil)},
			"/metadata": map[string]any{"get": op("Environment metadata", "Name, description, version.", false, nil, answer("the metadata", "Metadata"), nil)},
			"/mcp": map[string]any{"post": op("MCP JSON-RPC",
				"tools/list: the default world's tools (every action's without one). Tool calls are answered on /ws (call_tool "+
					"steps, mcp frames) and by corpsim's own MCP server at /mcp, one seat per token.",
				false, body("JSONRPC"), answer("a JSON-RPC response", "JSONRPC"), nil)},
		},
		"components": map[string]any{
			"schemas": map[string]any{
				"Action":       withID(actionSchema(), "action.json"),
				"Observation":  withID(observationSchema(), "observation.json"),
				"State":        withID(stateSchema(), "state.json"),
				"ResetRequest": resetRequest,
				"StepRequest":  stepRequest,
				"StepResponse": stepResponse,
				"JSONRPC":      rpc,
				"Error":        map[string]any{"type": "object", "properties": map[string]any{"detail": map[string]any{"type": "string"}, "code": map[string]any{"type": "string"}}, "required": []string{"detail"}},
				"Health":       map[string]any{"type": "object", "properties": map[string]any{"status": map[string]any{"const": "healthy"}}},
				"Schemas":      map[string]any{"type": "object", "required": []string{"action", "observation", "state"}},
				"Metadata":     map[string]any{"type": "object", "required": []string{"name", "description"}},
			},
			"securitySchemes": map[string]any{
				"operator": map[string]any{"type": "http", "scheme": "bearer", "description": "corpsim serve's operator token"},
				"basic":    map[string]any{"type": "http", "scheme": "basic", "description": "any user; the operator token as the password"},
			},
		},
	}
	return encode(doc)
})

var statusText = map[string]string{
	"401": "no token, or an unknown one",
	"403": "a seat's token: it reaches only its own seat",
	"404": "no such episode",
	"409": "the episode has ended",
	"413": "the body is over --max-message",
	"422": "a bad request (VALIDATION_ERROR)",
	"502": "the server failed (EXECUTION_ERROR)",
	"503": "the server runs --max-sessions sessions (CAPACITY_REACHED)",
	"504": "no answer in time (EXECUTION_ERROR)",
}
