package agents

import (
	"fmt"
	"strings"

	"github.com/corpsim/corpsim/worlds"
)

// Remote names a seat played by an agent outside the process, over the bus.
const Remote = "remote"

// Assign gives every agent seat of w an agent from spec: one name for every
// seat ("greedy"), or a default and per-member choices
// ("planner,alice=idle,bob=remote"). Names are built-in agents, or Remote
// when allowRemote. The result maps member IDs to names.
func Assign(spec string, w *worlds.World, allowRemote bool) (map[string]string, error) {
	def := ""
	per := map[string]string{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		member, name, ok := strings.Cut(part, "=")
		if !ok {
			if def != "" {
				return nil, fmt.Errorf("agents %q names two defaults (%s and %s)", spec, def, part)
			}
			def = part
			continue
		}
		if name = strings.TrimSpace(name); name == "" {
			return nil, fmt.Errorf("agents %q gives %s no agent after its =", spec, member)
		}
		m, found := w.Member(member)
		if !found {
			return nil, fmt.Errorf("agents: world %s has no member %q", w.Name, member)
		}
		if m.NPC != nil {
			return nil, fmt.Errorf("agents: %s is an NPC, not an agent seat", member)
		}
		if prev, twice := per[member]; twice {
			return nil, fmt.Errorf("agents %q gives %s two agents (%s and %s)", spec, member, prev, name)
		}
		per[member] = name
	}
	out := map[string]string{}
	for _, m := range w.Members {
		if m.NPC != nil {
			continue
		}
		name := per[m.ID]
		if name == "" {
			name = def
		}
		if name == "" {
			return nil, fmt.Errorf("agents %q assigns no agent to %s", spec, m.ID)
		}
		if name == Remote {
			if !allowRemote {
				return nil, fmt.Errorf("agents: %s is remote, which needs corpsim serve", m.ID)
			}
		} else if _, err := New(name, Options{}); err != nil {
			return nil, err
		}
		out[m.ID] = name
	}
	return out, nil
}

// MentionsLLM reports whether an agents spec gives any seat to the llm agent.
func MentionsLLM(spec string) bool { return mentions(spec, "llm") }

// MentionsTruth reports whether an agents spec gives any seat to an agent
// told the world's hidden truth (the oracle): such a seat's actions show
// what the work is meant to find out, for its seed, to whoever plays
// beside it.
func MentionsTruth(spec string) bool { return mentions(spec, "oracle") }

// mentions reports whether an agents spec gives any seat to agent name.
func mentions(spec, name string) bool {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == name || strings.HasSuffix(part, "="+name) {
			return true
		}
	}
	return false
}

// SplitLLM resolves the "llm" entries of an --agents spec: it returns the
// spec with them played by idle (for agents.Assign) and the members the
// llm agent plays. The llm agent is built outside this package (agents/llm).
func SplitLLM(spec string, w *worlds.World) (string, []string) {
	if !MentionsLLM(spec) {
		return spec, nil
	}
	var parts []string
	named := map[string]bool{}
	llmDefault := false
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "llm":
			llmDefault = true
			parts = append(parts, "idle")
		case strings.HasSuffix(part, "=llm"):
			m := strings.TrimSuffix(part, "=llm")
			named[m] = true
			parts = append(parts, m+"=idle")
		default:
			parts = append(parts, part)
		}
	}
	explicit := map[string]bool{}
	for _, part := range parts {
		if m, _, ok := strings.Cut(part, "="); ok {
			explicit[m] = true
		}
	}
	var members []string
	for _, m := range w.Members {
		if m.NPC != nil {
			continue
		}
		if named[m.ID] || llmDefault && !explicit[m.ID] {
			members = append(members, m.ID)
		}
	}
	return strings.Join(parts, ","), members
}
