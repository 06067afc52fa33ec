package fortioresult

import (
	"testing"

	"fortio.org/fortio/stats"
)

// These unit tests use hand-built bucket lists: they test the pure inference
// logic on ambiguous shapes a short real run rarely produces.
func hist(buckets ...[2]float64) *Histogram {
	h := &Histogram{Count: int64(len(buckets))}
	for _, b := range buckets {
		h.Data = append(h.Data, stats.Bucket{Interval: stats.Interval{Start: b[0], End: b[1]}, Count: 1})
	}
	return h
}

func TestInferDivider(t *testing.T) {
	cases := []struct {
		name string
		h    *Histogram
		want float64
		src  ResolutionSource
	}{
		// [4,5,6]x0.0001 is also [20,25,30]x0.00002: the power of ten wins.
		{"power of ten breaks a tie", hist([2]float64{0.00037, 0.0004}, [2]float64{0.0004, 0.0005}, [2]float64{0.0005, 0.0006}, [2]float64{0.0006, 0.00061}), 0.0001, ResolutionInferred},
		// Same boundaries, but Min 0.00031 is below 18x0.00002 = 0.00036, so
		// only 0.0001 puts Min inside its first bucket.
		{"min rules out a divider", hist([2]float64{0.00031, 0.0004}, [2]float64{0.0004, 0.0005}, [2]float64{0.0005, 0.0006}, [2]float64{0.0006, 0.00061}), 0.0001, ResolutionInferred},
		// Last bucket starts at 5x0.0001 so ends by 6x0.0001; Max 0.00065 is
		// beyond it. What still fits is the coarse tail of the grid (4000,5000
		// x1e-7 and 40000,50000 x1e-8), two powers of ten: unknown, not a guess.
		{"max outside its bucket", hist([2]float64{0.00031, 0.0004}, [2]float64{0.0004, 0.0005}, [2]float64{0.0005, 0.00065}), 0, ResolutionUnknown},
		// [12,14]x0.0001 or [120,140]x0.00001: two powers of ten, unknown.
		{"two powers of ten", hist([2]float64{0.00115, 0.0012}, [2]float64{0.0012, 0.0014}, [2]float64{0.0014, 0.00141}), 0, ResolutionUnknown},
		// [4,5]x0.0002 or [20,25]x0.00004: no power of ten, unknown.
		{"no power of ten", hist([2]float64{0.0007, 0.0008}, [2]float64{0.0008, 0.001}, [2]float64{0.001, 0.0011}), 0, ResolutionUnknown},
		{"one bucket", hist([2]float64{0.0002, 0.0009}), 0, ResolutionUnknown},
		// 0.00037 is on no grid whose other points are 0.0005 and 0.0006 as neighbours.
		{"off grid", hist([2]float64{0.0003, 0.00037}, [2]float64{0.00037, 0.0005}, [2]float64{0.0005, 0.0006}, [2]float64{0.0006, 0.00061}), 0, ResolutionUnknown},
	}
	for _, c := range cases {
		r := &Result{DurationHistogram: c.h}
		got, src := r.DurationResolution()
		if got != c.want || src != c.src {
			t.Errorf("%s: %v (%s), want %v (%s)", c.name, got, src, c.want, c.src)
		}
	}
}
