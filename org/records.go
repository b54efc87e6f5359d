package org

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds the records of a world's systems (format 2): drawn from
// the session's seed when it starts, read by get and search (the results
// reach the member in its next observation), changed only by
// record.written events, each with the values before and after. A member
// reads and writes only what its role may. A write that no case in the
// writer's hands asks for is collateral damage, counted here and charged
// by the rubric.

// Record tools an agent may use.
const (
	ActGet    = "get"    // {"type":"get","record":"invoice","id":"inv-7"}
	ActSearch = "search" // {"type":"search","record":"account","fields":{"invoice":"inv-7"},"page":2} (pages from 1; 0 is 1)
	ActUpdate = "update" // {"type":"update","record":"invoice","id":"inv-7","fields":{"refunded":120}}
	ActCreate = "create" // {"type":"create","record":"note","id":"n-1","fields":{…}}
	ActDelete = "delete" // {"type":"delete","record":"note","id":"n-1"}
)

// RecordActions are the record tools.
var RecordActions = []string{ActGet, ActSearch, ActUpdate, ActCreate, ActDelete}

// SearchPage is how many records one page of search results holds.
const SearchPage = 10

// RuleRecordAccess names the refusal of a record tool the member's role
// may not use on that system.
const RuleRecordAccess = "record-access"

// Record is a record's state.
type Record struct {
	Type    string        `json:"type"`
	ID      string        `json:"id"`
	Fields  payload.Attrs `json:"fields"`
	Deleted bool          `json:"deleted,omitempty"`
	// Truth, from log format TruthFormat on, is the record as the seed and
	// the cases' own steps left it, once a collateral write (one no case
	// step in the writer's hands asked for) has changed it: what a case
	// opened from then on is verified against (TruthOf). nil: the record
	// is as they left it.
	Truth *RecordTruth `json:"truth,omitempty"`
}

// RecordTruth is a record as the seed and the cases' own steps left it
// (Record.Truth): its fields, and whether it was deleted or never
// existed (a record only a collateral write created).
type RecordTruth struct {
	Fields  payload.Attrs `json:"fields,omitempty"`
	Deleted bool          `json:"deleted,omitempty"`
	Absent  bool          `json:"absent,omitempty"`
}

// TruthFormat is the first log format whose cases are verified against
// the records as the seed and the cases' own steps left them
// (Record.Truth, TruthOf): a collateral write changes the record every
// member reads, not what a case opened later expects. Before it, a case's
// expected outcomes were computed from the record as it stood, so a member
// who wrote every invoice's amount to 0 ahead of their cases (each write
// charged at the violation penalty, far below a case's value) made
// "refund 0" the right outcome of every one.
const TruthFormat = 7

// RedoDepsFormat is the first log format whose rubric takes a case step's
// dependency that its requester reopened as the task that redoes it
// (policies' redoneAs): a step that stood counts once the redo does.
const RedoDepsFormat = 7

// TruthOf returns the fields of record typ/id as the seed and the cases'
// own steps left them (its Truth, or its fields when no collateral write
// changed it), or false if it does not exist so (never created, deleted).
// Before TruthFormat it is the record as it stands.
func (s *State) TruthOf(typ, id string) (payload.Attrs, bool) {
	r := s.Record(typ, id)
	if r == nil {
		return nil, false
	}
	return r.TrueFields()
}

// TrueFields is TruthOf of r.
func (r *Record) TrueFields() (payload.Attrs, bool) {
	if r.Truth != nil {
		return r.Truth.Fields, !r.Truth.Deleted && !r.Truth.Absent
	}
	return r.Fields, !r.Deleted
}

// keepTruth, before a collateral write changes r, keeps what r was as the
// cases' steps left it (once: a later collateral write changes only the
// record). r is nil for a record the write creates.
func (s *State) keepTruth(r *Record) *RecordTruth {
	if r == nil {
		return &RecordTruth{Absent: true}
	}
	if r.Truth == nil {
		r.Truth = &RecordTruth{Fields: maps.Clone(r.Fields), Deleted: r.Deleted}
	}
	return r.Truth
}

