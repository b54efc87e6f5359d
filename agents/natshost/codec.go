package natshost

import (
	"encoding/json"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// decodeObservation decodes data into *o, which it overwrites, as
// json.Unmarshal would into a zero Observation. wire.DecodeObservation reads
// the JSON the driver writes (json.Marshal's) without reflection and with
// few allocations: decoding was most of a turn's cost (bench_test.go).
// Whatever it does not read (an observation written some other way, or
// invalid input) goes to encoding/json. codec_test.go checks that the two
// together accept and reject what encoding/json does, with the same value.
func decodeObservation(data []byte, o *org.Observation) error {
	if wire.DecodeObservation(data, o) {
		return nil
	}
	*o = org.Observation{}
	return json.Unmarshal(data, o)
}
