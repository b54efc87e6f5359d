package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
)

// refunder plays billing-support as a model that read the policy would:
// it takes a refund step, works it, reads the invoice in billing (the
// authoritative system) with get, and once the result is in its
// observation updates the invoice with the refund and completes the step.
func refunder(tb testing.TB) func(chatRequest) (int, []call) {
	return func(req chatRequest) (int, []call) {
		o := lastObservation(tb, req)
		var calls []call
		add := func(name string, args map[string]any) {
			b, _ := json.Marshal(args)
			calls = append(calls, call{id: fmt.Sprintf("call_%d_%d", o.Turn, len(calls)), name: name, arguments: string(b)})
		}
		for _, t := range o.Assigned {
			if t.Status != org.StatusClaimed {
				continue
			}
			if t.Spent < t.Effort {
				add("work", map[string]any{"task": t.ID})
				return http.StatusOK, calls
			}
			if t.Outcome == nil {
				add("complete", map[string]any{"task": t.ID})
				continue
			}
			rec, id := t.Outcome.Record, t.Outcome.ID
			if t.Outcome.Kind == "reply" { // the confirmation reads the invoice it names
				rec, id, _ = strings.Cut(t.Outcome.From, "/")
			}
			var inv map[string]any
			for _, r := range o.Results {
				for _, rv := range r.Records {
					if rv.Record == rec && rv.ID == id {
						inv = rv.Fields
					}
				}
			}
			if inv == nil {
				add("get", map[string]any{"record": rec, "id": id})
				continue
			}
			refund, _ := inv["amount"].(int64) // payload.Attrs reads whole numbers as int64
			if inv["plan"] != "annual" {
				refund /= 2
			}
			if t.Outcome.Kind == "reply" {
				add("message", map[string]any{"to": t.Outcome.To, "text": fmt.Sprintf("Case %s: we refunded %d.", t.Case, refund)})
				add("complete", map[string]any{"task": t.ID})
				continue
			}
			// The reason is in no system: ask the account manager, naming the case.
			var reason any
			for _, cv := range o.Cases {
				if cv.ID == t.Case {
					reason = cv.Told["reason"]
				}
			}
			if _, needs := t.Outcome.Set["reason"]; needs && reason == nil {
				if !slices.ContainsFunc(o.Awaiting, func(m org.MessageView) bool { return strings.Contains(m.Text, t.Case) }) {
					add("message", map[string]any{"to": "max", "text": "What is the reason for case " + t.Case + "?"})
				}
				continue
			}
			fields := map[string]any{}
			for f := range t.Outcome.Set {
				fields[f] = map[string]any{"refunded": refund, "status": "refunded", "reason": reason}[f]
			}
			add("update", map[string]any{"record": rec, "id": id, "fields": fields})
			add("complete", map[string]any{"task": t.ID})
		}
		if len(o.Assigned) == 0 && len(o.Available) > 0 {
			add("claim", map[string]any{"task": o.Available[0].ID})
			add("work", map[string]any{"task": o.Available[0].ID})
			return http.StatusOK, calls
		}
		add("wait", map[string]any{})
		return http.StatusOK, calls
	}
}

// An llm seat on billing-support: its tool calls (get, update) become
// record.read and record.written events, and the refunds it writes are
// the outcomes the rubric expects.
func TestLLMSeatWritesRecords(t *testing.T) {
	_, srv := mustServe(t, refunder(t))
	ana := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "fake", APIKey: "k", MaxHistory: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := memlog.New()
	res, err := app.Run(ctx, app.RunOptions{World: "billing-support", Seed: 1, Agents: "diligent", Log: log,
		TurnTimeout: 20 * time.Second, Seats: map[string]agents.Agent{"ana": ana}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	reads, writes := 0, 0
	for ev, err := range log.Read(ctx, res.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Actor != "ana" {
			continue
		}
		switch ev.Type {
		case payload.EvRecordRead:
			reads++
		case payload.EvRecordWritten:
			writes++
			var p payload.RecordWritten
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.Collateral || p.Op != "update" || p.Before == nil {
				t.Errorf("ana's write %+v: want an update in scope with its values before", p)
			}
		}
	}
	if reads == 0 || writes == 0 {
		t.Fatalf("ana read %d and wrote %d records; want both", reads, writes)
	}
	if res.Score.WrongOutcomes != 0 || res.Score.Collateral != 0 || res.Score.Outcome == 0 {
		t.Errorf("outcome %v of %v, wrong %d, collateral %d; want right outcomes only", res.Score.Outcome, res.Score.OutcomeMax, res.Score.WrongOutcomes, res.Score.Collateral)
	}
	t.Logf("ana: %d reads, %d writes; outcome %v of %v", reads, writes, res.Score.Outcome, res.Score.OutcomeMax)
}
