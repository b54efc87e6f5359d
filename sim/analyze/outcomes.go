package analyze

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// This file explains a case step's outcome (format 2 systems): what the
// member who completed the step read — the record, its copies in other
// systems and the records its references name, with the values it saw
// then and the system it saw them in — what it wrote, and what it would
// have needed: the expected values, and the records as they stood in their
// own (authoritative) system when it completed the step. The values a
// read returned are not in its event (a read is re-derived from the
// state): Load keeps them as it replays.

// contentIndex is what Load keeps of the records while it replays.
type contentIndex struct {
	reads  map[uint64]org.ReadResult        // record.read seq -> what it returned
	readBy map[string][]uint64              // member -> its record.read seqs, in order
	writes map[string][]uint64              // type/id -> its record.written seqs, in order
	atDone map[string]map[string]org.Record // step task -> type/id -> the record when it was completed
}

// RecordSeen is a record as a read returned it, or as it stood.
type RecordSeen struct {
	At     Stamp         `json:"at"`
	System string        `json:"system"`
	Record string        `json:"record"` // its type
	ID     string        `json:"id"`
	CopyOf string        `json:"copy_of,omitempty"` // a copy: the type it copies
	Fields payload.Attrs `json:"fields"`
	// Authoritative says the record is in the system the policy ranks
	// first for its values (the original, unless the policy says not).
	Authoritative bool `json:"authoritative,omitempty"`
}

// RecordWriteTrace is a write of an outcome's record.
type RecordWriteTrace struct {
	At         Stamp         `json:"at"`
	Member     string        `json:"member"`
	Op         string        `json:"op"`
	Before     payload.Attrs `json:"before,omitempty"`
	After      payload.Attrs `json:"after,omitempty"`
	Collateral bool          `json:"collateral,omitempty"`
}

// OutcomeTrace is a step's outcome: the rubric's card, the expected
// values and those at completion, and what the completing member read and
// wrote.
type OutcomeTrace struct {
	policies.OutcomeCard
	Expected payload.Attrs `json:"expected"`
	AtDone   payload.Attrs `json:"at_done,omitempty"`
	// Read is what the completing member's reads returned of the record,
	// its copies and the records its references name, before it completed.
	Read []RecordSeen `json:"read,omitempty"`
	// Authoritative is the record and those its references name as they
	// stood when the step was completed.
	Authoritative []RecordSeen       `json:"authoritative,omitempty"`
	Writes        []RecordWriteTrace `json:"writes,omitempty"`
	// Told is, for a reply, what the completing member told the requester
	// about the case by completion, as the rubric reads it
	// (org.State.ToldAbout): what it is judged on.
	Told []string `json:"told,omitempty"`
	// Summary says it in a line: what was read where, what the
	// authoritative system had, what was written and what was wanted.
	Summary string `json:"summary,omitempty"`
}

// MaxOutcomeReads bounds the reads an outcome trace keeps (the latest).
const MaxOutcomeReads = 12

// indexContent keeps, after ev was applied, what a read returned and the
// records an outcome step's completion saw.
func (s *Session) indexContent(ev events.Event) {
	if len(s.World.Systems) == 0 {
		return
	}
	x := &s.content
	if x.reads == nil {
		x.reads, x.readBy, x.writes, x.atDone = map[uint64]org.ReadResult{}, map[string][]uint64{}, map[string][]uint64{}, map[string]map[string]org.Record{}
	}
	switch ev.Type {
	case payload.EvRecordRead:
		if m := s.State.Member(ev.Actor); m != nil && len(m.Results) > 0 {
			x.reads[ev.Seq] = m.Results[len(m.Results)-1]
			x.readBy[ev.Actor] = append(x.readBy[ev.Actor], ev.Seq)
		}
	case payload.EvRecordWritten:
		var p payload.RecordWritten
		if json.Unmarshal(ev.Payload, &p) == nil {
			k := p.Record + "/" + p.ID
			x.writes[k] = append(x.writes[k], ev.Seq)
		}
	case payload.EvTaskCompleted:
		var p payload.TaskCompleted
		if json.Unmarshal(ev.Payload, &p) != nil {
			return
		}
		t := s.State.Task(p.Task)
		c := s.State.CaseOf(t)
		if c == nil {
			return
		}
		for _, o := range c.Outcomes {
			if o.Step != t.Spec.Step {
				continue
			}
			seen := map[string]org.Record{}
			for _, r := range s.related(o.Record, o.ID) {
				seen[r.Type+"/"+r.ID] = org.Record{Type: r.Type, ID: r.ID, Fields: maps.Clone(r.Fields), Deleted: r.Deleted}
			}
			x.atDone[p.Task] = seen
		}
	}
}

