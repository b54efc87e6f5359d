package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/analyze"
)

// This file is the report's outcomes section (format 2 systems): per case
// template and step, how many outcomes there were, their mean score and
// the wrong ones (with what the completer read and what it needed, when
// the report has the session's analysis), and every collateral write with
// who made it and what it changed.

// Outcomes is the outcomes section.
type Outcomes struct {
	Score      float64      `json:"score"`      // the scorecard's outcome score
	Max        float64      `json:"max"`        // its maximum: the number of outcomes
	Wrong      int          `json:"wrong"`      // steps completed with their outcome unmet
	Collateral int          `json:"collateral"` // writes no case asked for
	Steps      []OutcomeRow `json:"steps"`
	// Writes are the collateral writes, in log order (at most
	// MaxCollateralRows); WritesMore counts the rest.
	Writes     []CollateralWrite `json:"collateral_writes"`
	WritesMore int               `json:"collateral_writes_more,omitempty"`
}

// OutcomeRow is the outcomes of one step of a case template.
type OutcomeRow struct {
	Template string  `json:"template"`
	Step     string  `json:"step"`
	Outcomes int     `json:"outcomes"` // of the cases opened
	Done     int     `json:"done"`     // their steps completed
	Score    float64 `json:"score"`    // their scores' sum
	Mean     float64 `json:"mean"`     // Score / Outcomes
	Wrong    int     `json:"wrong"`    // its wrong outcomes, Reopened included
	Reopened int     `json:"reopened"` // completions a requester reopened (wrong outcomes the step was then redone for)
	// WrongCases are its wrong outcomes (at most MaxWrongRows per step):
	// the case, the completer, and the trace's summary of what it read
	// and what it needed ("" without the session's analysis).
	WrongCases []WrongOutcome `json:"wrong_cases,omitempty"`
}

// WrongOutcome is one step completed with its outcome unmet.
type WrongOutcome struct {
	Case    string   `json:"case"`
	Task    string   `json:"task"`
	By      string   `json:"by"`
	Kind    string   `json:"kind,omitempty"` // the card's: "" for a record's fields, or meeting, reply, decision, create
	Record  string   `json:"record"`
	ID      string   `json:"id"`
	Unmet   []string `json:"unmet"`
	Summary string   `json:"summary,omitempty"`
}

// Subject names what the outcome is about, as the trace does
// (analyze.OutcomeSubject): "invoice inv-4", "meeting", "reply".
func (w WrongOutcome) Subject() string {
	what, _ := analyze.OutcomeSubject(w.Kind, w.Record, w.ID)
	return what
}

// Parts is what the outcome's parts are called: "criteria" for a meeting,
// else "fields".
func (w WrongOutcome) Parts() string {
	_, unit := analyze.OutcomeSubject(w.Kind, w.Record, w.ID)
	return unit
}

// CollateralWrite is a write no case in its writer's hands asked for.
type CollateralWrite struct {
	Seq    uint64        `json:"seq"`
	At     int64         `json:"at"` // simulated milliseconds
	Wall   string        `json:"wall"`
	Member string        `json:"member"`
	Op     string        `json:"op"`
	Record string        `json:"record"`
	ID     string        `json:"id"`
	Before payload.Attrs `json:"before,omitempty"`
	After  payload.Attrs `json:"after,omitempty"`
}

// MaxCollateralRows and MaxWrongRows cap the section's lists.
const (
	MaxCollateralRows = 40
	MaxWrongRows      = 10
)

// caseTracer is what the section asks of the session's analysis.
type caseTracer interface {
	Case(id string) (*analyze.CaseTrace, error)
}

// collateralWrite keeps a record.written that is collateral damage.
func (b *Builder) collateralWrite(ev *events.Event) error {
	p, err := payloadOf[payload.RecordWritten](ev, b.typed)
	if err != nil || !p.Collateral {
		return err
	}
	b.collateral = append(b.collateral, CollateralWrite{Seq: ev.Seq, At: ev.Time, Wall: b.w.Calendar.Wall(clock.Time(ev.Time)).Format("2006-01-02 15:04"),
		Member: ev.Actor, Op: p.Op, Record: p.Record, ID: p.ID, Before: p.Before, After: p.After})
	return nil
}

