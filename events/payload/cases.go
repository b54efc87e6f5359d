package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/corpsim/corpsim/clock"
)

// CaseOpened opens a case. Its steps become tasks (ID "<case>.<step>")
// whose dependencies are other steps of the case; the case is done when
// every one of them is. OpenedBy is the member who opened it with
// open_case, or "" when an arrival did (Arrival, with when it brings its
// next case, as task.created has it).
type CaseOpened struct {
	Case       string     `json:"case"`
	Template   string     `json:"template"`
	Title      string     `json:"title"`
	Queue      string     `json:"queue"`
	Team       string     `json:"team"`
	Priority   int        `json:"priority,omitempty"`
	Value      float64    `json:"value"`
	Deadline   clock.Time `json:"deadline,omitempty"` // when it should be done; 0 for none
	Due        clock.Time `json:"due,omitempty"`      // its SLA; 0 for none
	Attributes Attrs      `json:"attributes"`
	Facts      Attrs      `json:"facts,omitempty"` // hidden from agents
	Steps      []TaskSpec `json:"steps"`
	// Skipped are the optional steps whose condition did not hold.
	Skipped  []string   `json:"skipped,omitempty"`
	OpenedBy string     `json:"opened_by,omitempty"`
	Arrival  string     `json:"arrival,omitempty"`
	NextAt   clock.Time `json:"next_at,omitempty"`
	// NextAtZero: as in TaskCreated.
	NextAtZero bool `json:"next_at_zero,omitempty"`
	// BusyUntil is when the member who opened it is free again.
	BusyUntil clock.Time `json:"busy_until,omitempty"`
	// Expected are the outcomes its steps must leave behind, computed when
	// it opened (format 2 systems; hidden from agents).
	Expected []Expected `json:"expected,omitempty"`
	// Meetings are the meetings its steps must book (meetings.go; hidden
	// from agents but for what the step's task shows).
	Meetings []ExpectedMeeting `json:"meetings,omitempty"`
}

// SetNext records when the arrival's next case comes (at), or that it
// brings no more (ok false).
func (p *CaseOpened) SetNext(at clock.Time, ok bool) {
	if !ok {
		p.NextAt, p.NextAtZero = 0, false
		return
	}
	p.NextAt, p.NextAtZero = at, at == 0
}

// Next returns when the arrival's next case comes; ok is false when it
// brings no more (or no arrival opened the case).
func (p *CaseOpened) Next() (at clock.Time, ok bool) { return p.NextAt, p.NextAt != 0 || p.NextAtZero }

// Attrs are a case's attributes or facts: name -> an int64 amount or a
// string. Encoded as a JSON object (keys sorted); integers decode as int64.
type Attrs map[string]any

// UnmarshalJSON reads integers as int64 and strings as strings; any other
// number stays a float64 and anything else is kept as decoded, for the
// checks to refuse by name.
func (a *Attrs) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*a = nil
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return err
	}
	for k, v := range m { // order: each value is converted on its own
		if n, ok := v.(json.Number); ok {
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				m[k] = i
			} else if f, err := n.Float64(); err == nil {
				m[k] = f
			} else {
				return fmt.Errorf("attribute %s: %v", k, err)
			}
		}
	}
	*a = m
	return nil
}

// Vars are the attributes (and facts) as expressions and text templates
// read them: amounts as int, strings as strings, and the case's id as
// "case".
func Vars(caseID string, lists ...Attrs) map[string]any {
	vars := map[string]any{"case": caseID}
	for _, l := range lists {
		for _, k := range slices.Sorted(maps.Keys(l)) {
			switch x := l[k].(type) {
			case int64:
				vars[k] = int(x)
			default:
				vars[k] = x
			}
		}
	}
	return vars
}

// Int returns attribute name as an integer amount.
func (a Attrs) Int(name string) (int64, bool) {
	x, ok := a[name].(int64)
	return x, ok
}

// ActionAttrs are the attributes an open_case action gives, kept as their
// canonical JSON (an object, keys sorted) so that an Action stays a
// comparable value.
type ActionAttrs struct{ raw string }

// NewActionAttrs makes the attributes of an action.
func NewActionAttrs(a Attrs) ActionAttrs {
	if len(a) == 0 {
		return ActionAttrs{}
	}
	b, err := json.Marshal(a)
	if err != nil {
		return ActionAttrs{}
	}
	return ActionAttrs{raw: string(b)}
}

// IsZero reports whether no attributes were given.
func (a ActionAttrs) IsZero() bool { return a.raw == "" }

// Attrs decodes them.
func (a ActionAttrs) Attrs() Attrs {
	if a.raw == "" {
		return nil
	}
	var out Attrs
	if err := json.Unmarshal([]byte(a.raw), &out); err != nil {
		return nil
	}
	return out
}

// MarshalJSON writes the object.
func (a ActionAttrs) MarshalJSON() ([]byte, error) {
	if a.raw == "" {
		return []byte("null"), nil
	}
	return []byte(a.raw), nil
}

// UnmarshalJSON reads an object (or null) and keeps its canonical form.
func (a *ActionAttrs) UnmarshalJSON(b []byte) error {
	var m Attrs
	if err := m.UnmarshalJSON(b); err != nil {
		return err
	}
	*a = NewActionAttrs(m)
	return nil
}