// related is the record (typ, id) and the records its reference fields
// name, as they stand now; missing ones are left out.
func (s *Session) related(typ, id string) []*org.Record {
	r := s.State.Record(typ, id)
	if r == nil {
		return nil
	}
	out := []*org.Record{r}
	ty, ok := s.World.RecordType(typ)
	if !ok {
		return out
	}
	for _, f := range ty.Fields {
		if f.To == "" {
			continue
		}
		if ref, _ := r.Fields[f.Name].(string); ref != "" {
			if rr := s.State.Record(f.To, ref); rr != nil {
				out = append(out, rr)
			}
		}
	}
	return out
}

// authoritative reports whether system sys is the one the policy ranks
// first among those holding record type typ (the original) or copies of
// it; without a policy ranking them, the original's.
func (s *Session) authoritative(sys, typ string) bool {
	orig, ok := s.World.RecordType(typ)
	if !ok {
		return false
	}
	holders := []string{orig.System}
	for i := range s.World.Systems {
		for _, t := range s.World.Systems[i].Types {
			if t.Copy != nil && t.Copy.Of == typ {
				holders = append(holders, s.World.Systems[i].ID)
			}
		}
	}
	best := orig.System
	if p := s.World.Policy; p != nil {
		for _, h := range p.Precedence {
			if slices.Contains(holders, h) {
				best = h
				break
			}
		}
	}
	return sys == best
}

// outcomeTrace is the outcome of step task t of case c, or nil.
func (s *Session) outcomeTrace(c *org.Case, t *org.Task) *OutcomeTrace {
	var ot *OutcomeTrace
	for _, oc := range policies.CaseOutcomeCards(s.State, c) {
		if oc.Task == t.ID {
			ot = &OutcomeTrace{OutcomeCard: oc}
		}
	}
	if ot == nil {
		return nil
	}
	for _, o := range c.Outcomes {
		if o.Step == t.Spec.Step {
			ot.Expected, ot.AtDone = o.Fields, o.AtDone
		}
	}
	for _, cm := range c.Meetings {
		if cm.Step == t.Spec.Step {
			ot.Expected, ot.AtDone = s.meetingAttrs(&cm)
		}
	}
	x := &s.content
	// The records that matter: the outcome's and those its references
	// name (as they stood at completion, else now), by type/id.
	want := map[string]bool{}
	var auth []org.Record
	if seen := x.atDone[t.ID]; seen != nil {
		for _, k := range slices.Sorted(maps.Keys(seen)) {
			auth = append(auth, seen[k])
		}
	} else {
		for _, r := range s.related(ot.Record, ot.ID) {
			auth = append(auth, *r)
		}
	}
	for _, r := range auth {
		want[r.Type+"/"+r.ID] = true
	}
	doneAt := Stamp{}
	if t.DoneSeq != 0 {
		doneAt = s.stampOf(t.DoneSeq)
	}
	if tpl, ok := s.World.CaseTemplate(c.Template); ok && ot.Kind == worlds.KindReply && ot.By != "" && t.DoneSeq != 0 {
		ot.Told = s.State.ToldAbout(c, t, tpl.Requester, doneAt.Time)
	}
	for _, r := range auth {
		ty, _ := s.World.RecordType(r.Type)
		ot.Authoritative = append(ot.Authoritative, RecordSeen{At: doneAt, System: ty.System, Record: r.Type, ID: r.ID,
			Fields: r.Fields, Authoritative: s.authoritative(ty.System, r.Type)})
	}
	// What the completing member read of them, before it completed.
	if ot.By != "" {
		for _, seq := range x.readBy[ot.By] {
			if t.DoneSeq != 0 && seq > t.DoneSeq {
				break
			}
			for _, rv := range x.reads[seq].Records {
				ty, ok := s.World.RecordType(rv.Record)
				if !ok {
					continue
				}
				seen := RecordSeen{At: s.stampOf(seq), System: rv.System, Record: rv.Record, ID: rv.ID, Fields: rv.Fields}
				switch {
				case want[rv.Record+"/"+rv.ID]:
					seen.Authoritative = s.authoritative(rv.System, rv.Record)
				case ty.Copy != nil:
					key, _ := rv.Fields[ty.Copy.Key].(string)
					if !want[ty.Copy.Of+"/"+key] {
						continue
					}
					seen.CopyOf = ty.Copy.Of
					seen.Authoritative = s.authoritative(rv.System, ty.Copy.Of)
				default:
					continue
				}
				ot.Read = append(ot.Read, seen)
			}
		}
		if len(ot.Read) > MaxOutcomeReads {
			ot.Read = ot.Read[len(ot.Read)-MaxOutcomeReads:]
		}
	}
	for _, seq := range x.writes[ot.Record+"/"+ot.ID] {
		ev, _ := s.Event(seq)
		var p payload.RecordWritten
		if json.Unmarshal(ev.Payload, &p) != nil {
			continue
		}
		ot.Writes = append(ot.Writes, RecordWriteTrace{At: s.stampOf(seq), Member: ev.Actor, Op: p.Op, Before: p.Before, After: p.After, Collateral: p.Collateral})
	}
	ot.Summary = s.outcomeSummary(ot)
	return ot
}

