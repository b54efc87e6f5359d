// Package client lets a Go program use a corpsim server over NATS: an
// operator creates and controls sessions, and an agent plays a seat.
//
//	op, _ := client.Dial("nats://127.0.0.1:4222", operatorToken)
//	reply, _ := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
//	p, _ := client.Play("nats://127.0.0.1:4222", reply.Seats["bob"], myAgent)
//	defer p.Close()
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/agents/wire"
)

// Operator manages sessions on a server.
type Operator struct {
	nc *nats.Conn
}

// Dial connects as an operator with the server's operator token.
func Dial(url, token string, opts ...nats.Option) (*Operator, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("corpsim operator"), nats.Token(token)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Operator{nc: nc}, nil
}

// Conn is the operator's connection (to follow event feeds, for example).
func (o *Operator) Conn() *nats.Conn { return o.nc }

// Create asks for a session; the reply holds the remote seats' credentials.
func (o *Operator) Create(ctx context.Context, req wire.CreateRequest) (wire.CreateReply, error) {
	var reply wire.CreateReply
	if err := o.request(ctx, wire.CreateSubject, req, &reply); err != nil {
		return reply, err
	}
	if reply.Error != "" {
		return reply, errors.New(reply.Error)
	}
	return reply, nil
}

// Control sends a control operation to a session and returns its status.
func (o *Operator) Control(ctx context.Context, session string, op wire.ControlOp) (wire.ControlReply, error) {
	var reply wire.ControlReply
	if err := o.request(ctx, wire.ControlSubject(session), wire.ControlRequest{Op: op}, &reply); err != nil {
		return reply, err
	}
	if reply.Error != "" {
		return reply, errors.New(reply.Error)
	}
	return reply, nil
}

// Delete asks the server to delete sessions that are not running from its
// log (wire.DeleteSubject), with forks every fork under them first. It
// returns what was deleted, also beside an error partway.
func (o *Operator) Delete(ctx context.Context, sessions []string, forks bool) ([]wire.Deleted, error) {
	var reply wire.DeleteReply
	if err := o.request(ctx, wire.DeleteSubject, wire.DeleteRequest{Sessions: sessions, Forks: forks}, &reply); err != nil {
		return nil, err
	}
	if reply.Error != "" {
		return reply.Deleted, errors.New(reply.Error)
	}
	return reply.Deleted, nil
}

func (o *Operator) request(ctx context.Context, subject string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := o.nc.RequestWithContext(ctx, subject, b)
	if err != nil {
		return fmt.Errorf("client: %s: %w", subject, err)
	}
	return json.Unmarshal(msg.Data, reply)
}

// Close disconnects.
func (o *Operator) Close() { o.nc.Close() }

// Player plays one seat.
type Player struct {
	nc   *nats.Conn
	host *natshost.Host
}

// Play connects with a seat's credentials and answers its turns with agent
// until Close. Each turn is answered on the seat's own subject; the
// connection may do nothing else.
func Play(url string, seat wire.Seat, agent agents.Agent, opts ...nats.Option) (*Player, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("corpsim seat " + seat.Member), nats.Token(seat.Token)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", seat.Member, err)
	}
	h, err := natshost.Serve(nc, seat.Session, map[string]agents.Agent{seat.Member: agent}, natshost.Options{})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Player{nc: nc, host: h}, nil
}

// Close stops playing and disconnects.
func (p *Player) Close() {
	p.host.Close()
	p.nc.Close()
}
