package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/worlds"
)

// llmFlags are the flags that configure the llm agent.
type llmFlags struct {
	baseURL, model, keyEnv string
	history                int
	temperature            float64
}

func (l *llmFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&l.baseURL, "llm-base-url", "https://api.openai.com/v1", "OpenAI-compatible endpoint of the llm agent")
	f.StringVar(&l.model, "llm-model", "", "model of the llm agent")
	f.StringVar(&l.keyEnv, "llm-key-env", "OPENAI_API_KEY", "environment variable holding the endpoint's API key")
	f.IntVar(&l.history, "llm-history", 0, "past turns the llm agent keeps in its conversation (0: 4)")
	f.Float64Var(&l.temperature, "llm-temperature", 0, "sampling temperature (default: the endpoint's)")
}

// agent makes the llm agent when the --agents spec names it.
func (l *llmFlags) agent(cmd *cobra.Command, spec string, a *app) (agents.Agent, error) {
	if !mentionsLLM(spec) {
		return nil, nil
	}
	o := llm.Options{BaseURL: l.baseURL, Model: l.model, APIKey: os.Getenv(l.keyEnv), MaxHistory: l.history, Logger: a.logger}
	if cmd.Flags().Changed("llm-temperature") {
		t := l.temperature
		o.Temperature = &t
	}
	ag, err := llm.New(o)
	if err != nil {
		return nil, usagef("--agents names llm: %v", err)
	}
	return ag, nil
}

func mentionsLLM(spec string) bool {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "llm" || strings.HasSuffix(part, "=llm") {
			return true
		}
	}
	return false
}

// withLLM resolves the "llm" entries of an --agents spec: it returns the
// spec with them played by idle (for agents.Assign) and the members the
// llm agent plays.
func withLLM(spec string, w *worlds.World) (string, []string) {
	if !mentionsLLM(spec) {
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