// meetingAttrs are meeting cm's wanted attendees, window and length, and
// the meeting booked when its step was completed (nil when none was).
func (s *Session) meetingAttrs(cm *org.CaseMeeting) (want, atDone payload.Attrs) {
	want = payload.Attrs{"attendees": strings.Join(cm.Attendees, ", "), "from": s.State.RFC3339(cm.From),
		"to": s.State.RFC3339(cm.To), "length": cm.Length.String()}
	if b := cm.Booked; b != nil && cm.AtDone {
		atDone = payload.Attrs{"meeting": b.Meeting, "attendees": strings.Join(b.Attendees, ", "),
			"start": s.State.RFC3339(b.Start), "end": s.State.RFC3339(b.End)}
	}
	return want, atDone
}

// outcomeSummary says an outcome in a line, e.g. "read crm account acc-3
// amount 400 (a copy of invoice inv-7); billing invoice inv-7
// (authoritative) had amount 420; ben wrote refunded 400; wanted refunded
// 420".
func (s *Session) outcomeSummary(ot *OutcomeTrace) string {
	if line, ok := kindSummary(ot); ok {
		return line
	}
	if !ot.Done {
		return fmt.Sprintf("not completed: %s %s must get %s", ot.Record, ot.ID, attrsText(ot.Expected))
	}
	byKey := map[string]RecordSeen{}
	for _, a := range ot.Authoritative {
		byKey[a.Record+"/"+a.ID] = a
	}
	var parts []string
	if len(ot.Read) == 0 {
		parts = append(parts, fmt.Sprintf("%s read nothing of %s %s or the records it names", ot.By, ot.Record, ot.ID))
	}
	// The last read of each record seen, and where it differed from the
	// authoritative record.
	last := map[string]RecordSeen{}
	var order []string
	for _, r := range ot.Read {
		k := r.System + " " + r.Record + " " + r.ID
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = r
	}
	for _, k := range order {
		r := last[k]
		orig := r.Record + "/" + r.ID
		if r.CopyOf != "" {
			ty, _ := s.World.RecordType(r.Record)
			key, _ := r.Fields[ty.Copy.Key].(string)
			orig = r.CopyOf + "/" + key
		}
		a, ok := byKey[orig]
		var diff []string
		for _, f := range slices.Sorted(maps.Keys(r.Fields)) {
			if ok && r.CopyOf != "" {
				if av, has := a.Fields[f]; has && !org.SameValue(av, r.Fields[f]) {
					diff = append(diff, f)
				}
			}
		}
		if len(diff) == 0 {
			parts = append(parts, fmt.Sprintf("read %s %s %s", r.System, r.Record, r.ID))
			continue
		}
		parts = append(parts, fmt.Sprintf("read %s %s %s %s (a copy of %s)", r.System, r.Record, r.ID, fieldsText(r.Fields, diff), strings.Replace(orig, "/", " ", 1)))
		au := "authoritative"
		if !a.Authoritative {
			au = "the original"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s (%s) had %s", a.System, a.Record, a.ID, au, fieldsText(a.Fields, diff)))
	}
	wrote := payload.Attrs{}
	for _, w := range ot.Writes {
		if w.Member == ot.By && (ot.AtDone == nil || w.At.Seq <= s.doneSeq(ot.Task)) {
			maps.Copy(wrote, w.After)
		}
	}
	fields := slices.Sorted(maps.Keys(ot.Expected))
	if txt := fieldsText(wrote, fields); len(wrote) == 0 || txt == "" {
		parts = append(parts, ot.By+" wrote nothing the outcome reads")
	} else {
		parts = append(parts, fmt.Sprintf("%s wrote %s", ot.By, fieldsText(wrote, fields)))
	}
	if len(ot.Unmet) > 0 {
		parts = append(parts, "wanted "+fieldsText(ot.Expected, ot.Unmet))
	} else {
		parts = append(parts, "as wanted")
	}
	return strings.Join(parts, "; ")
}

// quoteAll quotes texts, each cut to 120 bytes, joined by " then ".
func quoteAll(texts []string) string {
	q := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > 120 {
			t = strings.ToValidUTF8(t[:120], "") + "…"
		}
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, " then ")
}

