package payload

import "fmt"

// Limits bound what one member sees and sends, per session. They are
// recorded in session.started, so replay, forks and resumes use the
// session's own limits. Zero fields take the defaults.
type Limits struct {
	// Listed bounds the Assigned, Available and Upcoming lists of an
	// observation; the tasks left out are counted in AssignedMore,
	// AvailableMore and UpcomingMore.
	Listed int `json:"listed,omitempty"`
	// Inbox bounds the messages one observation delivers, oldest first;
	// InboxMore counts the rest, which the next turns deliver (paged, never
	// dropped).
	Inbox int `json:"inbox,omitempty"`
	// MessageBytes bounds a message's text; a longer one is refused.
	MessageBytes int `json:"message_bytes,omitempty"`
}

// Default limits.
const (
	DefaultListed       = 50
	DefaultInbox        = 20
	DefaultMessageBytes = 4000
)

// WithDefaults fills the zero fields with the defaults.
func (l Limits) WithDefaults() Limits {
	if l.Listed == 0 {
		l.Listed = DefaultListed
	}
	if l.Inbox == 0 {
		l.Inbox = DefaultInbox
	}
	if l.MessageBytes == 0 {
		l.MessageBytes = DefaultMessageBytes
	}
	return l
}

// Validate reports a negative limit.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"listed", l.Listed}, {"inbox", l.Inbox}, {"message bytes", l.MessageBytes}} {
		if f.v < 0 {
			return fmt.Errorf("limit %s is %d; it must be positive (or 0 for the default)", f.name, f.v)
		}
	}
	return nil
}

// Compact zeroes the fields that equal the defaults, so a session started
// with the default limits spelled out records the same session.started as
// one started without them.
func (l Limits) Compact() Limits {
	d := Limits{}.WithDefaults()
	if l.Listed == d.Listed {
		l.Listed = 0
	}
	if l.Inbox == d.Inbox {
		l.Inbox = 0
	}
	if l.MessageBytes == d.MessageBytes {
		l.MessageBytes = 0
	}
	return l
}

// WorldLimits are the world budgets (worlds.Limits) a session was started
// with where they were raised above the defaults, recorded in
// session.started so that its replay, resume and fork load its world
// within them. Zero fields are the defaults; a session within the
// defaults records none.
type WorldLimits struct {
	FileBytes int     `json:"file_bytes,omitempty"`
	Depth     int     `json:"depth,omitempty"`
	Members   int     `json:"members,omitempty"`
	Tasks     int     `json:"tasks,omitempty"`
	Arrivals  int     `json:"arrivals,omitempty"`
	Burst     int     `json:"burst,omitempty"`
	MaxLoad   float64 `json:"max_load,omitempty"`
	Nodes     int     `json:"nodes,omitempty"`
}
