package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/analyze"
)

// MemberRow is a member's line of the members table: the scorecard's
// credit, and what else the member did for the team.
type MemberRow struct {
	policies.MemberCredit
	Role    string
	Agent   string // the agent kind that played the seat; "simulated colleague" for an NPC
	Decided int    // approval steps decided (granted or rejected)
	Answers int    // messages that replied to a colleague or gave information
	Blocked string // BlockedOthers as working time for people ("2d3h")
}

// Report is everything a report page shows, already bounded in size.
type Report struct {
	Session, World, Description string
	Seed                        uint64 // the session's own (a fork's, for a fork)
	RootSeed                    uint64 // as session.started recorded it (the root session's)
	Parent                      string // the session a fork was made from; "" if not a fork
	ForkSeq                     uint64 // the last of the parent's events the fork shares
	Load                        float64
	Agents                      string
	Events                      uint64
	End                         int64 // simulated milliseconds of the last event
	StartWall, EndWall          string
	Ended                       string
	Verified                    string // the end-of-log state hash check, "" when the log has no end
	Score                       policies.Scorecard
	Members                     []MemberRow // the scorecard's, at most MaxGanttRows of them
	MembersNote                 string
	Late, Overdue               int // project tasks done after / still open past their deadline

	Why                       Why
	Gantt                     Gantt
	DAG                       DAG
	Queues, Reward, Approvals LineChart
	QueuesNote, ApprovalsNote string
	Interruptions             []Interruption // marked on every time chart
	InterruptionsNote         string
	Desks                     []DeskRow // approvers, those requests waited on longest first
	SLA                       SLA
	// Cases is the cases section (format 2): nil without cases or without
	// an analysis of the session.
	Cases *analyze.CaseSummary
	// Outcomes is the outcomes section (format 2 systems, outcomes.go):
	// nil in a world without systems.
	Outcomes       *Outcomes
	Rejections     Rejections
	Breaches       int
	BreachExamples []string
	Unverified     []string // the first of the scorecard's unverified completions
	UnverifiedMore int      // how many more there are
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
		{"approvals", r.ApprovalsNote, r.Approvals},
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
	"elapsed": func(ms int64) string { return clock.Duration(ms).Human() },
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
	"add":  func(a, b int) int { return a + b },
	"slaTable": func(title, head, id string, rows []SLARow) any {
		return struct {
			Title, Head, ID string
			Rows            []SLARow
		}{title, head, id, rows}
	},
	"rejTable": func(id string, rows []RejectionGroup, empty string) any {
		return struct {
			ID, Empty string
			Rows      []RejectionGroup
		}{id, empty, rows}
	},
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
h3 { font-size: 14px; margin: 16px 0 4px; }
.sub { color: #666; margin-bottom: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card b { display: block; font-size: 20px; }
.card span { color: #666; font-size: 12px; }
.bad b { color: #c0392b; }
.card.done-late b { color: #d94801; }
.card.overdue b { color: #a50f15; }
.swatch { display: inline-block; width: 10px; height: 10px; border: 1px solid #999; margin-right: 4px; }
.scroll { overflow-x: auto; border: 1px solid #eee; border-radius: 6px; padding: 4px; }
.note { color: #8a6d3b; font-size: 13px; margin: 4px 0; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #eee; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
td.n { text-align: right; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 13px; }
dt { color: #666; }
.why { border-left: 3px solid #d94801; padding: 2px 10px; margin: 8px 0; font-size: 13px; }
.why.overdue { border-left-color: #a50f15; }
.why ul { margin: 4px 0; padding-left: 20px; }
.kind { display: inline-block; min-width: 70px; color: #555; font-weight: 600; }
.tables { display: flex; flex-wrap: wrap; gap: 24px; }
</style>
</head>
<body>
<h1>corpsim report: {{.World}}</h1>
<div class="sub">{{.Description}}</div>
<dl id="header">
<dt>session</dt><dd>{{.Session}}</dd>
{{if .Parent}}<dt>fork</dt><dd id="fork">fork of {{.Parent}} at event #{{.ForkSeq}} (shares its parent's first {{.ForkSeq}} events), continued with seed {{.Seed}}{{if ne .Seed .RootSeed}} (the log's session.started recorded seed {{.RootSeed}}){{end}}</dd>{{end}}
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
<div class="card{{if late .Score}} done-late{{end}}"><b>{{late .Score}}</b><span><i class="swatch" style="background:#fdd0a2;border-color:#d94801"></i>tasks done late</span></div>
<div class="card{{if .Overdue}} overdue{{end}}"><b>{{.Overdue}}</b><span><i class="swatch" style="background:#f4a6a6;border-color:#a50f15"></i>tasks open past deadline</span></div>{{end}}
{{if .Score.Tickets}}<div class="card"><b>{{.Score.TicketsResolved}} / {{.Score.Tickets}}</b><span>tickets resolved</span></div>
<div class="card"><b>{{.Score.TicketsInSLA}}</b><span>tickets within SLA</span></div>
<div class="card{{if .Score.SLABreaches}} bad{{end}}"><b>{{.Score.SLABreaches}}</b><span>SLA breaches</span></div>{{end}}
<div class="card{{if .Score.Violations}} bad{{end}}"><b>{{.Score.Violations}}</b><span>policy violations</span></div>
<div class="card"><b>{{.Rejections.ContentionN}}</b><span>lost races (contention)</span></div>
<div class="card"><b>{{.Score.Rejections}}</b><span>rejected actions</span></div>
<div class="card"><b>{{.Score.Timeouts}}</b><span>turn timeouts</span></div>
<div class="card{{if .Score.TurnErrors}} bad{{end}}"><b>{{.Score.TurnErrors}}</b><span>failed turns</span></div>
<div class="card{{if .Score.BudgetOverrun}} bad{{end}}"><b>{{.Score.BudgetOverrun}}</b><span>budget overrun</span></div>
<div class="card"><b>{{.Score.Turns}}</b><span>turns</span></div>
</div>
<h2>Why</h2>
<div id="why">
{{with .Why}}{{if .Note}}<div class="note">{{.Note}}</div>{{end}}
{{with .Causes}}<h3>Where the lost value went</h3>
<p class="sub">The work could have given {{f2 .Possible}} points; the team lost {{f2 .Lost}} of them, on {{.Failed}} of {{.Items}} tasks and tickets (as corpsim diagnose splits it).</p>
<table id="causes"><tr><th>cause</th><th>points lost</th><th>share</th><th>working time</th><th>who or what</th></tr>
{{range .Rows}}<tr data-cause="{{.Cause}}"><td>{{.Cause}}</td><td class="n">{{f2 .Points}}</td><td class="n">{{pct .Share}}</td><td class="n">{{.Hours}}</td><td>{{range $i, $d := .Detail}}{{if $i}}; {{end}}{{$d}}{{end}}</td></tr>
{{else}}<tr><td colspan="5">nothing was lost</td></tr>
{{end}}</table>{{end}}
<h3>Projects that missed their bonus ({{.FailedGoal}})</h3>
<div id="why-goals">
{{range .Goals}}<div class="why goal" data-project="{{.Project}}"><b>project {{.Project}}</b>: {{.Done}} of {{.Tasks}} tasks done and verified, {{.OnTime}} on time{{if .Deadline}}, deadline {{.Deadline}}{{end}}.
{{if .Path}}<div>path that decided its end: {{range $i, $t := .Path}}{{if $i}} → {{end}}{{$t}}{{end}}</div>{{end}}
{{if .Reasons}}<ul>{{range .Reasons}}<li><span class="kind">{{.Kind}}</span> {{.Task}} waited {{.Waited}}: {{.Text}}</li>{{end}}{{if .ReasonsOmitted}}<li>{{.ReasonsOmitted}} shorter waits not shown</li>{{end}}</ul>{{else}}<div>no wait along its path besides its dependencies: its work took longer than its deadline allowed</div>{{end}}
</div>
{{else}}<div class="sub">every project earned its bonus{{if not $.Score.Tasks}} (this world has no projects){{end}}</div>{{end}}
{{if .GoalsNote}}<div class="note">{{.GoalsNote}}</div>{{end}}
</div>
<h3>Late tasks and tickets ({{.LateItems}})</h3>
<div id="why-tasks">
{{range .Tasks}}<div class="why task {{.Outcome}}" data-task="{{.Task}}"><b>{{.Kind}} {{.Task}}</b> · {{if eq .Outcome "overdue"}}open past its deadline{{else}}done late{{end}} by {{.Late}} of working time
<div>{{.Summary}}</div>
{{if .Reasons}}<ul>{{range .Reasons}}<li><span class="kind">{{.Kind}}</span> {{.Waited}}: {{.Text}}</li>{{end}}</ul>{{end}}
</div>
{{else}}<div class="sub">nothing was late</div>{{end}}
{{if .TasksNote}}<div class="note">{{.TasksNote}}</div>{{end}}
</div>{{end}}
</div>
{{if .Members}}
<h2>Members</h2>
{{if .MembersNote}}<div class="note">{{.MembersNote}}</div>{{end}}
<table id="members"><tr><th>member</th><th>role</th><th>agent</th><th>delivered</th><th>share</th><th>critical path</th><th title="approval steps granted or rejected">approvals decided</th><th title="messages that replied to a colleague or gave information">answers given</th><th>violations</th><th>blocked others (working time)</th><th>messages sent</th></tr>
{{range .Members}}<tr data-member="{{.Member}}"><td>{{.Member}}</td><td>{{.Role}}</td><td>{{.Agent}}</td><td class="n">{{f2 .Delivered}}</td><td class="n">{{pct .Share}}</td><td class="n">{{pct .Critical}}</td><td class="n">{{.Decided}}</td><td class="n">{{.Answers}}</td><td class="n">{{.Violations}}</td><td class="n">{{.Blocked}}</td><td class="n">{{.MessagesSent}}</td></tr>
{{end}}</table>
{{end}}
{{if .InterruptionsNote}}<div class="note">{{.InterruptionsNote}}</div>{{end}}
{{if .Interruptions}}<div class="sub" id="interruptions">{{len .Interruptions}} interruptions marked on the time charts: <i class="swatch" style="background:#e15759;opacity:.5"></i>outages, <i class="swatch" style="background:#b07aa1;opacity:.5"></i>leaves (hover a band for what it was)</div>{{end}}
{{range .Charts}}
<section id="{{.ID}}">
{{if .Note}}<div class="note">{{.Note}}</div>{{end}}
<div class="scroll">{{.SVG}}</div>
</section>
{{end}}
<h2>Approvals by approver</h2>
<table id="approvers"><tr><th>approver</th><th>role</th><th>steps routed to them</th><th>decided by them</th><th>escalated away</th><th>peak waiting</th><th>waiting at the end</th><th>waited on their desk (working time)</th><th>longest wait</th></tr>
{{range .Desks}}<tr data-approver="{{.Approver}}"><td>{{.Approver}}</td><td>{{.Role}}</td><td class="n">{{.Routed}}</td><td class="n">{{.Decided}}</td><td class="n">{{.Escalated}}</td><td class="n">{{.Peak}}</td><td class="n">{{.WaitingAtEnd}}</td><td class="n">{{.Waited}}</td><td class="n">{{.Longest}}</td></tr>
{{else}}<tr><td colspan="9">no approval requests in this session</td></tr>
{{end}}</table>
{{if .SLA.Tickets}}
<h2>SLA</h2>
<div class="tables" id="sla">
{{template "sla" (slaTable "by priority" "priority" "sla-priority" .SLA.ByPriority)}}
{{template "sla" (slaTable "by queue" "queue" "sla-queue" .SLA.ByQueue)}}
{{template "sla" (slaTable "by arrival stream" "stream" "sla-stream" .SLA.ByStream)}}
</div>
{{end}}
{{with .Cases}}
<h2>Cases</h2>
<div id="cases">
<p class="sub">{{.Cases}} cases opened, {{.Done}} done (every step verified), {{.InSLA}} within their SLA, {{.Breached}} breached it. Lead times are working time from opening to done, of the done cases.</p>
<div class="tables">
<table id="case-templates"><caption>by template</caption><tr><th>template</th><th>cases</th><th>done</th><th>within SLA</th><th>breached</th><th>open</th><th>lead time (mean)</th><th>lead time (p90)</th></tr>
{{range .Templates}}<tr data-template="{{.Template}}"><td>{{.Template}}</td><td class="n">{{.Cases}}</td><td class="n">{{.Done}}</td><td class="n">{{.InSLA}}</td><td class="n">{{.Breached}}</td><td class="n">{{.Open}}</td><td class="n">{{.Mean.Text}}</td><td class="n">{{.P90.Text}}</td></tr>
{{end}}</table>
<table id="case-priority"><caption>SLA by priority</caption><tr><th>priority</th><th>cases</th><th>done</th><th>within SLA</th><th>breached</th><th>open</th><th>share within</th></tr>
{{range .ByPriority}}<tr data-key="{{.Priority}}"><td>{{.Priority}}</td><td class="n">{{.Cases}}</td><td class="n">{{.Done}}</td><td class="n">{{.InSLA}}</td><td class="n">{{.Breached}}</td><td class="n">{{.Open}}</td><td class="n">{{pct .Share}}</td></tr>
{{end}}</table>
</div>
<h3>Late and breached cases ({{len .Late}}{{if .LateOmitted}} of {{add (len .Late) .LateOmitted}}{{end}}): where they waited</h3>
{{range .Late}}<div class="why case" data-case="{{.Case}}"><b>case {{.Case}}</b> ({{.Template}}, priority {{.Priority}}) · {{.Outcome}}, {{.Over.Text}} of working time past its SLA
{{if .AtSLA}}<div>when its SLA passed: {{range $i, $w := .AtSLA}}{{if $i}}; {{end}}<span class="kind">{{$w.Kind}}</span> {{$w.Task}} {{$w.Text}}{{end}}</div>{{end}}
{{if .Waits}}<ul>{{range .Waits}}<li data-step="{{.Task}}"><span class="kind">{{.Kind}}</span> {{.Task}} waited {{.Waited.Text}}: {{.Text}}</li>{{end}}{{if .WaitsOmitted}}<li>{{.WaitsOmitted}} shorter waits not shown</li>{{end}}</ul>{{end}}
</div>
{{else}}<div class="sub">no case was late or breached its SLA</div>{{end}}
{{if .LateOmitted}}<div class="note">{{.LateOmitted}} more late or breached cases not shown (those furthest past their SLA are)</div>{{end}}
</div>
{{end}}
{{template "outcomes" .}}
<h2>Refused actions</h2>
<div id="violations">
<p class="sub">{{.Score.Rejections}} refused actions: {{.Rejections.PolicyN}} policy violations (penalised), {{.Rejections.ContentionN}} lost races for an item another member took or decided first (contention), {{.Rejections.OtherN}} other refusals.</p>
<h3>Policy violations, by rule</h3>
{{template "rejections" (rejTable "policy-violations" .Rejections.Policy "no policy violations")}}
<h3>Contention: races for the same item</h3>
{{template "rejections" (rejTable "contention" .Rejections.Contention "no lost races")}}
<h3>Other refusals, by rule</h3>
{{template "rejections" (rejTable "other-refusals" .Rejections.Other "no other refusals")}}
{{if .Rejections.Note}}<div class="note">{{.Rejections.Note}}</div>{{end}}
</div>
{{if or .Breaches .Score.BudgetOverrun .Unverified}}
<h2>Penalties and uncounted work</h2>
<table id="penalties"><tr><th>kind</th><th>what</th><th>count</th></tr>
{{if .Breaches}}<tr><td>sla.breached</td><td>{{if .Score.Cases}}tickets and cases{{else}}tickets{{end}} still open when their SLA passed: {{range $i, $t := .BreachExamples}}{{if $i}}, {{end}}{{$t}}{{end}}{{if gt .Breaches (len .BreachExamples)}} …{{end}}</td><td class="n">{{.Breaches}}</td></tr>
{{end}}{{if .Score.BudgetOverrun}}<tr><td>budget overrun</td><td>spending beyond the teams' budgets</td><td class="n">{{.Score.BudgetOverrun}}</td></tr>
{{end}}{{range .Unverified}}<tr><td>unverified</td><td>{{.}}</td><td class="n">1</td></tr>
{{end}}{{if .UnverifiedMore}}<tr><td>unverified</td><td>{{.UnverifiedMore}} more completions that do not count</td><td class="n">{{.UnverifiedMore}}</td></tr>
{{end}}</table>
{{end}}
<p class="sub">Policy violations in the scorecard: {{.Score.Violations}} (rejected actions of kind "policy"). Generated by corpsim report.</p>
</body>
</html>
{{define "sla"}}<table id="{{.ID}}"><caption>{{.Title}}</caption><tr><th>{{.Head}}</th><th>tickets</th><th>within SLA</th><th>resolved late</th><th>open past SLA</th><th>open</th><th>unverified</th><th>breaches</th><th>share within</th></tr>
{{range .Rows}}<tr data-key="{{.Key}}"><td>{{.Key}}</td><td class="n">{{.Tickets}}</td><td class="n">{{.InSLA}}</td><td class="n">{{.Late}}</td><td class="n">{{.Overdue}}</td><td class="n">{{.Open}}</td><td class="n">{{.Unverified}}</td><td class="n">{{.Breaches}}</td><td class="n">{{pct .Share}}</td></tr>
{{end}}</table>{{end}}
{{define "rejections"}}<table id="{{.ID}}"><tr><th>kind</th><th>action</th><th>rule</th><th>count</th><th>items</th><th>members</th><th>first at</th><th>first reason</th></tr>
{{range .Rows}}<tr data-class="{{.Class}}"><td>{{.Kind}}</td><td>{{.Action}}</td><td>{{.Rule}}</td><td class="n">{{.Count}}</td><td class="n">{{.Items}}</td><td>{{members .Members}}</td><td>{{.FirstWall}}</td><td>{{.Example}}</td></tr>
{{else}}<tr><td colspan="8">{{.Empty}}</td></tr>
{{end}}</table>{{end}}
`))