// RecordView is a record as a read shows it.
type RecordView struct {
	System string        `json:"system"`
	Record string        `json:"record"` // its type
	ID     string        `json:"id"`
	Fields payload.Attrs `json:"fields"`
	Text   string        `json:"text,omitempty"` // the record in words (the type's text template)
}

// ReadResult is what one get or search found, shown in the member's next
// observation.
type ReadResult struct {
	Op      string        `json:"op"`
	Record  string        `json:"record"`
	ID      string        `json:"id,omitempty"`
	Filter  payload.Attrs `json:"filter,omitempty"`
	Page    int           `json:"page,omitempty"`
	Records []RecordView  `json:"records"`
	More    int           `json:"more,omitempty"` // matches on later pages
}

// CaseOutcome is what a step of a case must leave behind (computed when
// the case opened, hidden from agents) and the values the record held
// when the step was completed.
type CaseOutcome struct {
	payload.Expected
	Done   bool          `json:"done,omitempty"`
	AtDone payload.Attrs `json:"at_done,omitempty"`
	// Task is the task that completed it; Created the record a create
	// outcome's holder created (kinds.go).
	Task    string `json:"task,omitempty"`
	Created string `json:"created,omitempty"`
}

func recordKey(typ, id string) string { return typ + "/" + id }

// Record returns a record (deleted ones too), or nil.
func (s *State) Record(typ, id string) *Record { return s.records[recordKey(typ, id)] }

// seedRecords draws the world's records with the session's draws.
func (s *State) seedRecords(d worlds.Draws) {
	if len(s.World.Systems) == 0 || len(s.Records) > 0 {
		return
	}
	for _, r := range s.World.SeedRecords(d) {
		rec := &Record{Type: r.Type, ID: r.ID, Fields: payload.Attrs(r.Fields)}
		s.Records = append(s.Records, rec)
		s.records[recordKey(r.Type, r.ID)] = rec
	}
}

// may reports whether role may use op on system sys.
func may(sys *worlds.System, role, op string) bool {
	switch op {
	case ActGet, ActSearch:
		return slices.Contains(sys.Read, role)
	case ActUpdate:
		return slices.Contains(sys.Write, role)
	case ActCreate:
		return slices.Contains(sys.Create, role)
	case ActDelete:
		return slices.Contains(sys.Delete, role)
	}
	return false
}

// CheckRecord is the check of a record tool: the type exists, the
// member's role may use the tool on its system, the record exists (or,
// for create, does not) and the fields are the type's, of their types. It
// returns the fields normalized.
func (s *State) CheckRecord(m *Member, a Action) (payload.Attrs, *Rejection) {
	if a.Record == "" {
		return nil, Reject(KindMalformed, "%s needs a record type", a.Type)
	}
	t, ok := s.World.RecordType(a.Record)
	if !ok {
		return nil, Reject(KindUnknown, "no record type %q", a.Record)
	}
	sys, _ := s.World.System(t.System)
	if !may(sys, m.Role, a.Type) {
		return nil, &Rejection{Kind: KindPolicy, Rule: RuleRecordAccess,
			Reason: fmt.Sprintf("role %s may not %s records of system %s", m.Role, a.Type, sys.ID)}
	}
	fields := a.Fields.Attrs()
	out := payload.Attrs{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f, ok := t.Field(name)
		if !ok {
			return nil, Reject(KindMalformed, "record type %s has no field %q", t.ID, name)
		}
		x, err := f.Normalize(fields[name])
		if err != nil {
			return nil, Reject(KindMalformed, "%v", err)
		}
		out[name] = x
	}
	r := s.Record(a.Record, a.ID)
	switch a.Type {
	case ActSearch:
		if a.Page < 0 {
			return nil, Reject(KindMalformed, "page must not be negative")
		}
		return out, nil
	case ActCreate:
		if a.ID == "" {
			return nil, Reject(KindMalformed, "create needs an id")
		}
		if r != nil && !r.Deleted {
			return nil, Reject(KindState, "%s %s exists", a.Record, a.ID)
		}
		return out, nil
	}
	if a.ID == "" {
		return nil, Reject(KindMalformed, "%s needs an id", a.Type)
	}
	if r == nil || r.Deleted {
		return nil, Reject(KindUnknown, "no %s %q", a.Record, a.ID)
	}
	if a.Type == ActUpdate && len(out) == 0 {
		return nil, Reject(KindMalformed, "update needs fields")
	}
	return out, nil
}

