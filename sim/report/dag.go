package report

import (
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/corpsim/corpsim/org"
)

// PathTask is what CriticalPath needs of a task.
type PathTask struct {
	ID     string
	Effort int64
	Deps   []string
}

// CriticalPath returns the chain of dependencies with the most total
// effort among tasks, from its first task to its last, by the rubric's
// rule (policies' per-member critical-path credit): on a tie the path
// through the earlier task (in the order given) wins. Dependencies that are
// not among tasks are ignored; a cycle is cut where it closes.
func CriticalPath(tasks []PathTask) []string {
	byID := make(map[string]*PathTask, len(tasks))
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
	}
	longest := map[string]int64{}
	next := map[string]string{}
	visiting := map[string]bool{}
	var walk func(id string) int64
	walk = func(id string) int64 {
		if d, ok := longest[id]; ok {
			return d
		}
		t := byID[id]
		if t == nil || visiting[id] {
			return 0
		}
		visiting[id] = true
		best, via := int64(0), ""
		for _, d := range t.Deps {
			if byID[d] == nil {
				continue
			}
			if l := walk(d); l > best {
				best, via = l, d
			}
		}
		visiting[id] = false
		longest[id], next[id] = best+t.Effort, via
		return best + t.Effort
	}
	top, total := "", int64(-1)
	for _, t := range tasks {
		if l := walk(t.ID); l > total {
			top, total = t.ID, l
		}
	}
	var path []string
	for id := top; id != ""; id = next[id] {
		path = append(path, id)
	}
	slices.Reverse(path)
	return path
}

// DAGNode is a project task in the DAG chart.
type DAGNode struct {
	ID, Title, Project string
	Deps               []string // those shown
	Status             string   // org task status
	Who                string   // who did it, or holds it
	Critical           bool     // on its project's critical path
	Late               bool     // done after its deadline, or still open past it
	Overdue            bool     // of the late ones, still open past its deadline
	Layer, Row         int
}

// DAG is the task graph of the world's projects.
type DAG struct {
	Nodes    []DAGNode
	Projects []string // in world order, those shown
	Bands    []int    // rows per project band
	Layers   int
	Total    int // project tasks in the world
	Note     string
}

// BuildDAG lays out the project tasks of st, at most maxNodes of them. It
// keeps whole projects, the most troubled first (late tasks, then
// unfinished critical-path tasks), while they fit; when even the first does
// not fit, it keeps that project's critical path and late tasks and as many
// others, in file order, as fit.
func BuildDAG(st *org.State, maxNodes int) DAG {
	w := st.World
	type proj struct {
		idx            int
		id             string
		tasks          []*org.Task
		critical       map[string]bool
		late, critOpen int
	}
	var projects []*proj
	d := DAG{}
	for i, p := range w.Projects {
		pr := &proj{idx: i, id: p.ID, critical: map[string]bool{}}
		var pts []PathTask
		for _, spec := range p.Tasks {
			t := st.Task(spec.ID)
			pr.tasks = append(pr.tasks, t)
			pts = append(pts, PathTask{ID: t.ID, Effort: int64(t.Effort), Deps: spec.Deps})
		}
		for _, id := range CriticalPath(pts) {
			pr.critical[id] = true
			if st.Task(id).Status != org.StatusDone {
				pr.critOpen++
			}
		}
		for _, t := range pr.tasks {
			if isLate(st, t) {
				pr.late++
			}
		}
		d.Total += len(pr.tasks)
		projects = append(projects, pr)
	}
	order := slices.Clone(projects)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].late != order[j].late {
			return order[i].late > order[j].late
		}
		return order[i].critOpen > order[j].critOpen
	})
	keep := map[string]bool{}
	shownProjects := map[int]bool{}
	n := 0
	for _, pr := range order {
		if n+len(pr.tasks) > maxNodes {
			if n == 0 { // not even one whole project fits: its most telling tasks
				for _, t := range pr.tasks {
					if n < maxNodes && (pr.critical[t.ID] || isLate(st, t)) {
						keep[t.ID] = true
						n++
					}
				}
				for _, t := range pr.tasks {
					if n < maxNodes && !keep[t.ID] {
						keep[t.ID] = true
						n++
					}
				}
				shownProjects[pr.idx] = true
			}
			continue
		}
		for _, t := range pr.tasks {
			keep[t.ID] = true
		}
		n += len(pr.tasks)
		shownProjects[pr.idx] = true
	}
	if n < d.Total {
		d.Note = fmt.Sprintf("%d of %d project tasks shown (%d of %d projects, the most troubled first); %d tasks omitted",
			n, d.Total, len(shownProjects), len(projects), d.Total-n)
	}
	// Layers: the longest chain of shown dependencies below each task.
	layer := map[string]int{}
	var depth func(t *org.Task) int
	depth = func(t *org.Task) int {
		if l, ok := layer[t.ID]; ok {
			return l
		}
		layer[t.ID] = 0 // cuts a cycle, should a world have one
		l := 0
		for _, dep := range t.Spec.Deps {
			if keep[dep] {
				l = max(l, depth(st.Task(dep))+1)
			}
		}
		layer[t.ID] = l
		return l
	}
	for _, pr := range projects {
		if !shownProjects[pr.idx] {
			continue
		}
		rows := map[int]int{}
		band := 0
		for _, t := range pr.tasks {
			if !keep[t.ID] {
				continue
			}
			nd := DAGNode{ID: t.ID, Title: t.Spec.Title, Project: pr.id, Status: t.Status, Critical: pr.critical[t.ID], Late: isLate(st, t)}
			nd.Overdue = nd.Late && t.Status != org.StatusDone
			nd.Who = t.DoneBy
			if nd.Who == "" {
				nd.Who = t.Assignee
			}
			for _, dep := range t.Spec.Deps {
				if keep[dep] {
					nd.Deps = append(nd.Deps, dep)
				}
			}
			nd.Layer = depth(t)
			nd.Row = rows[nd.Layer]
			rows[nd.Layer]++
			band = max(band, rows[nd.Layer])
			d.Layers = max(d.Layers, nd.Layer+1)
			d.Nodes = append(d.Nodes, nd)
		}
		d.Projects = append(d.Projects, pr.id)
		d.Bands = append(d.Bands, band)
	}
	return d
}

