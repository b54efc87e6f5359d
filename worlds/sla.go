package worlds

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/corpsim/corpsim/clock"
)

// PrioritySLA is the SLA of the tickets of one priority.
type PrioritySLA struct {
	Priority int
	SLA      clock.Duration
}

// SLAFor is the SLA of a ticket of priority drawn from t: its entry in
// SLAByPriority when the template has one (0, no SLA, for a priority it
// does not list), else SLA.
func (t *Template) SLAFor(priority int) clock.Duration {
	if t.SLAByPriority == nil {
		return t.SLA
	}
	for _, p := range t.SLAByPriority {
		if p.Priority == priority {
			return p.SLA
		}
	}
	return 0
}

// fileSLA is a ticket template's sla: a duration ("4h"), or from version 2
// a mapping of priority to duration ({1: 1d, 2: 4h, 3: 1h}).
type fileSLA struct {
	Fixed      string // a duration for every ticket
	byPriority map[int]string
	isMap      bool
}

// UnmarshalYAML accepts a scalar or a mapping.
func (d *fileSLA) UnmarshalYAML(n ast.Node) error {
	const want = `expected a duration like "4h" or a mapping of priority to duration like {1: 1d, 2: 4h}`
	switch unwrap(n).(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode:
		var s string
		if err := yaml.NodeToValue(n, &s); err != nil {
			return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
		}
		*d = fileSLA{Fixed: s}
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		var m map[int]string
		if err := yaml.NodeToValue(n, &m); err != nil {
			return err
		}
		*d = fileSLA{byPriority: m, isMap: true}
		return nil
	case *ast.NullNode:
		*d = fileSLA{}
		return nil
	}
	return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
}

// sla reads a template's sla into out; out.Priority must be read already,
// and extra is a priority given to every ticket instead of a drawn one
// (an urgent interruption's), nil for none.
func (v *validator) sla(path string, s fileSLA, out *Template, cal *clock.Calendar, extra *int) {
	if !s.isMap {
		if s.Fixed != "" {
			out.SLA, _ = v.duration(path, s.Fixed, cal.DayLength(), true)
			if need := workOf(out); out.SLA > 0 && need > out.SLA {
				v.warnf(path, "the SLA (%s) is shorter than the work every ticket needs (%s): no ticket can meet it", out.SLA, need)
			}
		}
		return
	}
	if !v.needs(2, path, "an SLA by priority") {
		return
	}
	out.SLAByPriority = []PrioritySLA{}
	for _, p := range slices.Sorted(maps.Keys(s.byPriority)) {
		pp := path + "." + strconv.Itoa(p)
		d, ok := v.duration(pp, s.byPriority[p], cal.DayLength(), true)
		if !ok {
			continue
		}
		out.SLAByPriority = append(out.SLAByPriority, PrioritySLA{Priority: p, SLA: d})
		if need := workOf(out); need > d {
			v.warnf(pp, "the SLA (%s) is shorter than the work every ticket needs (%s): no ticket of priority %d can meet it", d, need, p)
		}
	}
	// Every priority a ticket can get needs its SLA.
	var drawn []int
	switch {
	case extra != nil:
		drawn = []int{*extra}
	case len(out.Priority) == 0:
		drawn = []int{0}
	default:
		for _, w := range out.Priority {
			if w.Weight > 0 {
				drawn = append(drawn, w.Priority)
			}
		}
	}
	for _, p := range drawn {
		if _, ok := s.byPriority[p]; !ok {
			v.errf(path, "the SLA by priority has no entry for priority %d, which tickets can get (%s)", p, listed(s.byPriority))
		}
	}
}

// listed names the priorities a map has, for an error message.
func listed(m map[int]string) string {
	if len(m) == 0 {
		return "it lists none"
	}
	keys := slices.Sorted(maps.Keys(m))
	s := "it lists"
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %d", k)
	}
	return s
}
