package org

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds what a case knows beyond its records (format 2): facts
// an NPC tells when asked about the case (a message topic "<case>/<fact>",
// which the member then knows), the outcome kinds beside record fields —
// a decision made with decide, a reply to the requester, a created record —
// and the requester reopening a case closed with an outcome unmet.

// ActDecide chooses an option on a case step the member holds:
// {"type":"decide","task":"requests-3.review","option":"deny"}. The last
// decision before the step is completed counts.
const ActDecide = "decide"

// ActReopen is a requester NPC's reopening of a case it asked for that was
// closed with an outcome unmet: {"type":"reopen_case","case":"requests-3"}.
// No agent seat may use it (only a case's requester, an NPC, passes its
// check), so it is not one of ActionTypes.
const ActReopen = "reopen_case"

// MaxReopens bounds how many times a requester reopens one case.
const MaxReopens = 1

// ReopenedTaskID is the ID of step's task in a case's n-th reopening.
func ReopenedTaskID(caseID, step string, n int) string {
	return fmt.Sprintf("%s-r%d", StepTaskID(caseID, step), n)
}

// StepTasks returns the IDs of the tasks step has had in case c: its
// first, then each reopening's (ReopenedTaskID), in that order.
func (c *Case) StepTasks(step string) []string {
	ids := []string{StepTaskID(c.ID, step)}
	for n := 1; n <= c.Reopens; n++ {
		ids = append(ids, ReopenedTaskID(c.ID, step, n))
	}
	return ids
}

// FactTopic is the message topic of a case's fact.
func FactTopic(caseID, fact string) string { return caseID + "/" + fact }

// NamesCase reports whether text names case id as a word of its own (so
// "req-1" is not named by "req-12"; "req-1.refund" names it).
//
// It is ContainsWord for an id made of those characters a word may be made
// of (letters, digits, '-', '_'), and false for any other id, which no
// word can equal: a search, where splitting every message into its words
// cost a reply outcome a look at each.
func NamesCase(text, id string) bool {
	if !isWordID(id) {
		return WordsOf(text).Name(id) // an id with other characters (or not ASCII): the words decide
	}
	return ContainsWord(text, id)
}

// CaseWords are the words of a text that may name a case, lower-cased:
// runs of letters, digits, '-' and '_'. A text asked about many cases is
// split once.
type CaseWords []string

