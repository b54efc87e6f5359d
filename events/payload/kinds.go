package payload

import "github.com/corpsim/corpsim/clock"

// Outcome-kind events (format 2): a member's decision on a case step, and
// a requester reopening a case closed with an outcome unmet.

// The event types are EvCaseDecided and EvCaseReopened (types.go).

// CaseDecided records the option a member chose on a step (its task).
type CaseDecided struct {
	Task      string     `json:"task"`
	Option    string     `json:"option"`
	BusyUntil clock.Time `json:"busy_until"`
}

// CaseReopened reopens a case: each step listed becomes a new task (its
// ID the step's task ID with "-r<N>", N the reopening's number from 1),
// waiting on nothing, with the effort the step had.
type CaseReopened struct {
	Case  string   `json:"case"`
	Steps []string `json:"steps"` // template step ids
	N     int      `json:"n"`
}
