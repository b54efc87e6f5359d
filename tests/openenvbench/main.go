// Command openenvbench measures corpsim's OpenEnv adapter against a running
// `corpsim serve --http`, for tests/bench.sh. Each mode prints one JSON
// object on stdout; progress goes to stderr. It reports figures and never
// judges them.
//
//	openenvbench -url http://127.0.0.1:8080 -token TOKEN -mode step
//	openenvbench … -mode resets -conns 4 -seconds 20
//	openenvbench … -mode hold -levels 500,1000,2000,3000,4000 -think 1s -window 20s -pid PID
//
// step: one connection steps an episode after another (the world's remote
// seats answered by a fixed policy) and times each step's round trip;
// then the same request and reply frames, byte for byte, cross a raw
// WebSocket echo (the same library, over loopback, a server that answers
// each frame with the recorded reply), timed the same way.
//
// resets: -conns connections reset as fast as they can for -seconds; each
// reset stops the connection's previous session and creates a new one.
//
// hold: opens connections up to each level in turn (keeping those already
// open); every connection resets, then steps with -think between steps
// (the time a model takes to decide), resetting when its episode ends. At
// each level, once all are open, it counts for -window the steps each
// connection completed; a level is held when none failed, every connection
// stepped in the window, and the server kept up: the steps per second
// reached 80% of the offered rate (connections / think, which mean step
// latencies up to a quarter of the think time allow). It stops at the
// first level not held.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

type config struct {
	url, token, world, agents string
	conns, seconds, steps     int
	levels                    []int
	think, window             time.Duration
	pid                       int
}

func main() {
	var c config
	var mode, levels string
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the --http address of corpsim serve")
	flag.StringVar(&c.token, "token", "", "the operator token")
	flag.StringVar(&mode, "mode", "step", "step, resets or hold")
	flag.StringVar(&c.world, "world", "startup", "the world of every episode")
	flag.StringVar(&c.agents, "agents", "greedy,bob=remote", "the agents of every episode")
	flag.IntVar(&c.steps, "steps", 2000, "step: steps timed (and as many echoes)")
	flag.IntVar(&c.conns, "conns", 4, "resets: connections")
	flag.IntVar(&c.seconds, "seconds", 20, "resets: how long")
	flag.StringVar(&levels, "levels", "500,1000,2000,3000,4000", "hold: connection counts to try, in order")
	flag.DurationVar(&c.think, "think", time.Second, "hold: pause between a connection's steps")
	flag.DurationVar(&c.window, "window", 20*time.Second, "hold: how long each level is measured")
	flag.IntVar(&c.pid, "pid", 0, "hold: the server's process ID, to report its memory")
	flag.Parse()
	for _, f := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fatal("bad -levels %q", levels)
		}
		c.levels = append(c.levels, n)
	}
	var out any
	var err error
	switch mode {
	case "step":
		out, err = benchStep(c)
	case "resets":
		out, err = benchResets(c)
	case "hold":
		out, err = benchHold(c)
	default:
		err = fmt.Errorf("unknown -mode %q", mode)
	}
	if err != nil {
		fatal("%v", err)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "openenvbench: "+format+"\n", args...)
	os.Exit(1)
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "openenvbench: "+format+"\n", args...) }

// conn is one OpenEnv connection.
type conn struct {
	ws      *websocket.Conn
	c       *config
	seats   map[string]json.RawMessage // the last observation's seats
	done    bool
	lastReq []byte
	lastRep []byte
}

func dial(ctx context.Context, c *config) (*conn, error) {
	u := "ws" + strings.TrimPrefix(c.url, "http") + "/openenv/ws"
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}}})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial: %w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	ws.SetReadLimit(64 << 20)
	return &conn{ws: ws, c: c}, nil
}

