package sim_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// A session keyed with an operator's secret makes every draw with its
// draw seed, not its seed: it is the session an unkeyed run of seed
// DrawSeed(seed, key) makes, event for event (only the event IDs, drawn
// from the public seed, session.started and the state hash differ). A draw left on the
// public seed anywhere in the engine or the state (a hidden rule, a
// record, an arrival, an effort, a colleague's reply) makes the two
// differ. The key and the draw seed never reach an observation, the log
// records the key (format 8), and the keyed log replays to its state.
func TestDrawKeyKeysEveryDraw(t *testing.T) {
	for _, run := range []struct{ world, agent string }{
		{"meetings", "oracle"}, {"meetings", "diligent"}, // diligent asks: the answers are drawn
		{"billing-support", "oracle"}, {"access-requests", "oracle"},
	} {
		world, agent := run.world, run.agent
		t.Run(world+"/"+agent, func(t *testing.T) {
			src, err := worlds.Source(world)
			if err != nil {
				t.Fatal(err)
			}
			const seed = 3
			key := payload.NewDrawKey([]byte("operator's secret"), seed)
			draws := payload.DrawSeed(seed, key)
			var buf bytes.Buffer
			looks := 0
			seen := func(o org.Observation) {
				buf.Reset()
				if err := json.NewEncoder(&buf).Encode(o); err != nil {
					t.Fatal(err)
				}
				looks++
				for _, s := range []string{base64.StdEncoding.EncodeToString(key), hex.EncodeToString(key), strconv.FormatUint(draws, 10)} {
					if bytes.Contains(buf.Bytes(), []byte(s)) {
						t.Fatalf("an observation of %s shows the draws' key or seed %s", o.Member, s)
					}
				}
			}
			keyed, kev := playKeyed(t, world+".yaml", src, agent, seed, key, seen)
			if looks == 0 {
				t.Fatal("no observation was made")
			}
			if keyed.DrawSeed() != draws {
				t.Fatalf("engine's draw seed %d, want %d", keyed.DrawSeed(), draws)
			}
			_, pev := playKeyed(t, world+".yaml", src, agent, draws, nil, nil)
			if len(kev) != len(pev) {
				t.Fatalf("keyed session: %d events; unkeyed session of its draw seed: %d", len(kev), len(pev))
			}
			var ks, ps payload.SessionStarted
			if err := json.Unmarshal(kev[0].Payload, &ks); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(pev[0].Payload, &ps); err != nil {
				t.Fatal(err)
			}
			if ks.Format != payload.DrawKeyFormat || !bytes.Equal(ks.DrawKey, key) || ks.Seed != seed {
				t.Fatalf("keyed session.started: format %d, key %x, seed %d; want format %d, the key, seed %d", ks.Format, ks.DrawKey, ks.Seed, payload.DrawKeyFormat, seed)
			}
			if ps.Format != payload.DrawKeyFormat-1 || ps.DrawKey != nil {
				t.Fatalf("unkeyed session.started: format %d, key %x; want format %d and none", ps.Format, ps.DrawKey, payload.DrawKeyFormat-1)
			}
			ka, _ := json.Marshal(ks.Arrivals)
			pa, _ := json.Marshal(ps.Arrivals)
			if !bytes.Equal(ka, pa) {
				t.Fatalf("first arrivals differ: %s vs %s", ka, pa)
			}
			// session.ended's state hash covers the state's format, which
			// differs; the rest of every event is the same.
			for i := 1; i < len(kev); i++ {
				k, p := kev[i], pev[i]
				if k.Type == payload.EvSessionEnded && p.Type == k.Type {
					k.Payload, p.Payload = nil, nil
				}
				if k.Seq != p.Seq || k.Time != p.Time || k.Type != p.Type || k.Actor != p.Actor || !bytes.Equal(k.Payload, p.Payload) {
					t.Fatalf("event %d differs: keyed %s %s %s; unkeyed of the draw seed %s %s %s", k.Seq, k.Type, k.Actor, k.Payload, p.Type, p.Actor, p.Payload)
				}
			}
			// Another key draws another session.
			_, other := playKeyed(t, world+".yaml", src, agent, seed, payload.NewDrawKey([]byte("another"), seed), nil)
			same := len(other) == len(kev)
			for i := 1; same && i < len(kev); i++ {
				same = bytes.Equal(other[i].Payload, kev[i].Payload)
			}
			if same {
				t.Fatal("two keys drew the same session")
			}
			// The keyed log replays to its state without the secret.
			back, err := sim.Rebuild(func(yield func(events.Event, error) bool) {
				for _, ev := range kev {
					if !yield(ev, nil) {
						return
					}
				}
			}, "s", sim.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if back.StateHash() != keyed.StateHash() || back.DrawSeed() != draws {
				t.Fatalf("rebuilt: state hash %s, draw seed %d; live: %s, %d", back.StateHash(), back.DrawSeed(), keyed.StateHash(), draws)
			}
		})
	}
}

// A draw key of the wrong length, or one given to an older log format, is
// refused before anything runs.
func TestDrawKeyRefused(t *testing.T) {
	src, err := worlds.Source("meetings")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("meetings.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	key := payload.NewDrawKey([]byte("s"), 1)
	for _, cfg := range []sim.Config{
		{World: w, Source: src, Seed: 1, DrawKey: key[:16]},
		{World: w, Source: src, Seed: 1, DrawKey: key, LogFormat: payload.DrawKeyFormat - 1},
	} {
		if _, err := sim.New(cfg); err == nil {
			t.Errorf("key of %d bytes, format %d: accepted", len(cfg.DrawKey), cfg.LogFormat)
		}
	}
}
