package openenv

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/sim/simtest"
)

// instantOps answers every step at once with the same observation: what is
// left to time is the adapter (frames, JSON, the WebSocket) alone.
type instantOps struct{ obs json.RawMessage }

func (instantOps) IsOperator(tok string) bool           { return tok == "op" }
func (instantOps) SeatOf(string) (string, string, bool) { return "", "", false }
func (o instantOps) Control(context.Context, string, wire.ControlOp) (wire.ControlReply, error) {
	return wire.ControlReply{}, nil
}
func (instantOps) Create(context.Context, wire.CreateRequest) (wire.CreateReply, error) {
	return wire.CreateReply{Session: "01BENCH", Seats: map[string]wire.Seat{"bob": {}}}, nil
}
func (o instantOps) Step(_ context.Context, id string, _ httpgw.StepRequest, _ time.Duration) (httpgw.StepReply, error) {
	return httpgw.StepReply{Session: id, Observations: map[string]json.RawMessage{"bob": o.obs}, Rewards: 1}, nil
}

const benchStepFrame = `{"type":"step","data":{"actions":{"bob":[{"type":"claim","task":"t7"},{"type":"work","task":"t7"}]}}}`

// benchObservation is a real observation of a shipped world, of about the
// size a seat sees.
func benchObservation(b *testing.B) json.RawMessage {
	obs := simtest.RandomObservations(b, 1, 30)
	best := obs[0]
	for _, o := range obs {
		if len(o) > len(best) && len(o) < 2048 {
			best = o
		}
	}
	return best
}

func benchDial(b *testing.B, url string) *websocket.Conn {
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer op"}}})
	if err != nil {
		b.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	b.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func benchRoundTrips(b *testing.B, c *websocket.Conn, frame []byte) {
	ctx := context.Background()
	var n int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		_, r, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += len(r)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/float64(b.N), "reply-bytes")
}

// BenchmarkStepRoundTrip: one OpenEnv step over /openenv/ws, the gateway
// answering at once; compare BenchmarkRawEcho, the same bytes both ways.
func BenchmarkStepRoundTrip(b *testing.B) {
	s := New(instantOps{obs: benchObservation(b)}, Config{Logger: hclog.NewNullLogger()})
	hs := httptest.NewServer(s.Handler())
	b.Cleanup(hs.Close)
	b.Cleanup(s.Close)
	c := benchDial(b, "ws"+hs.URL[len("http"):]+"/openenv/ws")
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset","data":{"world":"startup"}}`)); err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		b.Fatal(err)
	}
	benchRoundTrips(b, c, []byte(benchStepFrame))
}

// BenchmarkRawEcho: a WebSocket server of the same library that answers
// each frame with the bytes the adapter answers the step with.
func BenchmarkRawEcho(b *testing.B) {
	s := New(instantOps{obs: benchObservation(b)}, Config{Logger: hclog.NewNullLogger()})
	e := &episode{srv: s}
	e.handle(context.Background(), []byte(`{"type":"reset","data":{"world":"startup"}}`))
	reply, _ := e.handle(context.Background(), []byte(benchStepFrame))
	s.Close()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
			if err := c.Write(context.Background(), websocket.MessageText, reply); err != nil {
				return
			}
		}
	}))
	b.Cleanup(hs.Close)
	benchRoundTrips(b, benchDial(b, "ws"+hs.URL[len("http"):]), []byte(benchStepFrame))
}

func BenchmarkHandleStep(b *testing.B) {
	s := New(instantOps{obs: benchObservation(b)}, Config{Logger: hclog.NewNullLogger()})
	defer s.Close()
	e := &episode{srv: s}
	e.handle(context.Background(), []byte(`{"type":"reset","data":{"world":"startup"}}`))
	frame := []byte(benchStepFrame)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.handle(context.Background(), frame)
	}
}
