package analyze

import (
	"cmp"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// TaskRow is one task of a project, in short.
type TaskRow struct {
	Task    string `json:"task"`
	Status  string `json:"status"`
	DoneBy  string `json:"done_by,omitempty"`
	Ready   *Stamp `json:"ready,omitempty"`
	Claimed *Stamp `json:"claimed,omitempty"`
	Done    *Stamp `json:"done,omitempty"`
	Outcome string `json:"outcome"`
	Late    Work   `json:"late"`
	Gate    string `json:"gate,omitempty"` // the dependency done last, which made it ready
	// Longest is its longest wait other than for its dependencies (the
	// rows' order and Gate show those), if it waited at all.
	Longest *Delay `json:"longest,omitempty"`
}

// GoalTrace is a project's tasks and its critical path.
type GoalTrace struct {
	Project  string    `json:"project"`
	Team     string    `json:"team"`
	Queue    string    `json:"queue"`
	Started  Stamp     `json:"started"`
	Deadline *Stamp    `json:"deadline,omitempty"`
	Tasks    []TaskRow `json:"tasks"`
	Done     int       `json:"done"`
	OnTime   int       `json:"on_time"`
	Bonus    bool      `json:"bonus"` // every task verified and on time
	// CriticalPath is the path as it happened: from the task finished last
	// (or one still open) back through the dependency that finished last
	// at each step, listed from the first task to the last. Like Planned,
	// it passes through the tasks of other projects that gated this one's.
	CriticalPath []TaskRow `json:"critical_path"`
	// Planned is the chain of dependencies with the most effort, as the
	// world file lays it out (the rubric's critical path).
	Planned []string `json:"planned"`
	// Delays are the longest waits along CriticalPath, longest first.
	Delays []Delay `json:"delays"`
}

// Goal traces project id.
func (s *Session) Goal(id string) (*GoalTrace, error) {
	var p *worlds.Project
	for i := range s.World.Projects {
		if s.World.Projects[i].ID == id {
			p = &s.World.Projects[i]
		}
	}
	if p == nil {
		ids := make([]string, len(s.World.Projects))
		for i := range s.World.Projects {
			ids[i] = s.World.Projects[i].ID
		}
		return nil, unknown("project", id, ids)
	}
	g := &GoalTrace{Project: id, Team: p.Team, Queue: p.Queue, Started: s.stamp(s.createdSeq(id), p.Start)}
	if p.Deadline > 0 {
		st := s.stamp(0, p.Deadline)
		g.Deadline = &st
	}
	rows := map[string]*TaskTrace{}
	for _, spec := range p.Tasks {
		tr, err := s.Task(spec.ID)
		if err != nil {
			return nil, err
		}
		rows[spec.ID] = tr
		g.Tasks = append(g.Tasks, row(tr))
		if tr.Done != nil && tr.Unverified == "" {
			g.Done++
			if tr.Outcome != "late" {
				g.OnTime++
			}
		}
	}
	g.Bonus = policies.ProjectBonus(s.State, p) > 0 || (p.Value == 0 && g.OnTime == len(p.Tasks))

	// The path as it happened: start at the sink finished last (open ones
	// count as later than any), walk back through the gating dependency.
	dependents := map[string]int{}
	for _, spec := range p.Tasks {
		for _, d := range spec.Deps {
			dependents[d]++
		}
	}
	later := func(a, b *org.Task) bool { // a finished after b
		if (a.Status == org.StatusDone) != (b.Status == org.StatusDone) {
			return a.Status != org.StatusDone
		}
		return a.DoneSeq > b.DoneSeq
	}
	var last *org.Task
	for _, spec := range p.Tasks {
		t := s.State.Task(spec.ID)
		if dependents[spec.ID] == 0 && (last == nil || later(t, last)) {
			last = t
		}
	}
	var path []TaskRow
	for t := last; t != nil; {
		tr := rows[t.ID]
		if tr == nil {
			// A task of another project, which one of this project's
			// depended on and which gated it.
			var err error
			if tr, err = s.Task(t.ID); err != nil {
				return nil, err
			}
			rows[t.ID] = tr
		}
		path = append(path, row(tr))
		for _, d := range tr.Delays {
			if d.Kind != DelayDependency {
				g.Delays = append(g.Delays, d)
			}
		}
		var gate *org.Task
		for _, d := range t.Spec.Deps {
			dt := s.State.Task(d)
			if gate == nil || later(dt, gate) {
				gate = dt
			}
		}
		t = gate
	}
	slices.Reverse(path)
	g.CriticalPath = path
	slices.SortStableFunc(g.Delays, func(a, b Delay) int { return cmp.Compare(b.Waited.MS, a.Waited.MS) })
	g.Planned = s.planned(p.Tasks)
	return g, nil
}

func row(tr *TaskTrace) TaskRow {
	r := TaskRow{Task: tr.Task, Status: tr.Status, DoneBy: tr.DoneBy, Ready: tr.Ready, Done: tr.Done, Outcome: tr.Outcome, Late: tr.Late}
	if tr.Unverified != "" {
		r.Outcome += " (unverified)"
	}
	if len(tr.Holds) > 0 {
		st := tr.Holds[0].From
		r.Claimed = &st
	}
	for _, d := range tr.Deps {
		if d.Gating {
			r.Gate = d.Task
		}
	}
	for _, d := range tr.Delays {
		if d.Kind != DelayDependency && d.Waited.MS > 0 {
			r.Longest = &d
			break
		}
	}
	return r
}

// planned is the chain of dependencies with the most effort, first task first.
func (s *Session) planned(tasks []worlds.Task) []string {
	longest := map[string]clock.Duration{}
	next := map[string]string{}
	var walk func(id string) clock.Duration
	walk = func(id string) clock.Duration {
		if d, ok := longest[id]; ok {
			return d
		}
		t := s.State.Task(id)
		best, via := clock.Duration(0), ""
		for _, d := range t.Spec.Deps {
			if l := walk(d); l > best {
				best, via = l, d
			}
		}
		longest[id], next[id] = best+t.Effort, via
		return best + t.Effort
	}
	top, total := "", clock.Duration(-1)
	for _, spec := range tasks {
		if l := walk(spec.ID); l > total {
			top, total = spec.ID, l
		}
	}
	var out []string
	for id := top; id != ""; id = next[id] {
		out = append(out, id)
	}
	slices.Reverse(out)
	return out
}
