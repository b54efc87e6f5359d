package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/analyze"
)

// Explainer is what the report's "why" section asks of a session's
// analysis: the causal story of a task and of a project, as corpsim trace
// tells them, and where the lost value went, as corpsim diagnose tells it.
// *analyze.Session implements it; the report writes no analysis of its own.
type Explainer interface {
	Task(id string) (*analyze.TaskTrace, error)
	Goal(id string) (*analyze.GoalTrace, error)
	Diagnose() *analyze.Diagnosis
	// Cases summarises the cases (format 2): lead time per template, SLA
	// by priority, and where at most maxLate late or breached cases waited.
	Cases(maxLate int) *analyze.CaseSummary
}

// CauseRow is one cause of the lost value, as corpsim diagnose gives it.
type CauseRow struct {
	Cause         string
	Points, Share float64 // lost points put down to it, and their share of all lost
	Hours         string  // working time of the failed items spent this way
	Detail        []string
}

// Causes is the session's diagnosis: the value its work could have given,
// what it lost, and the causes the loss splits into.
type Causes struct {
	Possible, Lost float64
	Failed, Items  int
	Rows           []CauseRow
}

// maxCauseDetail is how many parts of a cause's detail the table lists.
const maxCauseDetail = 3

var _ Explainer = (*analyze.Session)(nil)

// Reason is one wait that explains an outcome: its kind (dependency,
// unclaimed, approval, leave, outage, change…), how long in working time,
// and trace's sentence for it.
type Reason struct {
	Task   string // the task that waited
	Kind   string
	Waited string
	Text   string
}

// GoalWhy says why a project did not earn its bonus: how far it got, the
// path that decided its end, and the longest waits along that path.
type GoalWhy struct {
	Project        string
	Tasks, Done    int
	OnTime         int
	Deadline       string // "" when it has none
	Path           []string
	Reasons        []Reason
	ReasonsOmitted int
	Planned        []string // the rubric's critical path, as the world lays it out
}

// TaskWhy says why one task or ticket was late or is open past its
// deadline.
type TaskWhy struct {
	Task, Kind, Outcome string // outcome: "late" or "overdue"
	Late                string // working time past the deadline
	Summary             string
	Reasons             []Reason
}

// Why is the report's section of explanations.
type Why struct {
	Goals      []GoalWhy
	GoalsNote  string
	Tasks      []TaskWhy
	TasksNote  string
	Causes     *Causes // nil without an analysis
	FailedGoal int     // projects that did not earn their bonus
	LateItems  int     // tasks and tickets done late or open past their deadline
	// Note says why there are no explanations, when there cannot be any.
	Note string
}

// Bounds of the why section.
const (
	maxWhyReasons = 4 // per task
	maxGoalReason = 6 // per goal
)

func reasonsOf(ds []analyze.Delay, n int, skipDeps bool) ([]Reason, int) {
	var out []Reason
	omitted := 0
	for _, d := range ds {
		if d.Waited.MS <= 0 || (skipDeps && d.Kind == analyze.DelayDependency) {
			continue
		}
		if len(out) == n {
			omitted++
			continue
		}
		out = append(out, Reason{Task: d.Task, Kind: d.Kind, Waited: d.Waited.Text, Text: d.Text})
	}
	return out, omitted
}

// lateItem is a task or ticket past its deadline, with how far.
type lateItem struct {
	t    *org.Task
	late int64 // working milliseconds past the deadline
}

// why explains the failed goals and the late items of the final state.
func (b *Builder) why(r *Report) Why {
	var w Why
	st := b.st
	cal := &b.w.Calendar
	var late []lateItem
	for _, t := range st.AllTasks() {
		if t.Deadline == 0 || t.Hidden {
			continue
		}
		switch {
		case t.Status == org.StatusDone && t.DoneAt > t.Deadline:
			late = append(late, lateItem{t, int64(cal.WorkBetween(t.Deadline, t.DoneAt))})
		case t.Status != org.StatusDone && st.Now > t.Deadline:
			late = append(late, lateItem{t, int64(cal.WorkBetween(t.Deadline, st.Now))})
		}
	}
	w.LateItems = len(late)
	for _, p := range r.Score.Projects {
		if !p.Completed {
			w.FailedGoal++
		}
	}
	e := b.o.Explain
	if e == nil {
		w.Note = "no analysis of this session was available to the report (its replay did not match, or the caller gave none); corpsim trace explains single tasks"
		return w
	}
	if d := e.Diagnose(); d != nil {
		day := b.w.Calendar.DayLength()
		c := &Causes{Possible: d.Possible, Lost: d.Lost, Failed: d.Failed, Items: d.Items}
		for _, x := range d.Causes {
			row := CauseRow{Cause: x.Cause, Points: x.Points,
				Hours: analyze.FormatWork(clock.Duration(math.Round(x.Hours*float64(clock.Hour))), day)}
			if d.Lost > 0 {
				row.Share = x.Points / d.Lost
			}
			for i, p := range x.Detail {
				if i == maxCauseDetail {
					row.Detail = append(row.Detail, fmt.Sprintf("%d more", len(x.Detail)-maxCauseDetail))
					break
				}
				row.Detail = append(row.Detail, fmt.Sprintf("%s (%s)", p.What,
					analyze.FormatWork(clock.Duration(math.Round(p.Hours*float64(clock.Hour))), day)))
			}
			c.Rows = append(c.Rows, row)
		}
		w.Causes = c
	}
	// Failed goals, in world order.
	for _, p := range r.Score.Projects {
		if p.Completed {
			continue
		}
		if len(w.Goals) == b.o.MaxWhyGoals {
			continue
		}
		g, err := e.Goal(p.ID)
		if err != nil {
			continue
		}
		gw := GoalWhy{Project: p.ID, Tasks: p.Tasks, Done: p.Done, OnTime: p.OnTime, Planned: g.Planned}
		if g.Deadline != nil {
			gw.Deadline = g.Deadline.Human()
		}
		for _, row := range g.CriticalPath {
			gw.Path = append(gw.Path, row.Task+" ("+row.Outcome+")")
		}
		gw.Reasons, gw.ReasonsOmitted = reasonsOf(g.Delays, maxGoalReason, false)
		w.Goals = append(w.Goals, gw)
	}
	if w.FailedGoal > len(w.Goals) {
		w.GoalsNote = fmt.Sprintf("%d of %d projects that missed their bonus explained (in file order); %d omitted", len(w.Goals), w.FailedGoal, w.FailedGoal-len(w.Goals))
	}
	// Late items, the latest first.
	slices.SortStableFunc(late, func(a, c lateItem) int {
		if x := cmp.Compare(c.late, a.late); x != 0 {
			return x
		}
		return cmp.Compare(a.t.ID, c.t.ID)
	})
	for _, li := range late[:min(len(late), b.o.MaxWhyTasks)] {
		tr, err := e.Task(li.t.ID)
		if err != nil {
			continue
		}
		tw := TaskWhy{Task: tr.Task, Kind: tr.Kind, Outcome: tr.Outcome, Late: tr.Late.Text, Summary: tr.Summary}
		tw.Reasons, _ = reasonsOf(tr.Delays, maxWhyReasons, false)
		w.Tasks = append(w.Tasks, tw)
	}
	if len(late) > len(w.Tasks) {
		w.TasksNote = fmt.Sprintf("%d of %d late or overdue items explained (those furthest past their deadline); %d omitted", len(w.Tasks), len(late), len(late)-len(w.Tasks))
	}
	return w
}
