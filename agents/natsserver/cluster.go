package natsserver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NodeOptions configure one node of an embedded NATS cluster with
// JetStream, for development and tests (production clusters run
// nats-server itself; see the README).
type NodeOptions struct {
	Name          string   // server name, unique in the cluster; required
	Cluster       string   // cluster name; "" means "corpsim"
	Listen        string   // client host:port; "" means 127.0.0.1 on a free port
	ClusterListen string   // route host:port; "" means a single server, no cluster
	Routes        []string // route URLs (nats-route://host:port) or host:port of the other nodes
	StoreDir      string   // JetStream's storage directory; required
	Logger        hclog.Logger
	Ready         time.Duration // how long to wait for the server to accept clients; 0 means 10s
	// SyncAlways makes JetStream fsync every write before acknowledging it
	// (nats-server's sync_interval: always). By default it fsyncs every two
	// minutes and relies on its replicas: a machine that loses power may
	// lose what it acknowledged in that window.
	SyncAlways bool
}

// Node is a running embedded NATS server with JetStream.
type Node struct {
	ns     *server.Server
	name   string
	logger hclog.Logger
}

// StartNode starts an embedded NATS server with JetStream and, if
// ClusterListen is set, cluster routes. It returns once the server accepts
// clients; a cluster's JetStream is usable only once the nodes have
// elected a meta leader (WaitJetStream).
func StartNode(o NodeOptions) (*Node, error) {
	if o.Name == "" || o.StoreDir == "" {
		return nil, errors.New("natsserver: a node needs a name and a store directory")
	}
	opts := &server.Options{
		ServerName: o.Name,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: DefaultMaxPayload,
		JetStream:  true,
		StoreDir:   filepath.Clean(o.StoreDir),
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		SyncAlways: o.SyncAlways,
	}
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, err
		}
		opts.Host, opts.Port = host, port
	}
	if o.ClusterListen != "" {
		host, port, err := splitHostPort(o.ClusterListen)
		if err != nil {
			return nil, err
		}
		opts.Cluster.Name = o.Cluster
		if opts.Cluster.Name == "" {
			opts.Cluster.Name = "corpsim"
		}
		opts.Cluster.Host, opts.Cluster.Port = host, port
		for _, r := range o.Routes {
			if !strings.Contains(r, "://") {
				r = "nats-route://" + r
			}
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("natsserver: route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: node %s: %w", o.Name, err)
	}
	ready := o.Ready
	if ready == 0 {
		ready = 10 * time.Second
	}
	if err := startServer(ns, &startLog{}, ready, "node "+o.Name); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	logger.Debug("embedded NATS node started", "name", o.Name, "client", ns.ClientURL(), "cluster", o.ClusterListen)
	return &Node{ns: ns, name: o.Name, logger: logger}, nil
}

// Name is the node's server name.
func (n *Node) Name() string { return n.name }

// ClientURL is the URL clients connect to.
func (n *Node) ClientURL() string { return n.ns.ClientURL() }

// Connect opens a client connection to the node, in-process. It does not
// fail over to other nodes: for that, connect to every node's ClientURL.
func (n *Node) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(name), nats.InProcessServer(n.ns)}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect %s to node %s: %w", name, n.name, err)
	}
	return nc, nil
}

// Interest reports whether anyone subscribes to subject (as Server.Interest).
func (n *Node) Interest(subject string) bool {
	return n.ns.GlobalAccount().SubscriptionInterest(subject)
}

// JetStreamLeader reports whether this node is the JetStream meta leader.
func (n *Node) JetStreamLeader() bool { return n.ns.JetStreamIsLeader() }

// StreamLeader reports whether this node leads stream (in the global
// account, the one corpsim uses).
func (n *Node) StreamLeader(stream string) bool {
	return n.ns.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream)
}

// Shutdown stops the node and waits for it. Its store stays on disk.
func (n *Node) Shutdown() {
	n.ns.Shutdown()
	n.ns.WaitForShutdown()
}

// Running reports whether the node has not been shut down.
func (n *Node) Running() bool { return n.ns.Running() }

// WaitJetStream waits until JetStream is usable on the running nodes among
// nodes: on a single server, once it is enabled; in a cluster, once one of
// them is the meta leader, sees all len(nodes) peers with JetStream, and
// every running node is current with it.
func WaitJetStream(nodes []*Node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		leaders, peers, current, running := 0, 0, 0, 0
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			running++
			if !n.ns.JetStreamIsClustered() {
				if n.ns.JetStreamEnabled() {
					leaders, current, peers = leaders+1, current+1, len(nodes)
				}
				continue
			}
			if n.ns.JetStreamIsLeader() {
				leaders++
				peers = len(n.ns.JetStreamClusterPeers())
			}
			if n.ns.JetStreamIsCurrent() {
				current++
			}
		}
		if leaders == 1 && peers == len(nodes) && current == running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natsserver: JetStream not ready after %v (%d meta leaders seeing %d peers, %d of %d nodes current)",
				timeout, leaders, peers, current, running)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// StartCluster starts n nodes named corpsim-1 … corpsim-n on loopback,
// each storing under dir/<name> and routing to all the others, and waits
// for their JetStream meta leader. The ports are free when chosen and
// taken a moment later; a clash fails the start.
func StartCluster(dir string, n int, logger hclog.Logger) ([]*Node, error) {
	if n < 1 {
		return nil, fmt.Errorf("natsserver: a cluster of %d nodes", n)
	}
	// The route ports are picked free, then closed for the nodes to bind:
	// another process may take one meanwhile, and a node on a loaded
	// machine may not be ready in time. Either is tried again, on new
	// ports, in new store folders.
	var err error
	for attempt := range 3 {
		var nodes []*Node
		nodes, err = startCluster(filepath.Join(dir, fmt.Sprintf("try-%d", attempt+1)), n, logger)
		if err == nil {
			return nodes, nil
		}
		if logger != nil {
			logger.Warn("embedded NATS cluster did not start; trying again on new ports", "attempt", attempt+1, "error", err)
		}
	}
	return nil, err
}

func startCluster(dir string, n int, logger hclog.Logger) ([]*Node, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	nodes := make([]*Node, 0, n)
	stop := func() {
		for _, nd := range nodes {
			nd.Shutdown()
		}
	}
	for i := range n {
		name := fmt.Sprintf("corpsim-%d", i+1)
		o := NodeOptions{Name: name, StoreDir: filepath.Join(dir, name), Logger: logger}
		if n > 1 {
			o.ClusterListen = fmt.Sprintf("127.0.0.1:%d", ports[i])
			o.Routes = append(append([]string{}, routes[:i]...), routes[i+1:]...)
		}
		nd, err := StartNode(o)
		if err != nil {
			stop()
			return nil, err
		}
		nodes = append(nodes, nd)
	}
	if err := WaitJetStream(nodes, 30*time.Second); err != nil {
		stop()
		return nil, err
	}
	return nodes, nil
}

func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natsserver: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
