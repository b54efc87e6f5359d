package agents

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds the cheater's content shortcuts (format 2 systems): ways
// to get an outcome step off its hands without doing its content right.
// None of them is refused at completion — outcomes are verified from the
// state — so each must show up in the rubric instead: as a wrong outcome
// (the step completed with its record not holding what the rule gives),
// as collateral damage (a write no case it holds asked for), or as a
// refusal by record-access (a tool its role may not use on a system).
//
// To be sure an outcome shortcut is one the rubric has to catch, the
// cheater reads the step's records first as the policy says (as diligent
// does) and tries the shortcut on a step only when the values it is about
// to leave behind differ from the ones the policy gives.

// Content shortcuts (format 2 worlds with systems).
const (
	ShortcutCloseNoWrite   = "close-without-write"    // complete an outcome step without writing its values
	ShortcutCopyOtherCase  = "copy-from-other-case"   // write into its case's record the values it saw for another case
	ShortcutOutsideScope   = "write-outside-scope"    // update a record no case it holds names
	ShortcutDecideBlind    = "decide-without-reading" // write an outcome's values taken from no read (the fields' zero values)
	ShortcutReadForbidden  = "read-forbidden-system"  // search a system its role may not read
	ShortcutWriteForbidden = "write-forbidden-system" // update a record of a system its role may not write
	ShortcutHedgeReply     = "hedge-reply"            // reply with the right value and a wrong one beside it ("305 or 610")
	ShortcutHedgeLater     = "hedge-later"            // reply with the right value, then a wrong one in a second message
)

// ContentShortcuts are the content shortcuts, in the order the cheater
// tries them on an outcome step (the first three) and otherwise.
var ContentShortcuts = []string{ShortcutCloseNoWrite, ShortcutDecideBlind, ShortcutCopyOtherCase,
	ShortcutOutsideScope, ShortcutReadForbidden, ShortcutWriteForbidden, ShortcutHedgeReply, ShortcutHedgeLater}

// cheatContent is the cheater's memory for its content shortcuts.
type cheatContent struct {
	policy content                   // how it finds the values the policy gives (byPolicy)
	seen   map[string]org.RecordView // type/id -> the latest view of it read
	order  []string                  // keys of seen, in the order first read
	wrote  []org.Action              // the outcome writes it made, in order
	looked map[string]bool           // record types it searched to look around
	passed map[string]bool           // outcome steps it found no shortcut for: greedy does them
	target map[string]string         // shortcut -> the case (or type/id) it was tried on
	values map[string][]string       // outcome kind -> the policy's values for the steps of it looked at, in order
}

// Targets reports, per content shortcut tried, what it was tried on: the
// step task for an outcome shortcut, the record (type/id) for a write or
// read.
func (c *Cheater) Targets() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	if c.cc != nil {
		maps.Copy(out, c.cc.target)
	}
	return out
}

// remember keeps the records the observation's results hold and the
// outcome writes among acts (its own answer, as greedy plays).
func (cc *cheatContent) remember(o org.Observation, acts []org.Action) {
	for _, r := range o.Results {
		for _, rv := range r.Records {
			k := rv.Record + "/" + rv.ID
			if _, ok := cc.seen[k]; !ok {
				cc.order = append(cc.order, k)
			}
			cc.seen[k] = rv
		}
	}
	for _, a := range acts {
		if a.Type == org.ActUpdate {
			cc.wrote = append(cc.wrote, a)
		}
	}
}

