package natsserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents/natsserver"
)

func TestClusterR3SurvivesOneNode(t *testing.T) {
	nodes, err := natsserver.StartCluster(t.TempDir(), 3, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			if n.Running() {
				n.Shutdown()
			}
		}
	}()
	leaders := 0
	for _, n := range nodes {
		if n.JetStreamLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("got %d meta leaders, want 1", leaders)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nodes[0].Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	nodes[2].Shutdown()
	// As a client does while the stream elects a new leader: a publish
	// sent to the one that went away is never answered, so it is sent
	// again (with its ID, so that the stream keeps it once) until one is
	// acknowledged. CI saw one publish wait out the whole 30 s.
	var perr error
	for ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, perr = js.Publish(pctx, "t.a", []byte("2"), jetstream.WithMsgID("2"))
		pcancel()
		if perr == nil {
			break
		}
	}
	if perr != nil {
		t.Fatalf("publish with 2 of 3 nodes: %v", perr)
	}
	// Another node serves the stream: both messages are there.
	nc2, err := nodes[1].Connect("reader")
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	st, err := js2.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().State.Msgs; got != 2 {
		t.Fatalf("got %d messages, want 2", got)
	}
}

func TestStartNodeNeedsNameAndStore(t *testing.T) {
	if _, err := natsserver.StartNode(natsserver.NodeOptions{Name: "x"}); err == nil {
		t.Fatal("a node without a store directory started")
	}
}
