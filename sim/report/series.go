package report

import "sort"

// Point is one point of a chart: Y at X, with an optional error bar of
// ±Err (drawn when Err > 0).
type Point struct {
	X, Y, Err float64
}

// Series is a named line of a chart.
type Series struct {
	Name   string
	Points []Point
}

// step records a step function: the value changes to V at time T and stays
// until the next change. Changes at the same time keep only the last.
type step struct {
	pts []Point
}

func (s *step) set(t int64, v float64) {
	x := float64(t)
	if n := len(s.pts); n > 0 {
		last := &s.pts[n-1]
		if last.X == x {
			last.Y = v
			if n > 1 && s.pts[n-2].Y == v {
				s.pts = s.pts[:n-1]
			}
			return
		}
		if last.Y == v {
			return
		}
	}
	s.pts = append(s.pts, Point{X: x, Y: v})
}

// Downsample bounds a series sorted by X to at most 2*buckets+2 points: the
// X range is cut into buckets of equal width and each bucket keeps its
// lowest and its highest point (in X order), so spikes survive; the first
// and the last point always stay. A series that is already small enough is
// returned as it is. buckets < 1 means 1.
func Downsample(pts []Point, buckets int) []Point {
	if buckets < 1 {
		buckets = 1
	}
	if len(pts) <= 2*buckets+2 {
		return pts
	}
	lo, hi := pts[0].X, pts[len(pts)-1].X
	width := (hi - lo) / float64(buckets)
	out := make([]Point, 0, 2*buckets+2)
	out = append(out, pts[0])
	i := 1
	last := len(pts) - 1
	for b := 0; b < buckets && i < last; b++ {
		end := lo + width*float64(b+1)
		if b == buckets-1 {
			end = hi
		}
		minI, maxI := -1, -1
		for ; i < last && (pts[i].X < end || b == buckets-1); i++ {
			if minI < 0 || pts[i].Y < pts[minI].Y {
				minI = i
			}
			if maxI < 0 || pts[i].Y > pts[maxI].Y {
				maxI = i
			}
		}
		switch {
		case minI < 0:
		case minI == maxI:
			out = append(out, pts[minI])
		case minI < maxI:
			out = append(out, pts[minI], pts[maxI])
		default:
			out = append(out, pts[maxI], pts[minI])
		}
	}
	out = append(out, pts[last])
	sort.SliceStable(out, func(a, b int) bool { return out[a].X < out[b].X })
	return out
}