// WordsOf splits text into its CaseWords.
func WordsOf(text string) CaseWords {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// Name reports whether the words name case id (NamesCase).
func (w CaseWords) Name(id string) bool { return slices.Contains(w, strings.ToLower(id)) }

// ContainsWord reports whether text contains value case-insensitively as
// words of their own: neither preceded nor followed by a letter, a digit,
// '-' or '_' (so "450" is not in "4500" nor in the case id "req-450").
func ContainsWord(text, value string) bool {
	text, value = strings.ToLower(text), strings.ToLower(value)
	return value != "" && nextWord(text, value, 0) >= 0
}

// nextWord returns where text first contains value as a word of its own
// at or after i (-1 when nowhere). Both are lower-cased.
func nextWord(text, value string, i int) int {
	word := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_' }
	for {
		j := strings.Index(text[i:], value)
		if j < 0 {
			return -1
		}
		j += i
		end := j + len(value)
		if (j == 0 || !word(text[j-1])) && (end == len(text) || !word(text[end])) {
			return j
		}
		i = j + 1
	}
}

// Told returns the messages the doer of case c's step t sent requester
// naming the case, by instant until, in the order sent: what the step's
// reply outcome is judged on. From ReplyFormat on they are those sent
// since t was created (a step redone after its case was reopened is judged
// on the reply that redoes it, not on the one that was wrong), before it
// those since the case opened.
func (s *State) Told(c *Case, t *Task, requester string, until clock.Time) []*Message {
	from := c.Opened
	if s.Format >= ReplyFormat {
		from = max(from, t.Created)
	}
	if pos, ok := s.naming(c.ID); ok {
		return s.toldIndexed(pos, from, until, t.DoneBy, requester)
	}
	// Messages are in the order sent: those sent since from are a tail
	// of them.
	since, _ := slices.BinarySearchFunc(s.Messages, from, func(m *Message, at clock.Time) int { return cmp.Compare(m.SentAt, at) })
	var out []*Message
	for _, m := range s.Messages[since:] {
		if m.SentAt > until {
			break
		}
		if m.From == t.DoneBy && m.To == requester && m.SentAt >= from && NamesCase(m.Text, c.ID) {
			out = append(out, m)
		}
	}
	return out
}

// factTopic reports whether topic is a fact of a case that member holds.
func (s *State) factTopic(member, topic string) bool {
	id, name, ok := strings.Cut(topic, "/")
	c := s.cases[id]
	if !ok || c == nil {
		return false
	}
	tpl, _ := s.World.CaseTemplate(c.Template)
	f, ok := tpl.Fact(name)
	return ok && f.HeldBy == member
}

// stepOf returns the template step of a case step task.
func (s *State) stepOf(t *Task) (*Case, *worlds.CaseTemplate, *worlds.CaseStep) {
	c := s.CaseOf(t)
	if c == nil {
		return nil, nil, nil
	}
	tpl, _ := s.World.CaseTemplate(c.Template)
	st, _ := tpl.Step(t.Spec.Step)
	return c, tpl, st
}

// CheckDecideStep reports whether m may choose option on task t: a case
// step with a decision, which m holds and has not completed, and one of
// its options.
func (s *State) CheckDecideStep(m *Member, t *Task, option string) *Rejection {
	_, _, st := s.stepOf(t)
	switch {
	case st == nil || st.Decision == nil:
		return Reject(KindState, "task %q has no decision to make", t.ID)
	case t.Assignee != m.ID || t.Status == StatusDone:
		return Reject(KindState, "task %q is not yours to decide (it is %s, held by %q)", t.ID, t.Status, t.Assignee)
	case option == "":
		return Reject(KindMalformed, "decide needs an option (one of %s)", strings.Join(st.Decision.Options, ", "))
	case !slices.Contains(st.Decision.Options, option):
		return Reject(KindMalformed, "%q is not an option of %s (options: %s)", option, t.ID, strings.Join(st.Decision.Options, ", "))
	}
	return nil
}

func (s *State) applyCaseDecided(ev *events.Event) error {
	p, err := decode[payload.CaseDecided](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	if rej := s.CheckDecideStep(m, t, p.Option); rej != nil {
		return refused(ev, rej)
	}
	c := s.CaseOf(t)
	if c.Decisions == nil {
		c.Decisions = map[string]string{}
	}
	c.Decisions[t.Spec.Step] = p.Option
	s.busy(m, p.BusyUntil)
	return nil
}

// Unmet lists the steps of c (template step ids, in outcome order) whose
// outcome was not met when they were completed.
func (c *Case) Unmet() []string {
	var out []string
	for _, o := range c.Outcomes {
		if !slices.Contains(out, o.Step) {
			if _, _, ok := c.UnmetField(o.Step); ok {
				out = append(out, o.Step)
			}
		}
	}
	return out
}

// UnmetField returns the first completed outcome of step (in declaration
// order) with a field (in name order) that did not hold its expected
// value at completion; ok is false when the step's outcomes were met or
// are not completed. It is the one rule of an unmet outcome: the
// requester reopens by it (Unmet) and the rubric refuses the step by it.
func (c *Case) UnmetField(step string) (o *CaseOutcome, field string, ok bool) {
	for i := range c.Outcomes {
		o := &c.Outcomes[i]
		if o.Step != step || !o.Done {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(o.Fields)) {
			if !SameValue(o.AtDone[k], o.Fields[k]) {
				return o, k, true
			}
		}
	}
	return nil, "", false
}

// CheckReopen reports whether m may reopen case id: m is its requester,
// the case is done with an outcome unmet and was reopened fewer than
// MaxReopens times.
func (s *State) CheckReopen(m *Member, id string) *Rejection {
	c := s.cases[id]
	if c == nil {
		return Reject(KindUnknown, "no case %q", id)
	}
	tpl, _ := s.World.CaseTemplate(c.Template)
	switch {
	case tpl.Requester != m.ID:
		return Reject(KindState, "%s did not ask for case %s", m.ID, id)
	case !c.Done():
		return Reject(KindState, "case %s is still open", id)
	case c.Reopens >= MaxReopens:
		return Reject(KindState, "case %s was reopened %d times, the most", id, c.Reopens)
	case len(c.Unmet()) == 0:
		return Reject(KindState, "case %s was closed with every outcome met", id)
	}
	return nil
}

func (s *State) applyCaseReopened(ev *events.Event) error {
	p, err := decode[payload.CaseReopened](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if rej := s.CheckReopen(m, p.Case); rej != nil {
		return refused(ev, rej)
	}
	c := s.cases[p.Case]
	if !slices.Equal(p.Steps, c.Unmet()) || p.N != c.Reopens+1 {
		return badEvent(ev, "case %s reopens steps %v as reopening %d; want %v as %d", c.ID, p.Steps, p.N, c.Unmet(), c.Reopens+1)
	}
	// A new list, not the old one changed: views built before share it
	// (CaseView.Steps), and a view kept (an export's, an agent's) shows
	// what it showed.
	c.Steps = slices.Clone(c.Steps)
	for _, step := range p.Steps {
		i := slices.IndexFunc(c.Steps, func(id string) bool { return s.tasks[id].Spec.Step == step })
		old := s.tasks[c.Steps[i]]
		spec := *old.Spec
		spec.ID, spec.Deps = ReopenedTaskID(c.ID, step, p.N), nil
		if s.tasks[spec.ID] != nil {
			return badEvent(ev, "task %q exists", spec.ID)
		}
		t := s.allocMade()
		*t.Spec = spec
		t.fromSpec()
		t.Kind, t.Case, t.Queue, t.Team = KindStep, c.ID, old.Queue, old.Team
		t.Created, t.Deadline = clock.Time(ev.Time), old.Deadline
		t.ord = s.nextOrd()
		s.list = append(s.list, t)
		s.tasks[t.ID] = t
		c.Steps[i] = t.ID
		c.steps = nil // looked up again (stepsOf)
		for j := range c.Outcomes {
			if o := &c.Outcomes[j]; o.Step == step {
				o.Done, o.AtDone, o.Task, o.Created = false, nil, "", ""
			}
		}
		delete(c.Decisions, step)
		s.track(t)
		if t.Spec.NPC == "" {
			s.wakeServers(t, ev.Seq, false)
		}
	}
	c.DoneAt, c.Reopens = 0, p.N
	s.deriveCase(c)
	return nil
}

// reopenPending reports whether a requester has a case to reopen: one
// closed with an outcome unmet, reopened fewer than MaxReopens times. A
// session is not complete while one has.
func (s *State) reopenPending() bool {
	for _, c := range s.Cases {
		if !c.Done() || c.Reopens >= MaxReopens {
			continue
		}
		if tpl, ok := s.World.CaseTemplate(c.Template); ok && tpl.Requester != "" && len(c.Unmet()) > 0 {
			return true
		}
	}
	return false
}

// expectedFits reports whether an expected outcome of a kind other than
// record fields is the one its step declares (a create's record its
// type, with fields of that type); true for record fields.
func expectedFits(tpl *worlds.CaseTemplate, x *payload.Expected) bool {
	st, ok := tpl.Step(x.Step)
	if !ok {
		return false
	}
	switch x.Kind {
	case "":
		return true
	case worlds.KindDecision:
		_, has := x.Fields["option"]
		return st.Decision != nil && has && len(x.Fields) == 1
	case worlds.KindReply:
		_, has := x.Fields["carries"]
		return st.Reply != nil && has && len(x.Fields) == 1
	case worlds.KindCreate:
		if st.Create == nil || x.Record != st.Create.Type {
			return false
		}
		for _, f := range st.Create.Set {
			if _, has := x.Fields[f.Field]; !has {
				return false
			}
		}
		return len(x.Fields) == len(st.Create.Set)
	}
	return false
}

// caseClosed wakes the requester of a case just closed, so that it reads
// the outcome and, when one is unmet, reopens the case.
func (s *State) caseClosed(c *Case, seq uint64) {
	if s.fileReopenable(c) {
		tpl, _ := s.World.CaseTemplate(c.Template)
		s.wake(tpl.Requester, seq)
	}
}

// fileReopenable files c among the cases its requester may reopen when it
// is one: done, with a requester, reopened fewer than MaxReopens times and
// an outcome unmet. What it reports does not change while c stays done: an
// outcome is judged on the values its step left (CaseOutcome.AtDone).
func (s *State) fileReopenable(c *Case) bool {
	tpl, ok := s.World.CaseTemplate(c.Template)
	if !ok || tpl.Requester == "" || !c.Done() || c.Reopens >= MaxReopens || len(c.Unmet()) == 0 {
		return false
	}
	if !c.reopenable {
		c.reopenable = true
		i, _ := slices.BinarySearchFunc(s.reopenable, c.num, byNum)
		s.reopenable = slices.Insert(s.reopenable, i, c)
	}
	return true
}

// Reopenable returns the done cases whose requester may reopen them (with
// a requester, reopened fewer than MaxReopens times, an outcome unmet), in
// the order of State.Cases: a requester looks at these, not at every case
// ever closed. The slice is the state's, valid until the next event; the
// caller must not change it.
func (s *State) Reopenable() []*Case {
	s.reopenable = prune(s.reopenable, func(c *Case) bool {
		if c.Done() && c.Reopens < MaxReopens {
			return true
		}
		c.reopenable = false // reopened: filed again when it closes
		return false
	})
	return s.reopenable
}

// kindDone records, when step t is completed, what its outcome of a kind
// other than record fields stands at: the decision, the reply's value if a
// message carried it, the created record's fields.
func (s *State) kindDone(c *Case, o *CaseOutcome, t *Task) {
	tpl, _ := s.World.CaseTemplate(c.Template)
	switch o.Kind {
	case worlds.KindDecision:
		if d, ok := c.Decisions[o.Step]; ok {
			o.AtDone["option"] = d
		}
	case worlds.KindReply:
		want, _ := o.Fields["carries"].(string)
		var values []string
		if st, ok := tpl.Step(o.Step); ok && st.Reply != nil {
			values = st.Reply.Values
		}
		if s.replyCarries(c, t, tpl.Requester, want, values) {
			o.AtDone["carries"] = want
		}
	case worlds.KindCreate:
		if r := s.Record(o.Record, o.Created); o.Created != "" && r != nil && !r.Deleted {
			for k := range o.Fields { // order: each is its own
				o.AtDone[k] = r.Fields[k]
			}
		}
	}
}

// ToldAbout is what the messages Told returns say about case c, as its
// reply outcome reads them: from ReplyFormat on, the clauses of each about
// c (AboutCase), before it each message whole.
func (s *State) ToldAbout(c *Case, t *Task, requester string, until clock.Time) []string {
	told := s.Told(c, t, requester, until)
	texts := make([]string, len(told))
	for i, m := range told {
		texts[i] = m.Text
		if s.Format >= ReplyFormat {
			texts[i] = s.AboutCase(m.Text, c.ID)
		}
	}
	return texts
}

// replyCarries reports whether what the doer of case c's step t told
// requester about c (ToldAbout) carries want. From ReplyFormat on, the
// texts are read together: they carry a number only when they state it and
// no other amount (statesOnly), and any other value when they state it and
// no other of values, the values the reply's rule can give (statesValue:
// "approved or denied" carries neither). Before it, one message containing
// want as a word was enough.
func (s *State) replyCarries(c *Case, t *Task, requester, want string, values []string) bool {
	texts := s.ToldAbout(c, t, requester, math.MaxInt64)
	if s.Format < ReplyFormat {
		return slices.ContainsFunc(texts, func(text string) bool { return ContainsWord(text, want) })
	}
	if only, numeric := statesOnly(texts, want, s.isName); numeric {
		return only
	}
	return statesValue(texts, want, values)
}

// OutcomeNow is the value field of outcome o holds now: the record's for
// record fields and a created record (ok false when it is gone), what it
// was at completion for a decision and a reply (neither changes after).
func (s *State) OutcomeNow(o *CaseOutcome, field string) (any, bool) {
	id := o.ID
	switch o.Kind {
	case worlds.KindDecision, worlds.KindReply:
		x, ok := o.AtDone[field]
		return x, ok
	case worlds.KindCreate:
		id = o.Created
	}
	r := s.Record(o.Record, id)
	if id == "" || r == nil || r.Deleted {
		return nil, false
	}
	return r.Fields[field], true
}

// createInScope returns the create outcome of a step member holds, not
// done, that creates a record of type typ and has not yet been given one;
// nil when there is none.
func (s *State) createInScope(m *Member, typ string, _ payload.Attrs) *CaseOutcome {
	for _, t := range m.held {
		c := s.CaseOf(t)
		if c == nil {
			continue
		}
		for i := range c.Outcomes {
			if o := &c.Outcomes[i]; o.Kind == worlds.KindCreate && o.Step == t.Spec.Step && o.Record == typ && !o.Done && o.Created == "" {
				return o
			}
		}
	}
	return nil
}

// kindView is the outcome of kind o.Kind of step st, as its holder sees it.
func (s *State) kindView(c *Case, st *worlds.CaseStep, o *CaseOutcome) *OutcomeView {
	tpl, _ := s.World.CaseTemplate(c.Template)
	v := &OutcomeView{Kind: o.Kind, Record: o.Record, Set: map[string]string{}}
	from := ""
	switch {
	case st.Decision != nil:
		v.Options = slices.Clone(st.Decision.Options)
		v.Set["option"] = st.Decision.Correct.Source
		from = st.Decision.From
	case st.Reply != nil:
		v.To = tpl.Requester
		v.Set["carries"] = st.Reply.Carries.Source
		from = st.Reply.From
	case st.Create != nil:
		for _, f := range st.Create.Set {
			v.Set[f.Field] = f.Expr.Source
		}
		from = st.Create.From
	}
	if from != "" {
		a, _ := tpl.Attr(from)
		id, _ := c.Attributes[from].(string)
		v.From = a.Record + "/" + id
	}
	return v
}

// askOf is who holds each of a template's facts (CaseView.Ask): the same
// map for every view of its cases, made once, and read only.
func (s *State) askOf(tpl *worlds.CaseTemplate) map[string]string {
	if ask, ok := s.asks[tpl.ID]; ok {
		return ask
	}
	var ask map[string]string
	for _, f := range tpl.Facts {
		if f.HeldBy != "" {
			if ask == nil {
				ask = map[string]string{}
			}
			ask[f.Name] = f.HeldBy
		}
	}
	if s.asks == nil {
		s.asks = map[string]map[string]string{}
	}
	s.asks[tpl.ID] = ask
	return ask
}

// factsView adds to a case's view what the member may learn of its facts:
// who holds each (ask them, naming the case), what it has been told, and
// the case's document when the member holds one of its steps.
func (s *State) factsView(v *CaseView, c *Case, m *Member) {
	tpl, ok := s.World.CaseTemplate(c.Template)
	if !ok {
		return
	}
	v.Ask = s.askOf(tpl)
	for _, f := range tpl.Facts {
		if f.HeldBy == "" {
			continue
		}
		if m.KnowsTopic(FactTopic(c.ID, f.Name)) {
			if v.Told == nil {
				v.Told = payload.Attrs{}
			}
			v.Told[f.Name] = c.Facts[f.Name]
		}
	}
	v.Requester = tpl.Requester
	if tpl.Document == nil {
		return
	}
	for _, t := range s.stepsOf(c) {
		if t.Assignee == m.ID && t.Status != StatusDone {
			v.Document = tpl.Document.Render(c.Vars(true))
			return
		}
	}
}
