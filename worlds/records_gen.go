package worlds

import (
	"math"
	"slices"
	"strconv"
)

// This file draws a world's records for a session's seed: the records the
// file lists, those it generates, and the copies other systems keep of
// them, some stale and some duplicated. The draws are keyed by what they
// are for, so the same (world, seed) always gives the same records.

// SeedRecords returns every record of the world drawn by d, by system and
// type in file order, each type's records in id order of creation.
func (w *World) SeedRecords(d Draws) []Record {
	var out []Record
	byType := map[string][]int{} // type -> indexes in out
	add := func(r Record) {
		byType[r.Type] = append(byType[r.Type], len(out))
		out = append(out, r)
	}
	for si := range w.Systems {
		for ti := range w.Systems[si].Types {
			t := &w.Systems[si].Types[ti]
			if t.Copy != nil {
				continue
			}
			for _, r := range t.Records {
				add(Record{Type: t.ID, ID: r.ID, Fields: cloneFields(r.Fields)})
			}
			if t.Generate == nil {
				continue
			}
			for n := 1; n <= t.Generate.Count; n++ {
				id := t.Generate.ID(n)
				rec := Record{Type: t.ID, ID: id, Fields: map[string]any{}}
				for _, f := range t.Fields {
					rec.Fields[f.Name] = f.Zero()
				}
				for _, a := range t.Generate.Fields {
					key := "record/" + t.ID + "/" + id + "/" + a.Name
					switch a.Kind {
					case AttrAmount:
						rec.Fields[a.Name] = a.Amount.Sample(d.Unit(key+"/u"), -math.Log(1-d.Unit(key+"/e")))
					case AttrChoice:
						rec.Fields[a.Name] = pickChoice(a.Choices, d.Unit(key))
					case AttrText:
						vars := map[string]any{"case": id}
						for k, x := range rec.Fields { // order: each entry is copied on its own
							vars[k] = x
						}
						rec.Fields[a.Name] = a.Text.Render(vars)
					case AttrRecord:
						if ix := byType[a.Record]; len(ix) > 0 {
							rec.Fields[a.Name] = out[ix[int(d.Unit(key)*float64(len(ix)))]].ID
						}
					}
				}
				for _, a := range t.Generate.Fields {
					if f, ok := t.Field(a.Name); ok {
						if x, err := f.Normalize(rec.Fields[a.Name]); err == nil {
							rec.Fields[a.Name] = x
						}
					}
				}
				add(rec)
			}
		}
	}
	for si := range w.Systems {
		for ti := range w.Systems[si].Types {
			t := &w.Systems[si].Types[ti]
			if t.Copy == nil {
				continue
			}
			n := 0
			for _, oi := range byType[t.Copy.Of] {
				orig := out[oi]
				copies := 1
				if d.Unit("copy/"+t.ID+"/"+orig.ID+"/dup") < t.Copy.Duplicates {
					copies = 2
				}
				for k := range copies {
					n++
					rec := Record{Type: t.ID, ID: t.ID + "-" + strconv.Itoa(n), Fields: map[string]any{}}
					for _, f := range t.Fields {
						rec.Fields[f.Name] = f.Zero()
					}
					rec.Fields[t.Copy.Key] = orig.ID
					for _, name := range t.Copy.Fields {
						rec.Fields[name] = cloneValue(orig.Fields[name])
					}
					key := "copy/" + t.ID + "/" + orig.ID + "/" + strconv.Itoa(k)
					if len(t.Copy.Fields) > 0 && (k > 0 || d.Unit(key+"/stale") < t.Copy.Stale) {
						name := t.Copy.Fields[int(d.Unit(key+"/field")*float64(len(t.Copy.Fields)))]
						f, _ := t.Field(name)
						rec.Fields[name] = stale(f, rec.Fields[name], d.Unit(key+"/by"))
					}
					add(rec)
				}
			}
		}
	}
	return append(out, w.BusyBlocks(d)...) // members' calendars (meetings.go)
}

// stale is an out-of-date value of field f in place of x.
func stale(f *Field, x any, u float64) any {
	switch v := x.(type) {
	case int64:
		return v + max(1, int64(float64(v)*(0.1+0.4*u)))
	case bool:
		return !v
	case string:
		switch f.Type {
		case FieldEnum:
			if i := slices.Index(f.Values, v); i >= 0 && len(f.Values) > 1 {
				return f.Values[(i+1)%len(f.Values)]
			}
			return v
		case FieldDateTime, FieldReference:
			return v
		}
		return v + " (old)"
	case []string:
		if len(v) > 0 {
			return slices.Clone(v[:len(v)-1])
		}
	}
	return x
}

func pickChoice(cs []Choice, u float64) string {
	total := 0
	for _, c := range cs {
		total += c.Weight
	}
	x := int(u * float64(total))
	for _, c := range cs {
		if x < c.Weight {
			return c.Value
		}
		x -= c.Weight
	}
	return ""
}

func cloneFields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, x := range m { // order: each entry is copied on its own
		out[k] = cloneValue(x)
	}
	return out
}

func cloneValue(x any) any {
	if l, ok := x.([]string); ok {
		return slices.Clone(l)
	}
	return x
}
