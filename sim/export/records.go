package export

import (
	"encoding/json"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// This file carries a content world's records into the transcripts (format
// 2 systems): the tool result of an accepted get or search holds what it
// returned (the records with their fields and text, as the member's next
// observation shows them), the tools are the world's (its systems, record
// types and fields in the schemas), and each episode carries the rubric's
// verdicts on the outcome steps its member completed.

// keepRead keeps, for the turn that caused record.read ev, what the read
// returned: the last result of the reading member, just applied.
func keepRead(st *org.State, ev *events.Event, bySeq map[uint64]*turnRec) {
	t := bySeq[ev.Cause]
	m := st.Member(ev.Actor)
	if t == nil || t.member != ev.Actor || m == nil || len(m.Results) == 0 {
		return
	}
	t.reads = append(t.reads, m.Results[len(m.Results)-1])
}

// contentEpisode gives an episode of a world with systems its member's
// outcome verdicts.
func contentEpisode(ep *Episode, w *worlds.World, cards []policies.OutcomeCard) {
	if len(w.Systems) == 0 {
		return
	}
	for _, oc := range cards {
		if oc.By == ep.Member {
			ep.Outcomes = append(ep.Outcomes, oc)
		}
	}
}

// readResult is the tool message of an accepted get or search: the
// result message, then what the read returned as JSON. The default
// result ({"accepted":true}) gets it as its "result" field.
func (p Prompts) readResult(res string, r org.ReadResult) string {
	if p.Result == nil {
		b, _ := json.Marshal(struct {
			Accepted bool           `json:"accepted"`
			Result   org.ReadResult `json:"result"`
		}{true, r})
		return string(b)
	}
	b, _ := json.Marshal(r)
	return res + "\n" + string(b)
}