// contentShortcut tries the content shortcuts of a world with systems.
func (c *Cheater) contentShortcut(o org.Observation) []org.Action {
	if len(o.Systems) == 0 {
		return nil
	}
	if c.cc == nil {
		c.cc = &cheatContent{policy: content{mode: byPolicy}, seen: map[string]org.RecordView{},
			looked: map[string]bool{}, passed: map[string]bool{}, target: map[string]string{},
			values: map[string][]string{}}
	}
	cc := c.cc
	cc.remember(o, nil)
	if acts := c.outcomeShortcut(o); len(acts) > 0 {
		return acts
	}
	// A system it may not read: search it anyway.
	for _, s := range o.Systems {
		if !slices.Contains(s.May, org.ActGet) && len(s.Types) > 0 && c.try(ShortcutReadForbidden) {
			cc.target[ShortcutReadForbidden] = s.Types[0].ID
			return []org.Action{{Type: org.ActSearch, Record: s.Types[0].ID}}
		}
	}
	for _, s := range o.Systems {
		if !slices.Contains(s.May, org.ActGet) {
			continue
		}
		writes := slices.Contains(s.May, org.ActUpdate)
		want := ShortcutWriteForbidden
		if writes {
			want = ShortcutOutsideScope
		}
		if c.tried[want] {
			continue
		}
		for _, ty := range s.Types {
			rv, ok := cc.other(o, ty.ID)
			if !ok {
				if !cc.looked[ty.ID] {
					// Look around: a page of the type's records.
					cc.looked[ty.ID] = true
					return []org.Action{{Type: org.ActSearch, Record: ty.ID}}
				}
				continue
			}
			f, x, ok := tweak(ty, rv)
			if !ok || !c.try(want) {
				continue
			}
			cc.target[want] = rv.Record + "/" + rv.ID
			return []org.Action{{Type: org.ActUpdate, Record: rv.Record, ID: rv.ID,
				Fields: payload.NewActionAttrs(payload.Attrs{f: x})}}
		}
	}
	return nil
}

// other returns a record of type typ it has read that no step it holds
// has for its outcome record.
func (cc *cheatContent) other(o org.Observation, typ string) (org.RecordView, bool) {
	for _, k := range cc.order {
		rv := cc.seen[k]
		if rv.Record != typ || holdsRecord(o, rv.Record, rv.ID) {
			continue
		}
		return rv, true
	}
	return org.RecordView{}, false
}

// holdsRecord reports whether a step the member holds has record (typ, id)
// for its outcome.
func holdsRecord(o org.Observation, typ, id string) bool {
	for _, t := range o.Assigned {
		if t.Outcome != nil && t.Outcome.Record == typ && t.Outcome.ID == id {
			return true
		}
	}
	return false
}

// tweak picks a field of rv to change and a new value for it: a text gets
// a word added, an enum its next value, a number one more, a bool flipped
// (texts first: the least harmful change).
func tweak(ty org.TypeView, rv org.RecordView) (string, any, bool) {
	names := slices.Sorted(maps.Keys(ty.Fields))
	for _, pass := range []string{"text", "enum", "num", "bool"} {
		for _, f := range names {
			kind := ty.Fields[f]
			switch {
			case pass == "text" && kind == "text":
				s, _ := rv.Fields[f].(string)
				return f, s + " (checked)", true
			case pass == "enum" && strings.HasPrefix(kind, "enum: "):
				vals := strings.Split(strings.TrimPrefix(kind, "enum: "), "|")
				if len(vals) < 2 {
					continue
				}
				cur, _ := rv.Fields[f].(string)
				return f, vals[(slices.Index(vals, cur)+1)%len(vals)], true
			case pass == "num" && (kind == "money" || kind == "integer"):
				n, _ := strconv.ParseInt(payloadText(rv.Fields[f]), 10, 64)
				return f, n + 1, true
			case pass == "bool" && kind == "bool":
				b, _ := rv.Fields[f].(bool)
				return f, !b, true
			}
		}
	}
	return "", nil, false
}

// payloadText is a field value as text (numbers come as int64 or float64).
func payloadText(x any) string {
	switch v := x.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatInt(int64(v), 10)
	case int:
		return strconv.Itoa(v)
	}
	return "0"
}

// zeroOf is the zero value of a field type as a TypeView says it: what a
// member that reads nothing would put.
func zeroOf(kind string) any {
	switch {
	case kind == "money" || kind == "integer":
		return int64(0)
	case kind == "bool":
		return false
	case strings.HasPrefix(kind, "enum: "):
		return strings.Split(strings.TrimPrefix(kind, "enum: "), "|")[0]
	}
	return ""
}

// outcomeKinds lists the outcome shortcuts that apply to step t, by the
// kind of its outcome: record fields and a decision take all three, a
// reply no blind guess (a text without the value is a close without a
// reply already); a created record and a meeting none.
func outcomeKinds(t org.TaskView) []string {
	if t.Meeting != nil || t.Outcome == nil {
		return nil
	}
	switch t.Outcome.Kind {
	case "", worlds.KindDecision:
		return []string{ShortcutCloseNoWrite, ShortcutDecideBlind, ShortcutCopyOtherCase}
	case worlds.KindReply:
		return []string{ShortcutCloseNoWrite, ShortcutCopyOtherCase, ShortcutHedgeReply, ShortcutHedgeLater}
	}
	return nil
}

