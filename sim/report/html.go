package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/policies"
)

// ViolationRow is one kind of rejected action: how often, by whom, first when.
type ViolationRow struct {
	Kind, Rule, Reason string
	Count              int
	Members            []string
	First              int64  // simulated milliseconds
	FirstWall          string // First on the world's wall clock
}

// Report is everything a report page shows, already bounded in size.
type Report struct {
	Session, World, Description string
	Seed                        uint64
	Load                        float64
	Agents                      string
	Events                      uint64
	End                         int64 // simulated milliseconds of the last event
	StartWall, EndWall          string
	Ended                       string
	Verified                    string // the end-of-log state hash check, "" when the log has no end
	Score                       policies.Scorecard
	Members                     []policies.MemberCredit // the scorecard's, at most MaxGanttRows of them
	MembersNote                 string
	Late, Overdue               int // project tasks done after / still open past their deadline

	Gantt                     Gantt
	DAG                       DAG
	Queues, Reward, Approvals LineChart
	QueuesNote                string
	Violations                []ViolationRow
	ViolationsOmitted         string
	Breaches                  int
	BreachExamples            []string
	Unverified                []string // the first of the scorecard's unverified completions
	UnverifiedMore            int      // how many more there are
}

type chartView struct {
	ID   string
	Note string
	SVG  template.HTML
}

type svgWriter interface{ WriteSVG(io.Writer) error }

func render(c svgWriter) (template.HTML, error) {
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		return "", err
	}
	// The charts are written by html/template (svgTemplates), which
	// escaped every text in them: the markup is safe to include as it is.
	return template.HTML(b.String()), nil
}

// WriteHTML writes the report as one self-contained HTML page: inline CSS
// and SVG, no script and nothing fetched from the network.
func (r *Report) WriteHTML(w io.Writer) error {
	charts := []struct {
		id, note string
		c        svgWriter
	}{
		{"gantt", r.Gantt.Note, r.Gantt},
		{"dag", r.DAG.Note, r.DAG},
		{"queues", r.QueuesNote, r.Queues},
		{"reward", "", r.Reward},
		{"approvals", "", r.Approvals},
	}
	var views []chartView
	for _, c := range charts {
		svg, err := render(c.c)
		if err != nil {
			return err
		}
		views = append(views, chartView{ID: c.id, Note: c.note, SVG: svg})
	}
	data := struct {
		*Report
		Charts []chartView
	}{r, views}
	return page.Execute(w, data)
}

var funcs = template.FuncMap{
	"pct":     func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) },
	"f2":      func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"elapsed": FormatElapsed,
	"members": func(ms []string) string {
		s := ""
		for i, m := range ms {
			if i == 5 {
				return s + fmt.Sprintf(" +%d more", len(ms)-5)
			}
			if i > 0 {
				s += ", "
			}
			s += m
		}
		return s
	},
	"late": func(s policies.Scorecard) int { return s.TasksDone - s.OnTime },
	// hours writes working time in hours (a working day is not 24h).
	"hours": func(d clock.Duration) string { return fmt.Sprintf("%.1fh", float64(d)/float64(clock.Hour)) },
}