// RecordWrite is the record.written of a checked write: the values before
// and after.
func (s *State) RecordWrite(m *Member, a Action, fields payload.Attrs) payload.RecordWritten {
	p := payload.RecordWritten{Op: a.Type, Record: a.Record, ID: a.ID, Collateral: !s.scoped(m, a.Type, a.Record, a.ID, fields)}
	r := s.Record(a.Record, a.ID)
	switch a.Type {
	case ActUpdate:
		p.Before, p.After = payload.Attrs{}, fields
		for k := range fields { // order: each entry is its own
			p.Before[k] = r.Fields[k]
		}
	case ActCreate:
		t, _ := s.World.RecordType(a.Record)
		p.After = payload.Attrs{}
		for _, f := range t.Fields {
			p.After[f.Name] = f.Zero()
		}
		maps.Copy(p.After, fields)
	case ActDelete:
		p.Before = maps.Clone(r.Fields)
	}
	return p
}

func (s *State) applyRecordRead(ev *events.Event) error {
	p, err := decode[payload.RecordRead](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	a := Action{Type: p.Op, Record: p.Record, ID: p.ID, Fields: payload.NewActionAttrs(p.Filter), Page: p.Page}
	if p.Op != ActGet && p.Op != ActSearch {
		return badEvent(ev, "op %q is not a read", p.Op)
	}
	filter, rej := s.CheckRecord(m, a)
	if rej != nil {
		return refused(ev, rej)
	}
	t, _ := s.World.RecordType(p.Record)
	res := ReadResult{Op: p.Op, Record: p.Record, ID: p.ID, Filter: filter, Page: p.Page, Records: []RecordView{}}
	if len(filter) == 0 {
		res.Filter = nil
	}
	view := func(r *Record) RecordView {
		return RecordView{System: t.System, Record: r.Type, ID: r.ID, Fields: maps.Clone(r.Fields), Text: t.Render(r.ID, r.Fields)}
	}
	if p.Op == ActGet {
		res.Records = append(res.Records, view(s.Record(p.Record, p.ID)))
	} else {
		skip := max(0, p.Page-1) * SearchPage
		for _, r := range s.Records {
			if r.Type != p.Record || r.Deleted || !matches(r, filter) {
				continue
			}
			switch {
			case skip > 0:
				skip--
			case len(res.Records) < SearchPage:
				res.Records = append(res.Records, view(r))
			default:
				res.More++
			}
		}
	}
	m.Results = append(m.Results, res)
	s.busy(m, p.BusyUntil)
	s.wake(m.ID, ev.Seq) // its results are something it has not seen: a wait does not put it to sleep
	return nil
}

// matches reports whether r holds every value of filter (texts match
// case-insensitively).
func matches(r *Record, filter payload.Attrs) bool {
	for k, want := range filter { // order: a conjunction
		got := r.Fields[k]
		if ws, ok := want.(string); ok {
			if gs, ok := got.(string); !ok || !strings.EqualFold(gs, ws) {
				return false
			}
			continue
		}
		if !SameValue(got, want) {
			return false
		}
	}
	return true
}

// SameValue reports whether two field values are equal (as their JSON).
func SameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func (s *State) applyRecordWritten(ev *events.Event) error {
	p, err := decode[payload.RecordWritten](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if p.Op != ActUpdate && p.Op != ActCreate && p.Op != ActDelete {
		return badEvent(ev, "op %q is not a write", p.Op)
	}
	a := Action{Type: p.Op, Record: p.Record, ID: p.ID, Fields: payload.NewActionAttrs(p.After)}
	if p.Op == ActDelete {
		a.Fields = payload.ActionAttrs{}
	}
	after, rej := s.CheckRecord(m, a)
	if rej != nil {
		return refused(ev, rej)
	}
	r := s.Record(p.Record, p.ID)
	for k, x := range p.Before { // order: each is checked on its own
		if r == nil || !SameValue(r.Fields[k], x) {
			return badEvent(ev, "%s %s: before %s does not match the record", p.Record, p.ID, k)
		}
	}
	scoped := s.scoped(m, p.Op, p.Record, p.ID, after)
	if p.Collateral == scoped {
		return badEvent(ev, "collateral is %v; the write is %s the scope of the writer's cases", p.Collateral, map[bool]string{true: "inside", false: "outside"}[scoped])
	}
	var truth *RecordTruth // what the write changes of the record's truth, if anything
	switch {
	case s.Format < TruthFormat:
	case !scoped:
		truth = s.keepTruth(r)
	case r != nil && r.Truth != nil:
		truth = r.Truth // a case's own step writes the truth too
	}
	switch p.Op {
	case ActUpdate:
		for _, k := range slices.Sorted(maps.Keys(after)) {
			r.Fields[k] = after[k]
		}
		if truth != nil && scoped {
			if truth.Fields == nil {
				truth.Fields = payload.Attrs{}
			}
			for _, k := range slices.Sorted(maps.Keys(after)) {
				truth.Fields[k] = after[k]
			}
		}
		s.refileBusy(r)
	case ActCreate:
		if r != nil { // a deleted record's id is taken again
			r.Fields, r.Deleted = after, false
			if scoped {
				r.Truth = nil // made by a case's step: the record is its truth
			}
			s.refileBusy(r)
		} else {
			r = &Record{Type: p.Record, ID: p.ID, Fields: after}
			if truth != nil {
				r.Truth = truth // only a collateral write made it
			}
			s.Records = append(s.Records, r)
			s.records[recordKey(p.Record, p.ID)] = r
		}
	case ActDelete:
		r.Deleted = true
	}
	if scoped && p.Op == ActCreate {
		s.createInScope(m, p.Record, after).Created = p.ID
	}
	if !scoped {
		s.Collateral++
		m.Collateral++
	}
	s.busy(m, p.BusyUntil)
	return nil
}

// scoped reports whether a write is in the scope of the cases member
// holds: an update of fields their steps must set. Creates and deletes
// are never asked for (no outcome creates or deletes a record yet).
func (s *State) scoped(m *Member, op, typ, id string, fields payload.Attrs) bool {
	if op == ActCreate {
		return s.createInScope(m, typ, fields) != nil
	}
	if op != ActUpdate {
		return false
	}
	for k := range fields { // order: a conjunction
		if !s.inScope(m, typ, id, k) {
			return false
		}
	}
	return true
}

// inScope reports whether field of record (typ, id) is one a step that
// member holds, not done, must set.
func (s *State) inScope(m *Member, typ, id, field string) bool {
	for _, t := range m.held {
		c := s.CaseOf(t)
		if c == nil {
			continue
		}
		for _, o := range c.Outcomes {
			if o.Step == t.Spec.Step && o.Record == typ && o.ID == id {
				if _, ok := o.Fields[field]; ok {
					return true
				}
			}
		}
	}
	return false
}

// outcomeDone records, when step t is completed, the values its outcome's
// fields hold.
func (s *State) outcomeDone(t *Task) {
	c := s.CaseOf(t)
	if c == nil {
		return
	}
	for i := range c.Outcomes {
		o := &c.Outcomes[i]
		if o.Step != t.Spec.Step {
			continue
		}
		o.Done, o.AtDone, o.Task = true, payload.Attrs{}, t.ID
		if o.Kind != "" {
			s.kindDone(c, o, t)
			continue
		}
		r := s.Record(o.Record, o.ID)
		for k := range o.Fields { // order: each is its own
			if r != nil && !r.Deleted {
				o.AtDone[k] = r.Fields[k]
			}
		}
	}
}

// SystemView is a system as a member sees it: what its role may do there
// and the record types it holds.
type SystemView struct {
	ID     string     `json:"id"`
	Title  string     `json:"title,omitempty"`
	May    []string   `json:"may"` // the record tools its role may use
	Types  []TypeView `json:"types"`
	Policy int        `json:"precedence,omitempty"` // its rank in the policy's precedence, 1 first; 0 unranked
}

// TypeView is a record type: its fields and, for a copy, what it copies.
type TypeView struct {
	ID     string            `json:"id"`
	Fields map[string]string `json:"fields"` // name -> type (an enum as "enum: a|b")
	CopyOf string            `json:"copy_of,omitempty"`
	Key    string            `json:"key,omitempty"` // the copy's field naming the original
}

// OutcomeView is what a step must leave behind, as the member holding it
// sees it: the record and, per field, the rule (an expression over the
// case's attributes and record.<field>, the record's authoritative values).
type OutcomeView struct {
	Record string            `json:"record"`
	ID     string            `json:"id"`
	Set    map[string]string `json:"set"`
	// Kind, Options and To are the other outcome kinds' (kinds.go):
	// decision (Set {"option": rule}, Options), reply (Set {"carries":
	// rule}, To the requester) or create (Record the type, ID empty).
	Kind    string   `json:"kind,omitempty"`
	Options []string `json:"options,omitempty"`
	To      string   `json:"to,omitempty"`
	From    string   `json:"from,omitempty"` // the record whose fields the rule reads (record.<field>), as "<type>/<id>"
}

// recordsView adds to o the systems, the policy and the read results.
func (s *State) recordsView(o *Observation, m *Member) {
	if len(s.World.Systems) == 0 {
		return
	}
	o.Results = m.Results
	if p := s.World.Policy; p != nil {
		o.Policy = p.Text
	}
	for i := range s.World.Systems {
		sys := &s.World.Systems[i]
		v := SystemView{ID: sys.ID, Title: sys.Title, May: []string{}}
		for _, op := range RecordActions {
			if may(sys, m.Role, op) {
				v.May = append(v.May, op)
			}
		}
		if p := s.World.Policy; p != nil {
			v.Policy = slices.Index(p.Precedence, sys.ID) + 1
		}
		for _, t := range sys.Types {
			tv := TypeView{ID: t.ID, Fields: map[string]string{}}
			for _, f := range t.Fields {
				tv.Fields[f.Name] = f.Type
				switch f.Type {
				case worlds.FieldEnum:
					tv.Fields[f.Name] = "enum: " + strings.Join(f.Values, "|")
				case worlds.FieldReference:
					tv.Fields[f.Name] = "reference: " + f.To
				}
			}
			if t.Copy != nil {
				tv.CopyOf, tv.Key = t.Copy.Of, t.Copy.Key
			}
			v.Types = append(v.Types, tv)
		}
		o.Systems = append(o.Systems, v)
	}
}

// outcomeView is the outcome of a step task, or nil.
func (s *State) outcomeView(t *Task) *OutcomeView {
	c := s.CaseOf(t)
	if c == nil || len(c.Outcomes) == 0 {
		return nil
	}
	tpl, ok := s.World.CaseTemplate(c.Template)
	if !ok {
		return nil
	}
	st, ok := tpl.Step(t.Spec.Step)
	if !ok {
		return nil
	}
	for _, o := range c.Outcomes {
		if o.Step == st.ID && o.Kind != "" {
			return s.kindView(c, st, &o)
		}
		if o.Step == st.ID {
			v := &OutcomeView{Record: o.Record, ID: o.ID, Set: map[string]string{}}
			for _, f := range st.Outcome.Set {
				v.Set[f.Field] = f.Expr.Source
			}
			return v
		}
	}
	return nil
}