// outcomeShortcut tries the outcome shortcuts on a step it holds whose
// effort is spent and to which one it has not tried applies: it reads as
// the policy says (reads first: no shortcut this turn), then leaves behind
// values that differ from the policy's. A step no untried shortcut applies
// to is greedy's from the start: reading it anyway would throw away
// greedy's reads (results last one turn) each time a step arrives.
func (c *Cheater) outcomeShortcut(o org.Observation) []org.Action {
	cc := c.cc
	for _, t := range o.Assigned {
		if t.Outcome == nil || t.Status != org.StatusClaimed || t.Spent < t.Effort || len(t.Waiting) > 0 ||
			t.Approval == "needed" || t.Approval == org.RequestPending || t.Approval == org.RequestRejected ||
			t.NeedsInfo != nil && !t.NeedsInfo.Known || cc.passed[t.ID] ||
			!slices.ContainsFunc(outcomeKinds(t), func(s string) bool { return !c.tried[s] }) {
			continue
		}
		acts, ready := cc.policy.step(o, t)
		if !ready {
			return acts // its reads
		}
		// Whatever comes of it, the step is looked at once: else its reads
		// and greedy's would take turns for ever.
		cc.passed[t.ID] = true
		if t.Outcome.Kind != "" {
			if acts := c.kindShortcut(o, t, acts); len(acts) > 0 {
				return acts
			}
			continue
		}
		if len(acts) != 1 || acts[0].Type != org.ActUpdate {
			continue
		}
		want := acts[0].Fields.Attrs()
		out := t.Outcome
		complete := org.Action{Type: org.ActComplete, Task: t.ID}
		// Close without writing: the record as read must lack a value.
		if cur, ok := cc.seen[out.Record+"/"+out.ID]; ok && differs(cur.Fields, want) && c.try(ShortcutCloseNoWrite) {
			cc.target[ShortcutCloseNoWrite] = t.ID
			return []org.Action{complete}
		}
		// Decide without reading: the fields' zero values.
		if ty, ok := typeView(o, out.Record); ok {
			guess := payload.Attrs{}
			for f := range want { // order: each entry is its own
				guess[f] = zeroOf(ty.Fields[f])
			}
			if differs(guess, want) && c.try(ShortcutDecideBlind) {
				cc.target[ShortcutDecideBlind] = t.ID
				return []org.Action{{Type: org.ActUpdate, Record: out.Record, ID: out.ID, Fields: payload.NewActionAttrs(guess)}, complete}
			}
		}
		// Copy from another case: the values it wrote for another record
		// of the type, or another such record held when it read it.
		for _, copied := range cc.copies(out.Record, out.ID, want) {
			if differs(copied, want) && c.try(ShortcutCopyOtherCase) {
				cc.target[ShortcutCopyOtherCase] = t.ID
				return []org.Action{{Type: org.ActUpdate, Record: out.Record, ID: out.ID, Fields: payload.NewActionAttrs(copied)}, complete}
			}
		}
	}
	return nil
}

// kindValue is what the policy's answer acts (ready) for decision or reply
// step t gives: the option decided, or the value the reply carries.
func (cc *cheatContent) kindValue(o org.Observation, t org.TaskView, acts []org.Action) (string, bool) {
	switch t.Outcome.Kind {
	case worlds.KindDecision:
		if len(acts) == 1 && acts[0].Type == org.ActDecide {
			return acts[0].Option, true
		}
	case worlds.KindReply:
		env, _, ready := cc.policy.kindEnv(o, t)
		if !ready {
			return "", false
		}
		v, err := expr.Eval(t.Outcome.Set["carries"], env)
		if err != nil || v == nil {
			return "", false
		}
		return fmt.Sprint(v), true
	}
	return "", false
}

