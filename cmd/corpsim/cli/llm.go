package cli

import (
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
)

// llmFlags are the flags that configure the llm agent.
type llmFlags struct {
	baseURL, model, keyEnv string
	api                    string
	history                int
	temperature            float64
}

func (l *llmFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&l.baseURL, "llm-base-url", "https://api.openai.com/v1", "OpenAI-compatible endpoint of the llm agent")
	f.StringVar(&l.model, "llm-model", "", "model of the llm agent")
	f.StringVar(&l.api, "llm-api", llm.APIChat, "API the llm agent speaks: "+llm.APIChat+" (POST BASE/chat/completions) or "+llm.APIResponses+" (POST BASE/responses, the Responses API)")
	f.StringVar(&l.keyEnv, "llm-key-env", "OPENAI_API_KEY", "environment variable holding the endpoint's API key")
	f.IntVar(&l.history, "llm-history", 0, "past turns the llm agent keeps in its conversation (0: 4)")
	f.Float64Var(&l.temperature, "llm-temperature", 0, "sampling temperature (default: the endpoint's)")
}

// agent makes the llm agent when the --agents spec names it, or, for a
// stored session's own seats (spec "": fork, reset and resume), when
// --llm-model is given.
func (l *llmFlags) agent(cmd *cobra.Command, spec string, a *cmdline) (agents.Agent, error) {
	if l.api != llm.APIChat && l.api != llm.APIResponses {
		return nil, usagef("--llm-api is %q: it takes %s or %s", l.api, llm.APIChat, llm.APIResponses)
	}
	if !agents.MentionsLLM(spec) && (spec != "" || l.model == "") {
		return nil, nil
	}
	o := llm.Options{BaseURL: l.baseURL, API: l.api, Model: l.model, APIKey: os.Getenv(l.keyEnv), MaxHistory: l.history, Logger: a.logger}
	if cmd.Flags().Changed("llm-temperature") {
		t := l.temperature
		if !(t >= 0) || math.IsInf(t, 0) { // NaN too: every request failed to encode
			return nil, usagef("--llm-temperature %v: a number, at least 0", t)
		}
		o.Temperature = &t
	}
	if l.history < 0 {
		return nil, usagef("--llm-history %d: at least 0 (0: 4)", l.history)
	}
	if l.model == "" {
		return nil, usagef("--agents names llm, which needs a model: --llm-model (and --llm-base-url, --llm-key-env for another endpoint than OpenAI's)")
	}
	ag, err := llm.New(o)
	if err != nil {
		return nil, usagef("--agents names llm: %v", err)
	}
	return ag, nil
}
