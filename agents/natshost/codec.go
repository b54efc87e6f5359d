package natshost

import (
	json "github.com/goccy/go-json"

	"github.com/corpsim/corpsim/org"
)

// A turn's observation is decoded by org.DecodeObservation, which reads the
// JSON the driver writes (json.Marshal's) without reflection and with few
// allocations; decoding was most of a turn's cost (bench_test.go). Whatever
// it does not read (JSON written some other way, which is still a valid
// observation, or invalid input) goes to github.com/goccy/go-json, which
// follows encoding/json's rules: keys matched exactly, else by case folding;
// unknown keys skipped; the whole input checked. Replies are encoded by
// go-json too. codec_test.go holds both paths to encoding/json: an
// observation must be accepted or rejected alike and decode to the same
// value, and a reply must encode to the same bytes.

// decodeObservation decodes data into *o, which it overwrites, as
// json.Unmarshal would into a zero Observation.
func decodeObservation(data []byte, o *org.Observation) error {
	if org.DecodeObservation(data, o) {
		return nil
	}
	*o = org.Observation{}
	return json.Unmarshal(data, o)
}

// encodeReply encodes r to the bytes json.Marshal would.
func encodeReply(r org.Reply) ([]byte, error) {
	return json.Marshal(r)
}