// kindSummary says an outcome that is not record fields in a line: a
// decision, a reply to the requester or a meeting (ok false for the
// others, which outcomeSummary says from the records).
func kindSummary(ot *OutcomeTrace) (string, bool) {
	switch ot.Kind {
	case worlds.KindDecision:
		switch {
		case !ot.Done:
			return fmt.Sprintf("not completed: the decision must be %v", ot.Expected["option"]), true
		case ot.AtDone["option"] == nil:
			return fmt.Sprintf("%s decided nothing; wanted %v", ot.By, ot.Expected["option"]), true
		case len(ot.Unmet) > 0:
			return fmt.Sprintf("%s decided %v; wanted %v", ot.By, ot.AtDone["option"], ot.Expected["option"]), true
		}
		return fmt.Sprintf("%s decided %v, as wanted", ot.By, ot.AtDone["option"]), true
	case worlds.KindReply:
		switch {
		case !ot.Done:
			return fmt.Sprintf("not completed: the requester must be told %v", ot.Expected["carries"]), true
		case len(ot.Unmet) > 0 && len(ot.Told) == 0:
			return fmt.Sprintf("%s sent the requester no message naming the case; wanted %v", ot.By, ot.Expected["carries"]), true
		case len(ot.Unmet) > 0:
			return fmt.Sprintf("%s told the requester %s; wanted %v, and no other value", ot.By, quoteAll(ot.Told), ot.Expected["carries"]), true
		}
		return fmt.Sprintf("%s told the requester %v, as wanted", ot.By, ot.Expected["carries"]), true
	case policies.OutcomeMeeting:
		switch {
		case !ot.Done:
			return "not completed: a meeting must be booked", true
		case ot.AtDone == nil: // a meeting failing every criterion was booked
			return ot.By + " booked no meeting before completing the step", true
		case len(ot.Unmet) > 0:
			return fmt.Sprintf("%s booked a meeting that fails %s", ot.By, strings.Join(ot.Unmet, ", ")), true
		}
		return ot.By + " booked a meeting every attendee can attend, as wanted", true
	}
	return "", false
}

// doneSeq is the seq of task's completion (0 if none).
func (s *Session) doneSeq(task string) uint64 {
	if t := s.State.Task(task); t != nil {
		return t.DoneSeq
	}
	return 0
}

// fieldsText says the named fields of f that it has: "amount 400, plan annual".
func fieldsText(f payload.Attrs, names []string) string {
	var out []string
	for _, n := range names {
		if x, ok := f[n]; ok {
			out = append(out, fmt.Sprintf("%s %v", n, x))
		}
	}
	return strings.Join(out, ", ")
}

// OutcomeSubject names what an outcome of kind (a scorecard card's Kind)
// is about — the record and its ID ("invoice inv-4"), "reply",
// "decision", "create ticket" or "meeting" — and what its parts are
// called: "criteria" for a meeting, else "fields". The trace and the
// report say it the same way.
func OutcomeSubject(kind, record, id string) (what, unit string) {
	switch kind {
	case worlds.KindDecision, worlds.KindReply:
		return kind, "fields"
	case worlds.KindCreate:
		return "create " + record, "fields"
	case policies.OutcomeMeeting:
		return "meeting", "criteria"
	}
	return strings.TrimSpace(record + " " + id), "fields"
}