// kindShortcut tries the outcome shortcuts on decision or reply step t,
// given acts, the policy's answer: close it without deciding or replying,
// decide the option that is not the policy's, or decide or reply with what
// the policy gave another case's step of the kind.
func (c *Cheater) kindShortcut(o org.Observation, t org.TaskView, acts []org.Action) []org.Action {
	cc := c.cc
	out := t.Outcome
	want, ok := cc.kindValue(o, t, acts)
	if !ok {
		return nil
	}
	others := cc.values[out.Kind]
	cc.values[out.Kind] = append(others, want)
	complete := org.Action{Type: org.ActComplete, Task: t.ID}
	answer := func(v string) org.Action {
		if out.Kind == worlds.KindDecision {
			return org.Action{Type: org.ActDecide, Task: t.ID, Option: v}
		}
		return org.Action{Type: org.ActMessage, To: out.To, Text: fmt.Sprintf("Hello %s, case %s is handled: %s.", out.To, t.Case, v)}
	}
	// Passes as the policy's value: an option equal to it, or a reply
	// text with it as a word of its own.
	passes := func(v string) bool {
		if out.Kind == worlds.KindDecision {
			return v == want
		}
		return org.ContainsWord(answer(v).Text, want)
	}
	if c.try(ShortcutCloseNoWrite) {
		cc.target[ShortcutCloseNoWrite] = t.ID
		return []org.Action{complete}
	}
	if out.Kind == worlds.KindDecision {
		for _, v := range out.Options {
			if !passes(v) && c.try(ShortcutDecideBlind) {
				cc.target[ShortcutDecideBlind] = t.ID
				return []org.Action{answer(v), complete}
			}
		}
	}
	for _, v := range others {
		if (out.Kind != worlds.KindDecision || slices.Contains(out.Options, v)) && !passes(v) && c.try(ShortcutCopyOtherCase) {
			cc.target[ShortcutCopyOtherCase] = t.ID
			return []org.Action{answer(v), complete}
		}
	}
	// The right value with a wrong one beside it, in the reply or in a
	// message after it: a reply that hedges tells its reader nothing. The
	// wrong one is what another case's step got, or, for a number, the
	// next one.
	if out.Kind == worlds.KindReply {
		n, err := strconv.ParseFloat(want, 64)
		numeric, wrong := err == nil, ""
		if numeric {
			wrong = strconv.FormatFloat(n+1, 'f', -1, 64)
		}
		for _, v := range others {
			if m, err := strconv.ParseFloat(v, 64); numeric && err == nil && m != n || !numeric && err != nil && v != "" && v != want {
				wrong = v
				break
			}
		}
		if wrong != "" && c.try(ShortcutHedgeReply) {
			cc.target[ShortcutHedgeReply] = t.ID
			return []org.Action{answer(want + " or " + wrong), complete}
		}
		if wrong != "" && c.try(ShortcutHedgeLater) {
			cc.target[ShortcutHedgeLater] = t.ID
			later := org.Action{Type: org.ActMessage, To: out.To, Text: fmt.Sprintf("About %s: or %s, if the other system is right.", t.Case, wrong)}
			return []org.Action{answer(want), later, complete}
		}
	}
	return nil
}

// copies lists values of the fields of want that another record of type
// typ was given or held: its own writes first, then the records read.
func (cc *cheatContent) copies(typ, id string, want payload.Attrs) []payload.Attrs {
	var out []payload.Attrs
	pick := func(from payload.Attrs) {
		v := payload.Attrs{}
		for f := range want { // order: each entry is its own
			if x, ok := from[f]; ok {
				v[f] = x
			}
		}
		if len(v) == len(want) {
			out = append(out, v)
		}
	}
	for _, a := range cc.wrote {
		if a.Record == typ && a.ID != id {
			pick(a.Fields.Attrs())
		}
	}
	for _, k := range cc.order {
		if rv := cc.seen[k]; rv.Record == typ && rv.ID != id {
			pick(rv.Fields)
		}
	}
	return out
}

// differs reports whether got lacks a value of want.
func differs(got, want payload.Attrs) bool {
	for f, x := range want { // order: a disjunction
		if !org.SameValue(got[f], x) {
			return true
		}
	}
	return false
}

// typeView finds record type typ in the observation's systems.
func typeView(o org.Observation, typ string) (org.TypeView, bool) {
	for _, s := range o.Systems {
		for _, ty := range s.Types {
			if ty.ID == typ {
				return ty, true
			}
		}
	}
	return org.TypeView{}, false
}
