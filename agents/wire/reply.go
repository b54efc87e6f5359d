package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/org"
)

// ParseReply decodes an agent's reply strictly: unknown fields, trailing
// data, input over org.MaxReplyBytes, more than org.MaxActions actions and
// actions beside an error are errors with a sentence saying what was
// wrong.
func ParseReply(raw []byte) (org.Reply, error) {
	var r org.Reply
	if len(raw) > org.MaxReplyBytes {
		return r, fmt.Errorf("reply is %d bytes; the limit is %d", len(raw), org.MaxReplyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return org.Reply{}, fmt.Errorf("malformed reply: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return org.Reply{}, fmt.Errorf("malformed reply: trailing data after the JSON object")
	}
	if len(r.Actions) > org.MaxActions {
		return org.Reply{}, fmt.Errorf("reply has %d actions; the limit is %d", len(r.Actions), org.MaxActions)
	}
	if r.Error != "" && len(r.Actions) > 0 {
		return org.Reply{}, fmt.Errorf("reply has an error and %d actions; a reply that says the agent failed carries none", len(r.Actions))
	}
	return r, nil
}

// AppendReply appends r's JSON to dst: exactly json.Marshal's bytes
// (observation_test.go checks this). An agent host encodes a reply every turn.
func AppendReply(dst []byte, r *org.Reply) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendUint(dst, r.Turn, 10)
	dst = fastjson.AppendList(dst, `,"actions":`, r.Actions, func(a *org.Action, dst []byte) []byte {
		return payload.AppendAction(dst, a)
	})
	dst = fastjson.AppendKeyStringOmit(dst, `,"error":`, r.Error)
	return append(dst, '}')
}
