package natshost_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

func observation(b *testing.B) []byte {
	w, err := worlds.Shipped("startup")
	if err != nil {
		b.Fatal(err)
	}
	o := org.New(w).View("bob")
	o.Session = "s"
	data, err := json.Marshal(o)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func bus(b *testing.B) (*natsserver.Server, *nats.Conn, *nats.Conn) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := srv.Connect("asker")
	if err != nil {
		b.Fatal(err)
	}
	h, err := srv.Connect("host")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(); h.Close(); srv.Shutdown() })
	return srv, a, h
}

// BenchmarkAgentTurn is one agent turn across the embedded bus as the driver
// makes it: the observation out, the greedy agent's decision, the reply
// parsed. BenchmarkRawRequestReply is the same bytes echoed by a bare NATS
// responder, measured in the same run: the floor the bus sets.
func BenchmarkAgentTurn(b *testing.B) {
	data := observation(b)
	_, asker, hostConn := bus(b)
	h, err := natshost.Serve(hostConn, "s", map[string]agents.Agent{"bob": &agents.Greedy{}}, natshost.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	subj := wire.TurnSubject("s", "bob")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msg, err := asker.Request(subj, data, 5e9)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wire.ParseReply(msg.Data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

func BenchmarkRawRequestReply(b *testing.B) {
	data := observation(b)
	_, asker, hostConn := bus(b)
	reply := []byte(`{"turn":1,"actions":[{"type":"claim","task":"api"},{"type":"work","task":"api"}]}`)
	sub, err := hostConn.Subscribe("raw", func(m *nats.Msg) { _ = m.Respond(reply) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	hostConn.Flush()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := asker.Request("raw", data, 5e9); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