var page = template.Must(template.New("report").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>corpsim report · {{.World}} · {{.Session}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 6px; }
.sub { color: #666; margin-bottom: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card b { display: block; font-size: 20px; }
.card span { color: #666; font-size: 12px; }
.bad b { color: #c0392b; }
.scroll { overflow-x: auto; border: 1px solid #eee; border-radius: 6px; padding: 4px; }
.note { color: #8a6d3b; font-size: 13px; margin: 4px 0; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #eee; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td.n { text-align: right; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 13px; }
dt { color: #666; }
</style>
</head>
<body>
<h1>corpsim report: {{.World}}</h1>
<div class="sub">{{.Description}}</div>
<dl>
<dt>session</dt><dd>{{.Session}}</dd>
<dt>world</dt><dd>{{.World}} · seed {{.Seed}} · load {{.Load}}</dd>
<dt>agents</dt><dd>{{.Agents}}</dd>
<dt>simulated</dt><dd>{{.StartWall}} → {{.EndWall}} ({{elapsed .End}}), {{.Events}} events, ended: {{.Ended}}</dd>
{{if .Verified}}<dt>replay</dt><dd>{{.Verified}}</dd>{{end}}
<dt>rubric</dt><dd>{{.Score.Rubric}}</dd>
</dl>
<div class="cards" id="scorecard">
<div class="card"><b>{{f2 .Score.TeamScore}}</b><span>team score</span></div>
<div class="card"><b>{{f2 .Score.Delivered}}</b><span>delivered</span></div>
<div class="card{{if gt .Score.Penalties 0.0}} bad{{end}}"><b>{{f2 .Score.Penalties}}</b><span>penalties</span></div>
<div class="card"><b>{{pct .Score.Completion}}</b><span>completion</span></div>
{{if .Score.Tasks}}<div class="card"><b>{{.Score.TasksDone}} / {{.Score.Tasks}}</b><span>tasks done (verified)</span></div>
<div class="card"><b>{{.Score.OnTime}}</b><span>tasks on time</span></div>
<div class="card{{if late .Score}} bad{{end}}"><b>{{late .Score}}</b><span>tasks done late</span></div>
<div class="card{{if .Overdue}} bad{{end}}"><b>{{.Overdue}}</b><span>tasks open past deadline</span></div>{{end}}
{{if .Score.Tickets}}<div class="card"><b>{{.Score.TicketsResolved}} / {{.Score.Tickets}}</b><span>tickets resolved</span></div>
<div class="card"><b>{{.Score.TicketsInSLA}}</b><span>tickets within SLA</span></div>
<div class="card{{if .Score.SLABreaches}} bad{{end}}"><b>{{.Score.SLABreaches}}</b><span>SLA breaches</span></div>{{end}}
<div class="card{{if .Score.Violations}} bad{{end}}"><b>{{.Score.Violations}}</b><span>policy violations</span></div>
<div class="card"><b>{{.Score.Rejections}}</b><span>rejected actions</span></div>
<div class="card"><b>{{.Score.Timeouts}}</b><span>turn timeouts</span></div>
<div class="card{{if .Score.TurnErrors}} bad{{end}}"><b>{{.Score.TurnErrors}}</b><span>failed turns</span></div>
<div class="card{{if .Score.BudgetOverrun}} bad{{end}}"><b>{{.Score.BudgetOverrun}}</b><span>budget overrun</span></div>
<div class="card"><b>{{.Score.Turns}}</b><span>turns</span></div>
</div>
{{if .Members}}
<h2>Members</h2>
{{if .MembersNote}}<div class="note">{{.MembersNote}}</div>{{end}}
<table id="members"><tr><th>member</th><th>delivered</th><th>share</th><th>critical path</th><th>violations</th><th>blocked others (working time)</th><th>sent</th><th>answered</th></tr>
{{range .Members}}<tr><td>{{.Member}}</td><td class="n">{{f2 .Delivered}}</td><td class="n">{{pct .Share}}</td><td class="n">{{pct .Critical}}</td><td class="n">{{.Violations}}</td><td class="n">{{hours .BlockedOthers}}</td><td class="n">{{.MessagesSent}}</td><td class="n">{{.MessagesAnswered}}</td></tr>
{{end}}</table>
{{end}}
{{range .Charts}}
<section id="{{.ID}}">
{{if .Note}}<div class="note">{{.Note}}</div>{{end}}
<div class="scroll">{{.SVG}}</div>
</section>
{{end}}
<h2>Violations</h2>
<table id="violations"><tr><th>kind</th><th>rule</th><th>reason</th><th>count</th><th>members</th><th>first at</th></tr>
{{range .Violations}}<tr><td>{{.Kind}}</td><td>{{.Rule}}</td><td>{{.Reason}}</td><td class="n">{{.Count}}</td><td>{{members .Members}}</td><td>{{.FirstWall}}</td></tr>
{{else}}<tr><td colspan="6">no rejected actions</td></tr>
{{end}}{{if .Breaches}}<tr><td>sla</td><td>sla.breached</td><td>tickets still open when their SLA passed: {{range $i, $t := .BreachExamples}}{{if $i}}, {{end}}{{$t}}{{end}}{{if gt .Breaches (len .BreachExamples)}} …{{end}}</td><td class="n">{{.Breaches}}</td><td></td><td></td></tr>
{{end}}{{if .Score.BudgetOverrun}}<tr><td>budget</td><td>overrun</td><td>spending beyond the teams' budgets</td><td class="n">{{.Score.BudgetOverrun}}</td><td></td><td></td></tr>
{{end}}{{range .Unverified}}<tr><td>rubric</td><td>unverified</td><td>{{.}}</td><td class="n">1</td><td></td><td></td></tr>
{{end}}{{if .UnverifiedMore}}<tr><td>rubric</td><td>unverified</td><td>{{.UnverifiedMore}} more completions that do not count</td><td class="n">{{.UnverifiedMore}}</td><td></td><td></td></tr>
{{end}}</table>
{{if .ViolationsOmitted}}<div class="note">{{.ViolationsOmitted}}</div>{{end}}
<p class="sub">Policy violations in the scorecard: {{.Score.Violations}} (rejected actions of kind "policy"). Generated by corpsim report.</p>
</body>
</html>
`))
