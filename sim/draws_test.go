package sim_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// A session keyed with an operator's secret draws with its key: the same
// key and seed make the same session, event for event; another key, or
// none, another. Its hidden truth is what the world draws with the
// engine's keyed draws (each meeting's rules, every record), the key never
// reaches an observation, the log records it (format 8), and the keyed
// log replays to its state without the secret. That no draw is made
// another way is TestDrawsMadeInOnePlace's.
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
			var buf bytes.Buffer
			looks := 0
			seen := func(o org.Observation) {
				buf.Reset()
				if err := json.NewEncoder(&buf).Encode(o); err != nil {
					t.Fatal(err)
				}
				looks++
				for _, s := range []string{base64.StdEncoding.EncodeToString(key), hex.EncodeToString(key)} {
					if bytes.Contains(buf.Bytes(), []byte(s)) {
						t.Fatalf("an observation of %s shows the draw key", o.Member)
					}
				}
			}
			keyed, kev := playKeyed(t, world+".yaml", src, agent, seed, key, seen)
			if looks == 0 {
				t.Fatal("no observation was made")
			}
			_, again := playKeyed(t, world+".yaml", src, agent, seed, key, nil)
			equalLogs(t, kev, again)
			_, plain := playKeyed(t, world+".yaml", src, agent, seed, nil, nil)
			_, other := playKeyed(t, world+".yaml", src, agent, seed, payload.NewDrawKey([]byte("another"), seed), nil)
			for name, evs := range map[string][]events.Event{"unkeyed": plain, "another key's": other} { // order: each comparison is its own
				same := len(evs) == len(kev)
				for i := 1; same && i < len(kev); i++ {
					same = bytes.Equal(evs[i].Payload, kev[i].Payload)
				}
				if same {
					t.Errorf("the keyed session is the %s", name)
				}
			}
			var ks, ps payload.SessionStarted
			if err := json.Unmarshal(kev[0].Payload, &ks); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(plain[0].Payload, &ps); err != nil {
				t.Fatal(err)
			}
			if ks.Format != payload.LogFormat || !bytes.Equal(ks.DrawKey, key) || ks.Seed != seed {
				t.Fatalf("keyed session.started: format %d, key %x, seed %d; want format %d, the key, seed %d", ks.Format, ks.DrawKey, ks.Seed, payload.LogFormat, seed)
			}
			if ps.Format != payload.LogFormat || ps.DrawKey != nil {
				t.Fatalf("unkeyed session.started: format %d, key %x; want format %d and none", ps.Format, ps.DrawKey, payload.LogFormat)
			}
			// The hidden truth is the keyed draws'.
			w, d := keyed.State().World, keyed.Draws()
			if !d.Keyed() || d.Seed() != seed {
				t.Fatalf("engine's draws: keyed %v, seed %d", d.Keyed(), d.Seed())
			}
			st := org.New(w)
			if err := st.Apply(kev[0]); err != nil {
				t.Fatal(err)
			}
			for _, r := range w.SeedRecords(d) {
				if got := st.Record(r.Type, r.ID); got == nil || !sameFields(got.Fields, r.Fields) {
					t.Fatalf("record %s/%s at the start: %v; the keyed draws make %v", r.Type, r.ID, got, r.Fields)
				}
			}
			rules := 0
			for _, ev := range kev {
				if ev.Type != payload.EvCaseOpened {
					continue
				}
				var p payload.CaseOpened
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					t.Fatal(err)
				}
				for _, m := range p.Meetings {
					var want []payload.MeetingRule
					for _, a := range m.Attendees {
						if c := w.Availability.Constraint(d, a); c != nil {
							want = append(want, c.Rule)
						}
					}
					got, _ := json.Marshal(m.Rules)
					exp, _ := json.Marshal(want)
					if !bytes.Equal(got, exp) {
						t.Fatalf("case %s: meeting rules %s; the keyed draws make %s", p.Case, got, exp)
					}
					rules += len(want)
				}
			}
			if world == "meetings" && rules == 0 {
				t.Fatal("no meeting rule was checked")
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
			if back.StateHash() != keyed.StateHash() || !back.Draws().Keyed() {
				t.Fatalf("rebuilt: state hash %s, keyed %v; live: %s", back.StateHash(), back.Draws().Keyed(), keyed.StateHash())
			}
		})
	}
}

// sameFields compares a record's fields as JSON.
func sameFields(a payload.Attrs, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Every draw is a worlds.Draws' (the engine's, its truth's, the state's
// records', the oracle's), and Draws are made in these places only, each
// from a seed of the session and its draw key: a draw that forgot the key (a
// NewDraws(seed, nil) elsewhere) would draw what the public seed gives
// away.
func TestDrawsMadeInOnePlace(t *testing.T) {
	want := map[string]string{
		"sim/engine.go":    "worlds.NewDraws(cfg.Seed, cfg.DrawKey); worlds.NewDraws(*cfg.RootSeed, cfg.DrawKey)",
		"org/apply.go":     "worlds.NewDraws(p.Seed, p.DrawKey)",
		"agents/agents.go": "worlds.NewDraws(o.Seed, nil)", // the oracle told no truth: an unkeyed session's
	}
	root := filepath.Join("..")
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			if name == "NewDraws" {
				text := string(src[fset.Position(call.Pos()).Offset:fset.Position(call.End()).Offset])
				if prev, ok := found[rel]; ok {
					text = prev + "; " + text
				}
				found[rel] = text
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, text := range found { // order: each call is checked on its own
		if want[file] != text {
			t.Errorf("%s makes draws with %s; draws are made only by %v", file, text, want)
		}
	}
	if len(found) != len(want) {
		t.Errorf("draws made in %v; want %v", found, want)
	}
}

// A draw key of the wrong length, or one given to an older log format, is
// refused before anything runs.
func TestDrawKeyRefused(t *testing.T) {
	src := simtest.Source(t, "meetings")
	w, err := worlds.Shipped("meetings")
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
