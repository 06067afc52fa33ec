package fortioresult

import (
	"math"
	"slices"
	"strconv"
)

// bucketValues are fortio's histogram bucket boundaries in units of the
// histogram's divider (the resolution), copied from fortio stats.go
// (histogramBucketValues, unexported). A bucket boundary in seconds is
// Offset + Resolution*v for one of these v.
var bucketValues = []float64{
	0, 1, 2, 3, 4, 5, 6,
	7, 8, 9, 10, 11,
	12, 14, 16, 18, 20,
	25, 30, 35, 40, 45, 50,
	60, 70, 80, 90, 100,
	120, 140, 160, 180, 200,
	250, 300, 350, 400, 450, 500,
	600, 700, 800, 900, 1000,
	2000, 3000, 4000, 5000, 7500, 10000,
	20000, 30000, 40000, 50000, 75000, 100000,
}

// ResolutionSource says where Summary.ResolutionSeconds comes from.
type ResolutionSource string

const (
	// ResolutionRecorded is the file's own Resolution field, confirmed by
	// (or at least not contradicted by) the bucket boundaries.
	ResolutionRecorded ResolutionSource = "recorded"
	// ResolutionInferred is the one divider that fits all bucket boundaries.
	ResolutionInferred ResolutionSource = "inferred"
	// ResolutionUnknown means neither of the above was possible.
	ResolutionUnknown ResolutionSource = "unknown"
)

// DurationResolution returns the resolution (bucket divider, in seconds) of
// r.DurationHistogram and where it comes from.
//
// WHY both sources: fortio records Resolution only for the connection-time
// histogram (HTTPOptions); it copies the runner's resolution there unless the
// user set it apart, and older fortio versions do not write it at all. The
// bucket boundaries of DurationHistogram are the ground truth, so the
// recorded value is used only when the boundaries agree with it, and
// otherwise the divider is inferred from the boundaries.
func (r *Result) DurationResolution() (float64, ResolutionSource) {
	h := r.DurationHistogram
	offset := r.Offset.Seconds()
	if h == nil {
		return 0, ResolutionUnknown
	}
	g := gridOf(h, offset)
	// With a single bucket there is no boundary to check the recorded value
	// against; it is then taken as recorded (it cannot be contradicted).
	if r.Resolution > 0 && (len(g.bounds) == 0 || fits(r.Resolution, g)) {
		return r.Resolution, ResolutionRecorded
	}
	if d, ok := inferDivider(g); ok {
		return d, ResolutionInferred
	}
	return 0, ResolutionUnknown
}

// grid is what a histogram's buckets say about its divider, offset removed.
type grid struct {
	// bounds are the boundaries that are grid points: every Start but the
	// first (which is Min) and every End but the last (which is Max).
	bounds []float64
	// pairs are the (Start, End) of inner buckets: consecutive grid values.
	pairs [][2]float64
	// min, firstEnd, lastStart, max bound the first and last buckets.
	min, firstEnd, lastStart, max float64
}

func gridOf(h *Histogram, offset float64) grid {
	var g grid
	n := len(h.Data)
	if n < 2 {
		return g
	}
	for i, b := range h.Data {
		if i > 0 {
			g.bounds = append(g.bounds, b.Start-offset)
		}
		if i < n-1 {
			g.bounds = append(g.bounds, b.End-offset)
		}
		if i > 0 && i < n-1 {
			g.pairs = append(g.pairs, [2]float64{b.Start - offset, b.End - offset})
		}
	}
	g.min, g.firstEnd = h.Data[0].Start-offset, h.Data[0].End-offset
	g.lastStart, g.max = h.Data[n-1].Start-offset, h.Data[n-1].End-offset
	return g
}

// bucketIndex returns the index of x in bucketValues if x is (within float
// rounding) one of them.
func bucketIndex(x float64) (int, bool) {
	r := math.Round(x)
	if math.Abs(x-r) > 1e-6*math.Max(1, math.Abs(x)) {
		return 0, false
	}
	i, found := slices.BinarySearch(bucketValues, r)
	return i, found
}

// fits reports whether divider d explains the histogram as fortio built it:
// every boundary on fortio's grid, every inner bucket between two consecutive
// grid values, Min inside the first bucket's grid interval and Max inside the
// last one's (unless it is the overflow bucket above the last grid value).
func fits(d float64, g grid) bool {
	if len(g.bounds) == 0 {
		return false // nothing to confirm or refute: do not claim a resolution
	}
	for _, b := range g.bounds {
		if _, ok := bucketIndex(b / d); !ok {
			return false
		}
	}
	for _, p := range g.pairs {
		i, ok1 := bucketIndex(p[0] / d)
		j, ok2 := bucketIndex(p[1] / d)
		if !ok1 || !ok2 || j != i+1 {
			return false
		}
	}
	const slack = 1e-9 // relative: fortio's own epsilon at boundaries
	// First bucket [Min, End]: its values are in (grid[i-1], grid[i]].
	if i, ok := bucketIndex(g.firstEnd / d); ok && i > 0 && g.min <= d*bucketValues[i-1]*(1-slack) {
		return false
	}
	// Last bucket [Start, Max]: its values are in (grid[j], grid[j+1]].
	if j, ok := bucketIndex(g.lastStart / d); ok && j+1 < len(bucketValues) && g.max > d*bucketValues[j+1]*(1+slack) {
		return false
	}
	return true
}

// inferDivider finds the dividers under which all boundaries fit fortio's
// grid. The smallest positive boundary is d*v for some bucket value v, so the
// candidates are that boundary divided by each v. When several candidates fit
// (few buckets can be ambiguous, e.g. [4,5] and [20,25] have the same ratio),
// a power of ten wins if it is the only one, since fortio resolutions are
// chosen as such in practice (0.001 default, 0.0001, ...); otherwise the
// result is unknown rather than a guess.
func inferDivider(g grid) (float64, bool) {
	smallest := math.Inf(1)
	for _, b := range g.bounds {
		if b > 0 && b < smallest {
			smallest = b
		}
	}
	if math.IsInf(smallest, 1) {
		return 0, false
	}
	var fitting []float64
	for _, v := range bucketValues[1:] {
		d := smallest / v
		if fits(d, g) {
			fitting = append(fitting, d)
		}
	}
	switch len(fitting) {
	case 0:
		return 0, false
	case 1:
		return tidy(fitting[0]), true
	}
	var tens []float64
	for _, d := range fitting {
		if isPowerOfTen(d) {
			tens = append(tens, d)
		}
	}
	if len(tens) == 1 {
		return roundPowerOfTen(tens[0]), true
	}
	return 0, false
}

func isPowerOfTen(d float64) bool {
	e := math.Log10(d)
	return math.Abs(e-math.Round(e)) < 1e-9
}

// tidy removes the float noise of the division (9.999999999e-05 -> 0.0001).
func tidy(d float64) float64 {
	if isPowerOfTen(d) {
		return roundPowerOfTen(d)
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(d, 'g', 12, 64), 64)
	return v
}

func roundPowerOfTen(d float64) float64 {
	return math.Pow(10, math.Round(math.Log10(d)))
}
