package analyze

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Aggregate averages diagnoses (of several seeds or loads) into one: Lost
// and every cause's hours and points are means over the sessions (a cause
// missing from a session counts 0 there), so aggregates of different
// numbers of sessions compare. The details are summed then averaged too.
// It returns nil for no diagnoses.
func Aggregate(ds []*Diagnosis) *Diagnosis {
	if len(ds) == 0 {
		return nil
	}
	agg := &Diagnosis{Causes: []Cause{}}
	hours, points := map[string]float64{}, map[string]float64{}
	detail := map[string]map[string]float64{}
	n := 0
	for _, d := range ds {
		k := max(d.Sessions, 1)
		n += k
		agg.Lost += d.Lost * float64(k)
		agg.Possible += d.Possible * float64(k)
		agg.Score += d.Score * float64(k)
		agg.Failed += d.Failed * k
		agg.Items += d.Items * k
		if agg.World == "" || agg.World == d.World {
			agg.World = d.World
		} else {
			agg.World = "several"
		}
		for _, c := range d.Causes {
			hours[c.Cause] += c.Hours * float64(k)
			points[c.Cause] += c.Points * float64(k)
			for _, p := range c.Detail {
				if detail[c.Cause] == nil {
					detail[c.Cause] = map[string]float64{}
				}
				detail[c.Cause][p.What] += p.Hours * float64(k)
			}
		}
	}
	f := float64(n)
	agg.Sessions = n
	agg.Lost, agg.Possible, agg.Score = round6(agg.Lost/f), round6(agg.Possible/f), round6(agg.Score/f)
	agg.Failed, agg.Items = (agg.Failed+n/2)/n, (agg.Items+n/2)/n
	for _, c := range slices.Sorted(maps.Keys(hours)) {
		row := Cause{Cause: c, Hours: round6(hours[c] / f), Points: round6(points[c] / f)}
		for _, k := range slices.Sorted(maps.Keys(detail[c])) {
			row.Detail = append(row.Detail, Part{What: k, Hours: round6(detail[c][k] / f)})
		}
		slices.SortStableFunc(row.Detail, func(a, b Part) int {
			switch {
			case a.Hours > b.Hours:
				return -1
			case a.Hours < b.Hours:
				return 1
			}
			return 0
		})
		agg.Causes = append(agg.Causes, row)
	}
	sortCauses(agg.Causes)
	return agg
}

// Share is cause's part of the lost points (0 if nothing was lost).
func (d *Diagnosis) Share(cause string) float64 {
	if d.Lost <= 0 {
		return 0
	}
	for _, c := range d.Causes {
		if c.Cause == cause {
			return c.Points / d.Lost
		}
	}
	return 0
}

// First is the cause with the most lost points ("" if none).
func (d *Diagnosis) First() string {
	if len(d.Causes) == 0 {
		return ""
	}
	return d.Causes[0].Cause
}

// maxDetail is how many detail parts WriteText lists per cause.
const maxDetail = 4

// WriteText writes the diagnosis as corpsim diagnose prints it: a heading,
// then a table of causes, most points first, with their hours, share of
// the lost value and who or what they were (a detail column).
func (d *Diagnosis) WriteText(w io.Writer, title string) {
	fmt.Fprintln(w, title)
	of := ""
	if d.Sessions > 1 {
		of = fmt.Sprintf(" (mean of %d sessions)", d.Sessions)
	}
	fmt.Fprintf(w, "lost %s of %s possible points%s: team score %s; %d of %d tasks and tickets lost value\n",
		num(d.Lost), num(d.Possible), of, num(d.Score), d.Failed, d.Items)
	if len(d.Causes) == 0 {
		fmt.Fprintln(w, "nothing was lost")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CAUSE\tPOINTS\tSHARE\tHOURS\tWHO OR WHAT")
	var sumP, sumH float64
	for _, c := range d.Causes {
		sumP += c.Points
		sumH += c.Hours
		share := "-"
		if d.Lost > 0 {
			share = strconv.FormatFloat(100*c.Points/d.Lost, 'f', 1, 64) + "%"
		}
		var det []string
		for i, p := range c.Detail {
			if i == maxDetail {
				det = append(det, fmt.Sprintf("%d more", len(c.Detail)-maxDetail))
				break
			}
			det = append(det, fmt.Sprintf("%s %sh", p.What, num1(p.Hours)))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Cause, num(c.Points), share, num1(c.Hours), strings.Join(det, "; "))
	}
	fmt.Fprintf(tw, "  total\t%s\t\t%s\t\n", num(sumP), num1(sumH))
	tw.Flush()
}

func num(x float64) string  { return strconv.FormatFloat(x, 'f', 2, 64) }
func num1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
