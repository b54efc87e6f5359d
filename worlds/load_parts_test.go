package worlds

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// loadWhole is Load reading the file whole, never in parts.
func loadWhole(name string, src []byte) (*World, error) {
	return load(name, src, math.MaxInt, Limits{Nodes: math.MaxInt}, nil)
}

// mustSameLoad fails unless loading src in parts gives what loading it
// whole does. loadInParts either gives up (Load then reads the file whole,
// so its errors are the whole reading's by construction) or returns a
// world: then reading whole must succeed with the same world. It reports
// whether the parts were used.
func mustSameLoad(tb testing.TB, src []byte) bool {
	tb.Helper()
	got, errs := loadInParts("w.yaml", src, 1, Limits{}.WithDefaults(), 0, nil)
	if errs != nil {
		tb.Fatalf("in parts: over a limit: %v", errs)
	}
	if got == nil {
		return false
	}
	want, err := loadWhole("w.yaml", src)
	if err != nil {
		tb.Fatalf("in parts: got a world, whole: error\n%v\nfile:\n%s", err, src)
	}
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("in parts: got world\n%+v\nwant\n%+v\nfile:\n%s", got, want, src)
	}
	return true
}

// partsSources are valid world files of several shapes: the shipped worlds,
// generated ones, and generated ones rewritten in other styles the parts
// reader cuts (entries at the key's own indentation, comments and blank
// lines between entries, block-style entries, multi-line plain scalars).
func partsSources(tb testing.TB) map[string][]byte {
	srcs := map[string][]byte{"tiny": []byte(tinyWorld)}
	for _, n := range Names() {
		src, err := Source(n)
		if err != nil {
			tb.Fatal(err)
		}
		srcs[n] = src
	}
	gen := Generate(GenOptions{Seed: 3, Teams: 3, Members: 20, Projects: 4, Tasks: 30, Chains: 3, Stagger: 1, Tickets: 4})
	srcs["generated"] = gen
	flat := bytes.ReplaceAll(gen, []byte("\n  - {id: m"), []byte("\n- {id: m"))
	srcs["generated-flat"] = bytes.ReplaceAll(flat, []byte("\n  - {id: finance, role"), []byte("\n- {id: finance, role"))
	srcs["generated-comments"] = bytes.ReplaceAll(gen, []byte("\n      - {id: p2-t"), []byte("\n\n# a comment\n      # another\n      - {id: p2-t"))
	// p1-t1 (no deps, so no commas inside brackets) in block style, with a
	// title on two lines.
	lines := strings.SplitAfter(string(gen), "\n")
	for i, l := range lines {
		if body, ok := strings.CutPrefix(l, "      - {id: p1-t1, "); ok {
			fields := strings.Split(strings.TrimSuffix(body, "}\n"), ", ")
			lines[i] = "      - id: p1-t1\n        title: A title\n          written on two lines\n        " + strings.Join(fields, "\n        ") + "\n"
		}
	}
	srcs["generated-block"] = []byte(strings.Join(lines, ""))
	// A description on several lines, one of which looks like the key of a
	// list, and entries: they are the description's text, not a list.
	srcs["generated-quoted"] = bytes.Replace(gen, []byte("\ndescription: "), []byte(`
description: "A world
roles:
  - {id: auditor}
  - {id: intern}
that is only text"
x-description: `), 1)
	srcs["generated-quoted"] = bytes.Replace(srcs["generated-quoted"], []byte("\nx-description: "), []byte("\n# "), 1)
	return srcs
}

// Loading a file in parts gives the world loading it whole gives, and the
// parts reader takes every generated file.
func TestLoadInPartsEqualsWhole(t *testing.T) {
	for name, src := range partsSources(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := loadWhole("w.yaml", src); err != nil {
				t.Fatal(err)
			}
			used := mustSameLoad(t, src)
			if strings.HasPrefix(name, "generated") && name != "generated-quoted" && !used {
				t.Errorf("the parts reader did not take %s", name)
			}
		})
	}
}

// Whatever is wrong with a file, reading it in parts reports what reading
// it whole does, with the same lines, columns and paths: random edits
// (lines dropped, repeated, moved, re-indented; characters changed; YAML
// that reaches across lines) of valid files.
func TestLoadInPartsMutations(t *testing.T) {
	srcs := partsSources(t)
	names := slices.Sorted(maps.Keys(srcs))
	snippets := []string{"- ", "  - {id: x}", "'", "\"", "&a ", "*a", "|", ">", "{", "}", "[", "]", "#", ": ", "---", "<<: ", "\t",
		"tasks:", "members:", "  ", "projects:", "- {id: m00001, role: lead, team: team1}", "x: 1", "? ", "!!str "}
	used := 0
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		name := names[r.IntN(len(names))]
		lines := strings.SplitAfter(string(srcs[name]), "\n")
		for range 1 + r.IntN(3) {
			i := r.IntN(len(lines))
			switch r.IntN(6) {
			case 0:
				lines = append(lines[:i], lines[i+1:]...)
			case 1:
				lines = append(lines[:i+1], lines[i:]...)
			case 2:
				j := r.IntN(len(lines))
				lines[i], lines[j] = lines[j], lines[i]
			case 3:
				lines[i] = strings.Repeat(" ", r.IntN(3)) + strings.TrimLeft(lines[i], " ")
			case 4:
				if n := len(lines[i]); n > 0 {
					k := r.IntN(n)
					lines[i] = lines[i][:k] + snippets[r.IntN(len(snippets))] + lines[i][k:]
				}
			case 5:
				lines = append(lines[:i], append([]string{snippets[r.IntN(len(snippets))] + "\n"}, lines[i:]...)...)
			}
		}
		src := []byte(strings.Join(lines, ""))
		t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
			if mustSameLoad(t, src) {
				used++
			}
		})
	}
	t.Logf("the parts reader took %d of the edited files", used)
	if used == 0 {
		t.Error("the parts reader took none of the edited files")
	}
}

// FuzzLoadInParts checks, on any input, that reading in parts gives what
// reading whole does.
func FuzzLoadInParts(f *testing.F) {
	for _, src := range partsSources(f) {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		mustSameLoad(t, src)
	})
}
