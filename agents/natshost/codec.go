package natshost

import (
	json "github.com/goccy/go-json"

	"github.com/corpsim/corpsim/org"
)

// A turn's JSON is decoded and encoded by github.com/goccy/go-json rather
// than encoding/json: decoding the observation was most of a turn's cost
// (bench_test.go), and go-json does it several times faster. It follows
// encoding/json's rules (keys matched exactly, else by case folding; unknown
// keys skipped; the whole input checked), and codec_test.go holds it to
// them: for observations it must accept and reject what encoding/json does
// and yield the same value, and a reply must be encoded to the same bytes.

// decodeObservation decodes data into o as json.Unmarshal would.
func decodeObservation(data []byte, o *org.Observation) error {
	return json.Unmarshal(data, o)
}

// encodeReply encodes r to the bytes json.Marshal would.
func encodeReply(r org.Reply) ([]byte, error) {
	return json.Marshal(r)
}