// isLate reports whether a task with a deadline was done after it, or is
// still open past it.
func isLate(st *org.State, t *org.Task) bool {
	if t.Deadline == 0 {
		return false
	}
	if t.Status == org.StatusDone {
		return t.DoneAt > t.Deadline
	}
	return st.Now > t.Deadline
}

// Fill and stroke of the late tasks: done late (orange) and still open
// past the deadline (red), as the scorecard's cards show them.
var (
	dagDoneLate = [2]string{"#fdd0a2", "#d94801"}
	dagOverdue  = [2]string{"#f4a6a6", "#a50f15"}
)

const (
	dagNodeW  = 120
	dagNodeH  = 22
	dagPitchX = 160
	dagPitchY = 30
	dagTop    = 40
	dagBandH  = 22 // the project's label above its band
)

// WriteSVG draws the DAG as a standalone <svg> element: a band per
// project, a column per layer of dependencies, critical-path tasks and the
// edges between them outlined, late tasks in red.
func (d DAG) WriteSVG(w io.Writer) error {
	W := max(20+d.Layers*dagPitchX, 820) // at least the legend's width
	H := dagTop + 10
	bandTop := map[string]int{}
	for i, p := range d.Projects {
		bandTop[p] = H
		H += dagBandH + d.Bands[i]*dagPitchY + 6
	}
	if len(d.Nodes) == 0 {
		H += 40
	}
	pos := map[string][2]int{}
	for _, nd := range d.Nodes {
		pos[nd.ID] = [2]int{10 + nd.Layer*dagPitchX, bandTop[nd.Project] + dagBandH + nd.Row*dagPitchY}
	}
	v := dagView{W: W, H: H, NodeW: dagNodeW, NodeH: dagNodeH}
	legend := []struct{ fill, stroke, sw, label string }{
		{"#d9f0d3", "#999", "1", "done on time"}, {dagDoneLate[0], dagDoneLate[1], "1", "done late"},
		{dagOverdue[0], dagOverdue[1], "1", "open past deadline"},
		{"#deebf7", "#999", "1", "in hand"}, {"#f0f0f0", "#999", "1", "open"}, {"#fff", "#e6550d", "3", "critical path"},
	}
	for i, l := range legend {
		x := 170 + i*100
		if i >= 3 {
			x += 40 // "open past deadline" is a longer label
		}
		v.Legend = append(v.Legend, dagLegend{X: x, TX: x + 18, Fill: l.fill, Stroke: l.stroke, Width: l.sw, Label: l.label})
	}
	if len(d.Nodes) == 0 {
		v.Empty = &svgLabel{20, dagTop + 20, "this world has no project tasks (only tickets)"}
	}
	for i, p := range d.Projects {
		y := bandTop[p]
		v.Bands = append(v.Bands, dagBand{Y: y, H: dagBandH + d.Bands[i]*dagPitchY, LabelY: y + 15, Stripe: i%2 == 0, Label: "project " + p})
	}
	critical := map[string]bool{}
	for _, nd := range d.Nodes {
		critical[nd.ID] = nd.Critical
	}
	for _, nd := range d.Nodes {
		to := pos[nd.ID]
		for _, dep := range nd.Deps {
			from := pos[dep]
			e := dagEdge{X1: from[0] + dagNodeW, Y1: from[1] + dagNodeH/2, X2: to[0], Y2: to[1] + dagNodeH/2, Stroke: "#999", Width: "1"}
			if nd.Critical && critical[dep] {
				e.Stroke, e.Width = "#e6550d", "2.5"
			}
			e.MX = (e.X1 + e.X2) / 2
			v.Edges = append(v.Edges, e)
		}
	}
	for _, nd := range d.Nodes {
		p := pos[nd.ID]
		n := dagNodeView{X: p[0], Y: p[1], TX: p[0] + 6, TY: p[1] + 15, Fill: "#f0f0f0", Stroke: "#999", StrokeWidth: "1", Label: truncate(nd.ID, 18)}
		switch {
		case nd.Overdue:
			n.Fill, n.Stroke = dagOverdue[0], dagOverdue[1]
		case nd.Late:
			n.Fill, n.Stroke = dagDoneLate[0], dagDoneLate[1]
		case nd.Status == org.StatusDone:
			n.Fill = "#d9f0d3"
		case nd.Status != org.StatusOpen:
			n.Fill = "#deebf7"
		}
		if nd.Critical {
			n.Stroke, n.StrokeWidth = "#e6550d", "3"
		}
		n.Tip = nd.ID + ": " + nd.Title + " (" + nd.Status
		if nd.Who != "" {
			n.Tip += ", " + nd.Who
		}
		switch {
		case nd.Overdue:
			n.Tip += ", open past its deadline"
		case nd.Late:
			n.Tip += ", done late"
		}
		if nd.Critical {
			n.Tip += ", critical path"
		}
		n.Tip += ")"
		n.Class = "node"
		if nd.Critical {
			n.Class += " critical"
		}
		switch {
		case nd.Overdue:
			n.Class += " late overdue"
		case nd.Late:
			n.Class += " late done-late"
		}
		v.Nodes = append(v.Nodes, n)
	}
	return execSVG(w, "dag", v)
}
