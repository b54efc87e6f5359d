package org

import "github.com/corpsim/corpsim/events/payload"

// Action types an agent may send.
const (
	ActClaim           = "claim"            // take an unassigned task: {"type":"claim","task":"api"}
	ActWork            = "work"             // work on your task: {"type":"work","task":"api","for":"2h"} (default: up to 2h)
	ActComplete        = "complete"         // mark your task done once its effort is spent
	ActRequestApproval = "request_approval" // ask for the purchase approval your task needs
	ActApprove         = "approve"          // approve a request waiting for you: {"type":"approve","request":"r1"}
	ActReject          = "reject"           // reject it, with a reason
	ActMessage         = "message"          // {"type":"message","to":"bob","text":"..."}
	ActWait            = "wait"             // do nothing until something you can see changes, or "for" a duration
	ActHandoff         = "handoff"          // give a task you hold back to its queue, or to a colleague: {"type":"handoff","task":"api","to":"carol"}
	ActEscalate        = "escalate"         // move your pending request's current step to its approver's manager: {"type":"escalate","request":"r1"}
)

// ActionTypes lists every action type, in documentation order.
var ActionTypes = []string{ActClaim, ActWork, ActComplete, ActHandoff, ActRequestApproval, ActApprove, ActReject, ActEscalate, ActMessage, ActWait, ActOpenCase, ActScheduleMeeting,
	ActGet, ActSearch, ActUpdate, ActCreate, ActDelete, ActDecide}

// Action is one thing a member does. Which fields matter depends on Type.
// It is the stored form too (turn, action.rejected): package
// events/payload defines it, and org names it.
type Action = payload.Action

// Reply is what an agent answers to a turn: its actions, or, when it could
// not decide (its backend failed), Error saying why and no actions. A
// reply with an Error is recorded as turn.failed.
type Reply struct {
	Turn    uint64   `json:"turn"` // the turn being answered, echoed from the Observation
	Actions []Action `json:"actions"`
	Error   string   `json:"error,omitempty"`
}

// MaxReplyBytes bounds the size of a reply an agent may send (the agent
// protocol's reply parser, wire.ParseReply, enforces it).
const MaxReplyBytes = 64 << 10

// MaxActions bounds the number of actions in one reply.
const MaxActions = 16

// KnownAction reports whether t is an action type.
func KnownAction(t string) bool {
	for _, a := range ActionTypes {
		if a == t {
			return true
		}
	}
	return false
}
