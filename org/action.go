package org

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

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
var ActionTypes = []string{ActClaim, ActWork, ActComplete, ActHandoff, ActRequestApproval, ActApprove, ActReject, ActEscalate, ActMessage, ActWait}

// Action is one thing a member does. Which fields matter depends on Type.
type Action struct {
	Type    string `json:"type"`
	Task    string `json:"task,omitempty"`
	Request string `json:"request,omitempty"`
	To      string `json:"to,omitempty"`
	Text    string `json:"text,omitempty"`
	Reason  string `json:"reason,omitempty"`
	For     string `json:"for,omitempty"`      // a duration such as "2h" for work and wait
	Until   int64  `json:"until,omitempty"`    // for wait: sleep until this simulated time
	ReplyTo string `json:"reply_to,omitempty"` // for message: the message it answers
	Topic   string `json:"topic,omitempty"`    // for message: information given (only colleagues who hold it)
}

// Reply is what an agent answers to a turn.
type Reply struct {
	Turn    uint64   `json:"turn"` // the turn being answered, echoed from the Observation
	Actions []Action `json:"actions"`
}

// MaxReplyBytes bounds the size of a reply an agent may send.
const MaxReplyBytes = 64 << 10

// MaxActions bounds the number of actions in one reply.
const MaxActions = 16

// ParseReply decodes an agent's reply strictly: unknown fields, trailing
// data, oversized input and too many actions are errors
// with a sentence saying what was wrong.
func ParseReply(raw []byte) (Reply, error) {
	var r Reply
	if len(raw) > MaxReplyBytes {
		return r, fmt.Errorf("reply is %d bytes; the limit is %d", len(raw), MaxReplyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Reply{}, fmt.Errorf("malformed reply: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Reply{}, fmt.Errorf("malformed reply: trailing data after the JSON object")
	}
	if len(r.Actions) > MaxActions {
		return Reply{}, fmt.Errorf("reply has %d actions; the limit is %d", len(r.Actions), MaxActions)
	}
	return r, nil
}

// KnownAction reports whether t is an action type.
func KnownAction(t string) bool {
	for _, a := range ActionTypes {
		if a == t {
			return true
		}
	}
	return false
}
