package agents

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// The record tools (format 2 systems): read and write the records of the
// world's business systems. They follow the other tools in
// org.ActionTypes order.
func init() { toolSpecs = append(toolSpecs, recordToolSpecs...) }

var (
	paramRecord = toolParam{name: "record", typ: "string", required: true,
		desc: `The record type, e.g. "invoice" (your observation's "systems" list each system's types and fields, and which tools your role may use there).`,
		set:  func(a *org.Action, v any) { a.Record = v.(string) }}
	paramRecordID = toolParam{name: "id", typ: "string", required: true, desc: `The record's id, e.g. "inv-7".`,
		set: func(a *org.Action, v any) { a.ID = v.(string) }}
	paramFields = func(desc string, required bool) toolParam {
		return toolParam{name: "fields", typ: "object", required: required, desc: desc,
			set: func(a *org.Action, v any) { a.Fields = v.(payload.ActionAttrs) }}
	}
)

const recordAccess = " Refused as a policy violation (record-access) when your role may not do it in that system."

var recordToolSpecs = []toolSpec{
	{
		name:   org.ActGet,
		desc:   "Read one record. Costs 5 minutes. The record, with every field, is in your next observation's \"results\"; you are asked again once the read is done." + recordAccess,
		params: []toolParam{paramRecord, paramRecordID},
	},
	{
		name: org.ActSearch,
		desc: "Find the records of a type whose fields equal the given values (texts match regardless of case), 10 to a page. Costs 5 minutes. " +
			"The matches are in your next observation's \"results\", with how many more there are on later pages. Two systems may hold " +
			"copies of one record that disagree: the policy (your observation's \"policy\") says which system wins." + recordAccess,
		params: []toolParam{paramRecord,
			paramFields(`Values the records must have, e.g. {"invoice": "inv-7"}; none: every record of the type.`, false),
			{name: "page", typ: "integer", desc: "The page of matches, from 1 (default 1).",
				set: func(a *org.Action, v any) { a.Page = int(v.(int64)) }}},
	},
	{
		name: org.ActUpdate,
		desc: "Set fields of a record. Costs 15 minutes. A write that no case step you hold asks for is collateral damage and costs the team a penalty; " +
			"a step you complete is checked against the record as it is then (and at the end): its outcome's fields must hold the values the policy gives." + recordAccess,
		params: []toolParam{paramRecord, paramRecordID,
			paramFields(`The values to set, e.g. {"refunded": 120, "status": "refunded"}: money and integers are whole numbers, enums one of their values, date-times RFC 3339.`, true)},
	},
	{
		name:   org.ActCreate,
		desc:   "Create a record with the given id; fields left out have their type's zero. Costs 15 minutes. Refused when the id is taken." + recordAccess,
		params: []toolParam{paramRecord, paramRecordID, paramFields(`The new record's values.`, false)},
	},
	{
		name:   org.ActDelete,
		desc:   "Delete a record. Costs 15 minutes." + recordAccess,
		params: []toolParam{paramRecord, paramRecordID},
	},
}

// ToolDefsFor returns the tools of world w: every tool, the record tools
// only when it has systems, their "record" argument naming its record
// types, and the record tools' descriptions listing each type's system,
// fields and enum values.
func ToolDefsFor(w *worlds.World) []Tool {
	defs := meetingTools(w, decideFor(w, ToolDefs())) // tools_meetings.go, tools_records_kinds.go
	if len(w.Cases) == 0 {
		// No case templates: no case to open, nor one to reopen.
		defs = slices.DeleteFunc(defs, func(t Tool) bool {
			return t.Function.Name == org.ActOpenCase || t.Function.Name == org.ActReopen
		})
	}
	if len(w.Systems) == 0 {
		return slices.DeleteFunc(defs, func(t Tool) bool { return slices.Contains(org.RecordActions, t.Function.Name) })
	}
	var types []string
	var b strings.Builder
	b.WriteString(" Record types:")
	for _, s := range w.Systems {
		for _, t := range s.Types {
			types = append(types, t.ID)
			fmt.Fprintf(&b, " %s (system %s; read: %s; write: %s):", t.ID, s.ID, roles(s.Read), roles(s.Write))
			for i, f := range t.Fields {
				sep := ","
				if i == 0 {
					sep = ""
				}
				switch f.Type {
				case worlds.FieldEnum:
					fmt.Fprintf(&b, "%s %s (%s)", sep, f.Name, strings.Join(f.Values, "|"))
				case worlds.FieldReference:
					fmt.Fprintf(&b, "%s %s (id of a %s)", sep, f.Name, f.To)
				default:
					fmt.Fprintf(&b, "%s %s (%s)", sep, f.Name, f.Type)
				}
			}
			b.WriteString(".")
		}
	}
	for i := range defs {
		fn := &defs[i].Function
		if !slices.Contains(org.RecordActions, fn.Name) {
			continue
		}
		fn.Description += b.String()
		p := fn.Parameters.Properties["record"]
		p.Enum = types
		fn.Parameters.Properties["record"] = p
	}
	return defs
}

func roles(rs []string) string {
	if len(rs) == 0 {
		return "nobody"
	}
	return strings.Join(rs, ", ")
}

// ToolsJSONFor is ToolDefsFor(w) as compact JSON. The encodings of the
// last worlds asked are kept, by hash: a server hands them to the remote
// seats of every session it makes. The bytes returned are shared: do not
// change them.
func ToolsJSONFor(w *worlds.World) json.RawMessage {
	toolsCache.mu.Lock()
	defer toolsCache.mu.Unlock()
	if b, ok := toolsCache.byHash[w.Hash]; ok && w.Hash != "" {
		return b
	}
	b, err := json.Marshal(ToolDefsFor(w))
	if err != nil {
		panic("agents: tools do not encode: " + err.Error())
	}
	if w.Hash != "" { // a world made in code, not loaded, has none
		if len(toolsCache.byHash) >= 64 {
			clear(toolsCache.byHash)
		}
		toolsCache.byHash[w.Hash] = b
	}
	return b
}

var toolsCache = struct {
	mu     sync.Mutex
	byHash map[string]json.RawMessage
}{byHash: map[string]json.RawMessage{}}

// ToolsFor is ToolDefsFor as indented JSON.
func ToolsFor(w *worlds.World) []byte {
	b, err := json.MarshalIndent(ToolDefsFor(w), "", "  ")
	if err != nil {
		panic("agents: tools do not encode: " + err.Error())
	}
	return b
}
