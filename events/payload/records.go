package payload

import "github.com/corpsim/corpsim/clock"

// Record events (format 2): a world with systems keeps records; every read
// and every write by a member is an event, so replay, fork and the state
// hash cover them.
// The event types are EvRecordRead and EvRecordWritten (types.go).

// RecordRead is a get (ID set) or a search (Filter, Page) of a record type.
type RecordRead struct {
	Op        string     `json:"op"` // get or search
	Record    string     `json:"record"`
	ID        string     `json:"id,omitempty"`
	Filter    Attrs      `json:"filter,omitempty"`
	Page      int        `json:"page,omitempty"`
	BusyUntil clock.Time `json:"busy_until"`
}

// RecordWritten changes one record. Before is nil for a create and After
// nil for a delete; an update names only the fields it changed, with their
// values before and after.
type RecordWritten struct {
	Op     string `json:"op"` // update, create or delete
	Record string `json:"record"`
	ID     string `json:"id"`
	Before Attrs  `json:"before,omitempty"`
	After  Attrs  `json:"after,omitempty"`
	// Collateral says no case in the writer's hands asked for the write
	// (collateral damage, which the rubric charges).
	Collateral bool       `json:"collateral,omitempty"`
	BusyUntil  clock.Time `json:"busy_until"`
}

// Expected is what a step of a case must leave behind on a record: field
// values computed from the case and the records when it opened.
type Expected struct {
	Step   string `json:"step"`
	Record string `json:"record"` // the record type
	ID     string `json:"id"`
	Fields Attrs  `json:"fields"`
	// Kind is the outcome's kind (facts.go in package worlds): "" for
	// field values on a record, else decision (Fields {"option": …}),
	// reply (Fields {"carries": …}; Record and ID empty) or create
	// (Record the type created, ID empty, Fields its values).
	Kind string `json:"kind,omitempty"`
}