// outcomes builds the section from the scorecard, or nil in a world
// without systems.
func (b *Builder) outcomes(card *policies.Scorecard) *Outcomes {
	if len(b.w.Systems) == 0 {
		return nil
	}
	out := &Outcomes{Score: card.Outcome, Max: card.OutcomeMax, Wrong: card.WrongOutcomes, Collateral: card.Collateral,
		Steps: []OutcomeRow{}, Writes: []CollateralWrite{}}
	rows := map[string]*OutcomeRow{}
	var order []string
	tracer, _ := b.o.Explain.(caseTracer)
	for _, oc := range card.Outcomes {
		k := oc.Template + "\x00" + oc.Step
		r := rows[k]
		if r == nil {
			r = &OutcomeRow{Template: oc.Template, Step: oc.Step}
			rows[k] = r
			order = append(order, k)
		}
		r.Outcomes++
		r.Score += oc.Score
		if oc.Done {
			r.Done++
		}
		r.Wrong += len(oc.Redone)
		r.Reopened += len(oc.Redone)
		if !oc.Wrong {
			continue
		}
		r.Wrong++
		if len(r.WrongCases) >= MaxWrongRows {
			continue
		}
		w := WrongOutcome{Case: oc.Case, Task: oc.Task, By: oc.By, Kind: oc.Kind, Record: oc.Record, ID: oc.ID, Unmet: oc.Unmet}
		if tracer != nil {
			if ct, err := tracer.Case(oc.Case); err == nil {
				for _, st := range ct.Steps {
					if st.Task == oc.Task && st.Outcome != nil {
						w.Summary = st.Outcome.Summary
					}
				}
			}
		}
		r.WrongCases = append(r.WrongCases, w)
	}
	for _, k := range order {
		r := rows[k]
		r.Score = round6(r.Score)
		if r.Outcomes > 0 {
			r.Mean = round6(r.Score / float64(r.Outcomes))
		}
		out.Steps = append(out.Steps, *r)
	}
	n := min(len(b.collateral), MaxCollateralRows)
	out.Writes = append(out.Writes, b.collateral[:n]...)
	out.WritesMore = len(b.collateral) - n
	return out
}

func round6(x float64) float64 {
	v, _ := json.Number(fmt.Sprintf("%.6f", x)).Float64()
	return v
}

// attrsLine says attributes as "name=value" pairs in name order.
func attrsLine(a payload.Attrs) string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(a)) {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s=%v", k, a[k])
	}
	return s
}

// JSON is the report's data as corpsim report --json writes it: the
// header, the scorecard and the outcomes section (the charts are the HTML
// page's).
type JSON struct {
	Session  string             `json:"session"`
	World    string             `json:"world"`
	Seed     uint64             `json:"seed"`
	Events   uint64             `json:"events"`
	Ended    string             `json:"ended"`
	Verified string             `json:"verified,omitempty"`
	Score    policies.Scorecard `json:"score"`
	Outcomes *Outcomes          `json:"outcomes,omitempty"`
}

// WriteJSON writes the report's data (JSON) as one indented object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(JSON{Session: r.Session, World: r.World, Seed: r.Seed, Events: r.Events, Ended: r.Ended,
		Verified: r.Verified, Score: r.Score, Outcomes: r.Outcomes})
}

// outcomesHTML is the section in the HTML page.
var _ = template.Must(page.New("outcomes").Funcs(template.FuncMap{"attrs": attrsLine}).Parse(`{{with .Outcomes}}
<h2>Outcomes</h2>
<div id="outcomes">
<p class="sub">Outcome score {{f2 .Score}} of {{.Max}} (partial credit per field, verified from the records at completion and at the end); {{.Wrong}} wrong outcomes (a step completed with its outcome unmet earns nothing); {{.Collateral}} collateral writes (no case asked for them; each costs the violation penalty).</p>
<table id="outcome-steps"><tr><th>template</th><th>step</th><th>outcomes</th><th>completed</th><th>score</th><th>mean</th><th>wrong</th></tr>
{{range .Steps}}<tr data-template="{{.Template}}" data-step="{{.Step}}"><td>{{.Template}}</td><td>{{.Step}}</td><td class="n">{{.Outcomes}}</td><td class="n">{{.Done}}</td><td class="n">{{f2 .Score}}</td><td class="n">{{f2 .Mean}}</td><td class="n">{{.Wrong}}</td></tr>
{{end}}</table>
{{range .Steps}}{{if .WrongCases}}<h3>Wrong outcomes of {{.Template}}/{{.Step}}{{if gt .Wrong (len .WrongCases)}} (first {{len .WrongCases}} of {{.Wrong}}{{if .Reopened}}; {{.Reopened}} of them reopened by the requester and redone{{end}}){{end}}</h3>
<ul>{{range .WrongCases}}<li class="wrong-outcome" data-case="{{.Case}}" data-task="{{.Task}}"><b>{{.Task}}</b> by {{.By}}: {{.Subject}}, {{.Parts}} unmet: {{range $i, $f := .Unmet}}{{if $i}}, {{end}}{{$f}}{{end}}{{if .Summary}}<div>{{.Summary}}</div>{{end}}</li>
{{end}}</ul>{{end}}{{end}}
<h3>Collateral writes</h3>
<table id="collateral"><tr><th>when</th><th>who</th><th>op</th><th>record</th><th>before</th><th>after</th></tr>
{{range .Writes}}<tr data-seq="{{.Seq}}"><td>{{.Wall}}</td><td>{{.Member}}</td><td>{{.Op}}</td><td>{{.Record}} {{.ID}}</td><td>{{attrs .Before}}</td><td>{{attrs .After}}</td></tr>
{{else}}<tr><td colspan="6">no collateral writes</td></tr>
{{end}}</table>
{{if .WritesMore}}<div class="note">{{.WritesMore}} more collateral writes not shown</div>{{end}}
</div>
{{end}}`))