type frameReply struct {
	Type string `json:"type"`
	Data struct {
		Observation struct {
			Seats map[string]json.RawMessage `json:"seats"`
		} `json:"observation"`
		Reward  float64 `json:"reward"`
		Done    bool    `json:"done"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
	} `json:"data"`
}

func (k *conn) roundTrip(ctx context.Context, frame []byte) (frameReply, error) {
	var r frameReply
	if err := k.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		return r, err
	}
	_, b, err := k.ws.Read(ctx)
	if err != nil {
		return r, err
	}
	k.lastReq, k.lastRep = frame, b
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Type == "error" {
		return r, fmt.Errorf("%s: %s", r.Data.Code, r.Data.Message)
	}
	k.seats, k.done = r.Data.Observation.Seats, r.Data.Done
	return r, nil
}

func (k *conn) reset(ctx context.Context, seed int) error {
	b, _ := json.Marshal(map[string]any{"type": "reset", "data": map[string]any{"world": k.c.world, "agents": k.c.agents, "seed": seed}})
	_, err := k.roundTrip(ctx, b)
	return err
}

// step answers every seat shown with the policy's actions.
func (k *conn) step(ctx context.Context) error {
	actions := map[string][]map[string]any{}
	for _, m := range slices.Sorted(maps.Keys(k.seats)) {
		actions[m] = decide(k.seats[m])
	}
	b, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"actions": actions}})
	_, err := k.roundTrip(ctx, b)
	return err
}

// decide is the tests' simple policy: approve what waits, work and
// complete what it holds, else claim the first available task.
func decide(raw json.RawMessage) []map[string]any {
	type task struct {
		ID       string   `json:"id"`
		Status   string   `json:"status"`
		Waiting  []string `json:"waiting_on"`
		Spent    int64    `json:"spent"`
		Effort   int64    `json:"effort"`
		Approval string   `json:"approval"`
	}
	var o struct {
		Approvals []struct{ ID string } `json:"approvals"`
		Assigned  []task                `json:"assigned"`
		Available []task                `json:"available"`
	}
	_ = json.Unmarshal(raw, &o)
	acts := []map[string]any{}
	for _, r := range o.Approvals {
		acts = append(acts, map[string]any{"type": "approve", "request": r.ID})
	}
	for _, t := range o.Assigned {
		switch {
		case t.Status == "in_progress" || len(t.Waiting) > 0 || t.Approval == "pending":
		case t.Spent < t.Effort:
			return append(acts, map[string]any{"type": "work", "task": t.ID})
		case t.Approval == "needed" || t.Approval == "rejected":
			acts = append(acts, map[string]any{"type": "request_approval", "task": t.ID})
		default:
			acts = append(acts, map[string]any{"type": "complete", "task": t.ID})
		}
	}
	if len(o.Available) > 0 {
		id := o.Available[0].ID
		return append(acts, map[string]any{"type": "claim", "task": id}, map[string]any{"type": "work", "task": id})
	}
	return append(acts, map[string]any{"type": "wait"})
}

// ---- step ---------------------------------------------------------------

type stepResult struct {
	Steps        int     `json:"steps"`
	Episodes     int     `json:"episodes"`
	StepUS       float64 `json:"step_us"` // mean round trip of a step
	StepP50US    float64 `json:"step_p50_us"`
	StepP99US    float64 `json:"step_p99_us"`
	EchoUS       float64 `json:"echo_us"` // mean round trip of the same frames over a raw echo
	EchoP50US    float64 `json:"echo_p50_us"`
	Ratio        float64 `json:"ratio"` // StepUS / EchoUS
	V1US         float64 `json:"v1_us"` // mean round trip of the gateway's own HTTP step, same world and policy
	V1P50US      float64 `json:"v1_p50_us"`
	RequestBytes float64 `json:"request_bytes"`
	ReplyBytes   float64 `json:"reply_bytes"`
}

func benchStep(c config) (stepResult, error) {
	ctx := context.Background()
	k, err := dial(ctx, &c)
	if err != nil {
		return stepResult{}, err
	}
	defer k.ws.CloseNow()
	var res stepResult
	seed := 1
	if err := k.reset(ctx, seed); err != nil {
		return res, err
	}
	res.Episodes = 1
	type pair struct{ req, rep []byte }
	var pairs []pair
	var times []time.Duration
	warm := 50
	for len(times) < c.steps {
		if k.done {
			seed++
			if err := k.reset(ctx, seed); err != nil {
				return res, err
			}
			res.Episodes++
			continue
		}
		began := time.Now()
		if err := k.step(ctx); err != nil {
			return res, err
		}
		d := time.Since(began)
		if warm > 0 {
			warm--
			continue
		}
		times = append(times, d)
		pairs = append(pairs, pair{k.lastReq, k.lastRep})
	}
	res.Steps = len(times)
	res.StepUS, res.StepP50US, res.StepP99US = stats(times)
	var reqB, repB int
	for _, p := range pairs {
		reqB += len(p.req)
		repB += len(p.rep)
	}
	res.RequestBytes, res.ReplyBytes = float64(reqB)/float64(len(pairs)), float64(repB)/float64(len(pairs))
	say("step: %d steps over %d episodes, mean %.1f µs", res.Steps, res.Episodes, res.StepUS)

	// The raw echo: the same frames, in the same order.
	replies := make(chan []byte, len(pairs))
	for _, p := range pairs {
		replies <- p.rep
	}
	close(replies)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(64 << 20)
		for rep := range replies {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
			if err := ws.Write(ctx, websocket.MessageText, rep); err != nil {
				return
			}
		}
	})}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	ec, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String(), nil)
	if err != nil {
		return res, err
	}
	defer ec.CloseNow()
	ec.SetReadLimit(64 << 20)
	echoes := make([]time.Duration, 0, len(pairs))
	for _, p := range pairs {
		began := time.Now()
		if err := ec.Write(ctx, websocket.MessageText, p.req); err != nil {
			return res, err
		}
		if _, _, err := ec.Read(ctx); err != nil {
			return res, err
		}
		echoes = append(echoes, time.Since(began))
	}
	res.EchoUS, res.EchoP50US, _ = stats(echoes)
	res.Ratio = res.StepUS / res.EchoUS
	v1, err := v1Steps(c, len(times))
	if err != nil {
		return res, err
	}
	res.V1US, res.V1P50US, _ = stats(v1)
	return res, nil
}

// v1Steps times n steps of the gateway's HTTP step (POST
// /v1/sessions/{id}/step, keep-alive) on episodes like benchStep's.
func v1Steps(c config, n int) ([]time.Duration, error) {
	client := &http.Client{Timeout: time.Minute}
	do := func(path string, body any, out any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", c.url+path, strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST %s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
	type stepReply struct {
		Observations map[string]json.RawMessage `json:"observations"`
		Done         bool                       `json:"done"`
	}
	var times []time.Duration
	for seed := 1; len(times) < n; seed++ {
		var cr struct{ Session string }
		if err := do("/v1/sessions", map[string]any{"world": c.world, "agents": c.agents, "seed": seed}, &cr); err != nil {
			return nil, err
		}
		var r stepReply
		if err := do("/v1/sessions/"+cr.Session+"/step", map[string]any{}, &r); err != nil {
			return nil, err
		}
		for !r.Done && len(times) < n {
			actions := map[string][]map[string]any{}
			for _, m := range slices.Sorted(maps.Keys(r.Observations)) {
				actions[m] = decide(r.Observations[m])
			}
			began := time.Now()
			r = stepReply{}
			if err := do("/v1/sessions/"+cr.Session+"/step", map[string]any{"actions": actions}, &r); err != nil {
				return nil, err
			}
			times = append(times, time.Since(began))
		}
		if !r.Done {
			var ctl struct{}
			_ = do("/v1/sessions/"+cr.Session+"/control", map[string]any{"op": "stop"}, &ctl)
		}
	}
	say("v1 step: %d steps", len(times))
	return times, nil
}

// stats returns the mean, median and 99th percentile in µs.
func stats(d []time.Duration) (mean, p50, p99 float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	us := func(x time.Duration) float64 { return float64(x) / 1e3 }
	return us(sum) / float64(len(s)), us(s[len(s)/2]), us(s[min(len(s)-1, len(s)*99/100)])
}

// ---- resets -------------------------------------------------------------

type resetsResult struct {
	Conns     int     `json:"conns"`
	Seconds   float64 `json:"seconds"`
	Resets    int64   `json:"resets"`
	PerSecond float64 `json:"resets_per_second"`
	MeanMS    float64 `json:"mean_ms"`
}

func benchResets(c config) (resetsResult, error) {
	ctx := context.Background()
	res := resetsResult{Conns: c.conns}
	var n atomic.Int64
	var total atomic.Int64 // ns
	var wg sync.WaitGroup
	errs := make(chan error, c.conns)
	began := time.Now()
	deadline := began.Add(time.Duration(c.seconds) * time.Second)
	for i := range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := dial(ctx, &c)
			if err != nil {
				errs <- err
				return
			}
			defer func() {
				_ = k.ws.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
				_ = k.ws.Close(websocket.StatusNormalClosure, "")
			}()
			for seed := i*1_000_000 + 1; time.Now().Before(deadline); seed++ {
				t0 := time.Now()
				if err := k.reset(ctx, seed); err != nil {
					errs <- err
					return
				}
				total.Add(int64(time.Since(t0)))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return res, err
	}
	res.Seconds = time.Since(began).Seconds()
	res.Resets = n.Load()
	res.PerSecond = float64(res.Resets) / res.Seconds
	res.MeanMS = float64(total.Load()) / float64(max(res.Resets, 1)) / 1e6
	say("resets: %d in %.1fs over %d connections", res.Resets, res.Seconds, c.conns)
	return res, nil
}

// ---- hold ---------------------------------------------------------------

type levelResult struct {
	Conns       int     `json:"conns"`
	Held        bool    `json:"held"`
	Stepped     int     `json:"stepped"`         // connections that stepped in the window
	Failed      int     `json:"failed"`          // connections that failed (ever)
	Steps       int64   `json:"steps"`           // steps completed in the window
	StepsPerSec float64 `json:"steps_per_sec"`   // over the window
	Offered     float64 `json:"offered_per_sec"` // conns / think: the rate if steps took no time
	P50MS       float64 `json:"step_p50_ms"`
	P99MS       float64 `json:"step_p99_ms"`
	ServerRSS   int64   `json:"server_rss_kib,omitempty"`
	FirstError  string  `json:"first_error,omitempty"`
}

type holdResult struct {
	MaxHeld int           `json:"max_held"`
	Think   string        `json:"think"`
	Window  string        `json:"window"`
	Levels  []levelResult `json:"levels"`
}

// holder is one connection of hold: it steps until told to stop.
type holder struct {
	steps atomic.Int64
	mu    sync.Mutex
	lat   []time.Duration // in the window
	err   error
}

func benchHold(c config) (holdResult, error) {
	res := holdResult{Think: c.think.String(), Window: c.window.String()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var measuring atomic.Bool
	var holders []*holder
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	dials := make(chan struct{}, 32) // dials and first resets at once
	for _, level := range c.levels {
		say("hold: opening connections up to %d", level)
		var opening sync.WaitGroup
		for i := len(holders); i < level; i++ {
			h := &holder{}
			holders = append(holders, h)
			opening.Add(1)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				dials <- struct{}{}
				k, err := dial(ctx, &c)
				if err == nil {
					err = k.reset(ctx, i+1)
				}
				<-dials
				opening.Done()
				if err != nil {
					h.mu.Lock()
					h.err = err
					h.mu.Unlock()
					return
				}
				defer k.ws.CloseNow()
				seed := i + 1
				// Spread the connections' steps over the think time.
				t := time.NewTimer(time.Duration(i%1000) * c.think / 1000)
				for {
					select {
					case <-ctx.Done():
						t.Stop()
						return
					case <-t.C:
					}
					var err error
					began := time.Now()
					if k.done {
						seed += 1_000_000
						err = k.reset(ctx, seed)
					} else {
						err = k.step(ctx)
					}
					d := time.Since(began)
					if err != nil {
						if ctx.Err() == nil {
							h.mu.Lock()
							h.err = err
							h.mu.Unlock()
						}
						return
					}
					if measuring.Load() {
						h.steps.Add(1)
						h.mu.Lock()
						h.lat = append(h.lat, d)
						h.mu.Unlock()
					}
					t.Reset(c.think)
				}
			}(i)
		}
		opening.Wait()
		for _, h := range holders {
			h.steps.Store(0)
			h.mu.Lock()
			h.lat = h.lat[:0]
			h.mu.Unlock()
		}
		measuring.Store(true)
		time.Sleep(c.window)
		measuring.Store(false)
		lr := levelResult{Conns: level}
		var lat []time.Duration
		for _, h := range holders {
			n := h.steps.Load()
			h.mu.Lock()
			if h.err != nil {
				lr.Failed++
				if lr.FirstError == "" {
					lr.FirstError = h.err.Error()
				}
			} else if n > 0 {
				lr.Stepped++
			}
			lat = append(lat, h.lat...)
			h.mu.Unlock()
			lr.Steps += n
		}
		lr.StepsPerSec = float64(lr.Steps) / c.window.Seconds()
		lr.Offered = float64(level) / c.think.Seconds()
		lr.Held = lr.Failed == 0 && lr.Stepped == level && lr.StepsPerSec >= 0.8*lr.Offered
		_, p50, p99 := stats(lat)
		lr.P50MS, lr.P99MS = p50/1e3, p99/1e3
		lr.ServerRSS = rss(c.pid)
		say("hold: %d connections: held %v, %d stepped, %d failed, %.0f steps/s, p50 %.1f ms, p99 %.1f ms, server RSS %d KiB %s",
			level, lr.Held, lr.Stepped, lr.Failed, lr.StepsPerSec, lr.P50MS, lr.P99MS, lr.ServerRSS, lr.FirstError)
		res.Levels = append(res.Levels, lr)
		if !lr.Held {
			break
		}
		res.MaxHeld = level
	}
	return res, nil
}

// rss is a process's resident memory in KiB (0 if unknown).
func rss(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
