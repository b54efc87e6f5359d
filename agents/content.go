package agents

import (
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file is how the baselines do the content of a case step with an
// outcome (format 2 systems): read the record the step names, compute
// the values the step's rule gives (its outcome's expressions, which the
// observation shows), write them, then complete the step. Where the values
// come from is what tells the baselines apart:
//   - firstSeen (greedy, planner): the first system listed that holds the
//     record or a copy of it, and the first copy found there — process done
//     well, content taken as it comes;
//   - byPolicy (diligent): the system the policy ranks first, as the
//     policy text says;
//   - truth (oracle): the records as the world draws them with the session's draws,
//     read from the world itself: the upper bound.

// contentMode says where an agent takes the values an outcome reads.
type contentMode int

const (
	firstSeen contentMode = iota
	byPolicy
	truth
)

// content is an agent's way with outcomes. The zero value is firstSeen.
type content struct {
	mode  contentMode
	world *worlds.World // truth: the world whose records it reads
	draws worlds.Draws
	truth map[string]map[string]any // truth: type/id -> fields, drawn once
	// meet is what it learnt about attendees by asking (byPolicy; meetings.go).
	meet meetingMemory
}

// source is where a record's values can be read: a system's record type
// (the record itself, or a copy of it found by its key field).
type source struct {
	system, record, key string
	rank                int
}

// sources lists the places the member may read record type typ from, in
// the order the observation lists the systems.
func sources(o org.Observation, typ string) []source {
	var out []source
	for _, s := range o.Systems {
		if !slices.Contains(s.May, org.ActGet) {
			continue
		}
		for _, t := range s.Types {
			switch {
			case t.ID == typ:
				out = append(out, source{system: s.ID, record: t.ID, rank: s.Policy})
			case t.CopyOf == typ:
				out = append(out, source{system: s.ID, record: t.ID, key: t.Key, rank: s.Policy})
			}
		}
	}
	return out
}

// pick chooses the source the mode reads.
func (c *content) pick(o org.Observation, typ string) (source, bool) {
	src := sources(o, typ)
	if len(src) == 0 {
		return source{}, false
	}
	if c.mode == byPolicy {
		slices.SortStableFunc(src, func(a, b source) int {
			ra, rb := a.rank, b.rank
			if ra == 0 {
				ra = 1 << 30
			}
			if rb == 0 {
				rb = 1 << 30
			}
			return ra - rb
		})
	}
	return src[0], true
}

// found returns the fields the observation's results hold for the record
// id read from src: the record, or the first copy of it.
func found(o org.Observation, src source, id string) (map[string]any, bool) {
	for _, r := range o.Results {
		if r.Record != src.record {
			continue
		}
		for _, rv := range r.Records {
			if src.key == "" && rv.ID == id || src.key != "" && rv.Fields[src.key] == id {
				return rv.Fields, true
			}
		}
	}
	return nil, false
}

// usesRef reports whether an outcome's rule reads reference field name.
func usesRef(out *org.OutcomeView, name string) bool {
	for _, src := range out.Set { // order: a disjunction
		if strings.Contains(src, "ref."+name+".") {
			return true
		}
	}
	return false
}

// read returns the fields of record (typ, id) from the source the mode
// reads, if the observation's results hold them; else it appends the read
// that fetches them to reads. ok is false when it has them not.
func (c *content) read(o org.Observation, typ, id string, reads *[]org.Action) (map[string]any, bool) {
	src, ok := c.pick(o, typ)
	if !ok {
		return nil, false
	}
	if f, have := found(o, src, id); have {
		return f, true
	}
	if src.key == "" {
		*reads = append(*reads, org.Action{Type: org.ActGet, Record: src.record, ID: id})
	} else {
		*reads = append(*reads, org.Action{Type: org.ActSearch, Record: src.record,
			Fields: payload.NewActionAttrs(payload.Attrs{src.key: id})})
	}
	return nil, false
}

// step returns what to do about an outcome step t whose effort is spent:
// the reads it needs first (ready false: do not complete it this turn), or
// the writes of its values (ready true: complete it after them).
func (c *content) step(o org.Observation, t org.TaskView) (acts []org.Action, ready bool) {
	if t.Meeting != nil { // meetings.go
		if acts, ready := c.meeting(o, t); !ready || t.Outcome == nil {
			return acts, ready
		}
	}
	out := t.Outcome
	if out == nil {
		return nil, true
	}
	if c.mode != firstSeen {
		if asks, wait := c.askFacts(o, t); wait {
			return asks, false // content_kinds.go
		}
	}
	if out.Kind != "" {
		return c.kindStep(o, t)
	}
	rec, refs, reads := c.records(o, out)
	if len(reads) > 0 {
		return reads, false
	}
	if rec == nil {
		return nil, true // nothing it may read: complete as it is
	}
	env := worlds.RecordVars(caseVars(o, t.Case), rec, refs)
	set := payload.Attrs{}
	for _, f := range slices.Sorted(maps.Keys(out.Set)) {
		v, err := expr.Eval(out.Set[f], env)
		if err != nil || v == nil { // nil: a fact it was not told
			continue
		}
		if n, ok := v.(int); ok {
			v = int64(n)
		}
		set[f] = v
	}
	if len(set) == 0 {
		return nil, true
	}
	return []org.Action{{Type: org.ActUpdate, Record: out.Record, ID: out.ID, Fields: payload.NewActionAttrs(set)}}, true
}

// records returns the fields of the record out names (out.Record,
// out.ID) and of the records its rule reads through its reference fields
// (ref.<field>.<field>, found by the field's type in the observation's
// systems), from the source the mode reads; or the reads that fetch them
// first. rec is nil when there is nothing it may read.
func (c *content) records(o org.Observation, out *org.OutcomeView) (rec map[string]any, refs map[string]map[string]any, reads []org.Action) {
	refTypes := map[string]string{} // reference field -> its record type
	for _, s := range o.Systems {
		for _, ty := range s.Types {
			if ty.ID != out.Record {
				continue
			}
			for name, kind := range ty.Fields { // order: each entry is its own
				if to, ok := strings.CutPrefix(kind, "reference: "); ok && usesRef(out, name) {
					refTypes[name] = to
				}
			}
		}
	}
	refs = map[string]map[string]any{}
	if c.mode == truth && c.world != nil {
		if c.truth == nil {
			c.truth = map[string]map[string]any{}
			for _, r := range c.world.SeedRecords(c.draws) {
				c.truth[r.Type+"/"+r.ID] = r.Fields
			}
		}
		rec = c.truth[out.Record+"/"+out.ID]
		for name, to := range refTypes { // order: each entry is its own
			id, _ := rec[name].(string)
			refs[name] = c.truth[to+"/"+id]
		}
		return rec, refs, nil
	}
	rec, _ = c.read(o, out.Record, out.ID, &reads)
	if rec != nil {
		for _, name := range slices.Sorted(maps.Keys(refTypes)) {
			id, _ := rec[name].(string)
			if f, ok := c.read(o, refTypes[name], id, &reads); ok {
				refs[name] = f
			}
		}
		if len(reads) > 0 {
			// Results last one turn: read the step's record again with the others.
			c.read(org.Observation{Systems: o.Systems}, out.Record, out.ID, &reads)
		}
	}
	return rec, refs, reads
}