// writeText writes the outcome under its step in corpsim trace --case.
func (ot *OutcomeTrace) writeText(w io.Writer) {
	if ot == nil {
		return
	}
	what, unit := OutcomeSubject(ot.Kind, ot.Record, ot.ID)
	verdict := fmt.Sprintf("%d of %d %s right (score %g)", ot.Right, ot.Fields, unit, ot.Score)
	if ot.Wrong {
		verdict += ", WRONG OUTCOME"
	}
	if len(ot.Unmet) > 0 && ot.Done {
		verdict += "; unmet: " + strings.Join(ot.Unmet, ", ")
	}
	if len(ot.Redone) > 0 {
		verdict += fmt.Sprintf("; reopened by the requester after %s", Plural(len(ot.Redone), "wrong completion"))
	}
	if !ot.Done {
		verdict = "not completed"
	}
	fmt.Fprintf(w, "    outcome %s: %s\n", what, verdict)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "      wanted\t%s\n", attrsText(ot.Expected))
	switch {
	case ot.Done && ot.Kind == policies.OutcomeMeeting && ot.AtDone == nil:
		fmt.Fprintf(tw, "      at completion\tno meeting booked\n")
	case ot.Done:
		fmt.Fprintf(tw, "      at completion\t%s\n", attrsText(ot.AtDone))
	}
	for _, r := range ot.Read {
		what := ""
		if r.CopyOf != "" {
			what = " (copy of " + r.CopyOf + ")"
		}
		if r.Authoritative {
			what += " (authoritative)"
		}
		fmt.Fprintf(tw, "      read\t%s %s %s %s%s: %s%s\n", short(r.At), r.System, r.Record, r.ID, what, attrsText(r.Fields), seqNote(r.At.Seq))
	}
	for _, r := range ot.Authoritative {
		au := ""
		if r.Authoritative {
			au = " (authoritative)"
		}
		fmt.Fprintf(tw, "      stood\t%s %s %s%s at completion: %s\n", r.System, r.Record, r.ID, au, attrsText(r.Fields))
	}
	for _, wr := range ot.Writes {
		col := ""
		if wr.Collateral {
			col = " (collateral)"
		}
		fmt.Fprintf(tw, "      written\t%s by %s: %s → %s%s%s\n", short(wr.At), wr.Member, attrsText(wr.Before), attrsText(wr.After), col, seqNote(wr.At.Seq))
	}
	tw.Flush()
	if ot.Summary != "" {
		fmt.Fprintf(w, "      %s\n", ot.Summary)
	}
}

// wrongOutcome begins the rubric's reason for a step that does not verify
// on its outcome.
const wrongOutcome = "wrong outcome"

// outcomeCauses names, in the wrong_outcome cause's detail, who completed
// steps with their outcome unmet and how many (no hours: a wrong outcome
// is a verdict, not a wait), and puts the collateral damage's penalty down
// to its own cause, naming each writer and how many such writes it made.
func outcomeCauses(st *org.State, points map[string]float64, detail map[string]map[string]clock.Duration) {
	if len(st.World.Systems) == 0 {
		return
	}
	// Every completion with its outcome unmet, as the scorecard's
	// wrong_outcomes and the wrong penalty count them: the card's own, and
	// each completion its requester reopened (Redone), by who made it.
	wrong := map[string]int{}
	for _, oc := range policies.OutcomeCards(st) {
		if oc.Wrong {
			wrong[oc.By]++
		}
		for _, r := range oc.Redone {
			wrong[r.By]++
		}
	}
	if len(wrong) > 0 {
		detail[CauseWrongOutcome] = map[string]clock.Duration{}
		for _, m := range slices.Sorted(maps.Keys(wrong)) {
			detail[CauseWrongOutcome][fmt.Sprintf("%s: %s", m, Plural(wrong[m], "wrong outcome"))] += 0
		}
	}
	if pen := policies.WrongPenalties(st); pen > 0 {
		points[CauseWrongOutcome] += pen // what the guesses cost beyond the value they lost
	}
	if st.Collateral == 0 {
		return
	}
	points[CauseCollateral] += float64(st.Collateral) * st.World.Scoring.ViolationPenalty
	detail[CauseCollateral] = map[string]clock.Duration{}
	for _, m := range st.Members {
		if m.Collateral > 0 {
			detail[CauseCollateral][fmt.Sprintf("%s: %s", m.ID, Plural(m.Collateral, "write"))] += 0
		}
	}
}
