package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// histogramOf puts values into 0.1 ms buckets from 0 to 50 ms, as fortio's
// finest buckets would.
func histogramOf(xs []float64) []Bucket {
	const width, n = 1e-4, 500
	h := make([]Bucket, n)
	for i := range h {
		h[i] = Bucket{Low: float64(i) * width, High: float64(i+1) * width}
	}
	for _, x := range xs {
		i := min(n-1, max(0, int(x/width)))
		h[i].Count++
	}
	return h
}

// latencies draws n lognormal latencies with median med seconds.
func latencies(rng *rand.Rand, n int, med float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = med * math.Exp(0.4*rng.NormFloat64())
	}
	return xs
}

func TestHistogramQuantileKnownValues(t *testing.T) {
	// 100 values in [0,1), 100 in [1,2): the median is the edge between.
	h := []Bucket{{0, 1, 100}, {1, 2, 100}}
	est, ci, err := HistogramQuantile(h, 0.5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if est != 1 || ci.Low != 0 || ci.High != 2 {
		t.Fatalf("median %g %+v, want 1 in [0, 2]", est, ci)
	}
	// 1000 values spread evenly over 10 buckets: P50 at 5, the interval
	// (ranks 469..532) within the buckets [4,5) and [5,6).
	h = nil
	for i := 0; i < 10; i++ {
		h = append(h, Bucket{float64(i), float64(i + 1), 100})
	}
	est, ci, err = HistogramQuantile(h, 0.5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if est != 5 || ci.Low != 4 || ci.High != 6 {
		t.Fatalf("median %g %+v, want 5 in [4, 6]", est, ci)
	}
}

func TestHistogramQuantileRefusesBadInput(t *testing.T) {
	for name, c := range map[string]struct {
		h    []Bucket
		p, c float64
		want string
	}{
		"empty":          {[]Bucket{{0, 1, 0}}, 0.5, 0.95, "no values"},
		"p out":          {[]Bucket{{0, 1, 3}}, 1, 0.95, "not in (0,1)"},
		"unsorted":       {[]Bucket{{1, 2, 3}, {0, 1, 3}}, 0.5, 0.95, "sorted"},
		"negative":       {[]Bucket{{0, 1, -3}}, 0.5, 0.95, "count >= 0"},
		"bad confidence": {[]Bucket{{0, 1, 3}}, 0.5, 1.5, "confidence"},
	} {
		if _, _, err := HistogramQuantile(c.h, c.p, c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, c.want)
		}
	}
}

// The interval holds the true median at least 95% of the time for
// independent draws (the histogram's buckets only widen it).
func TestHistogramQuantileCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const sims, med = 1000, 3e-3
	missed := 0
	for range sims {
		_, ci, err := HistogramQuantile(histogramOf(latencies(rng, 3000, med)), 0.5, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if !ci.Contains(med) {
			missed++
		}
	}
	if rate := float64(missed) / sims; rate > 0.05 {
		t.Fatalf("missed the true median in %.1f%% of %d runs, want <= 5%%", 100*rate, sims)
	}
}

// Positive control: two runs of one distribution differ significantly at
// most 5% of the time. Negative control: a 0.5 ms shift of a 3 ms median
// (the size of a busy node's scheduling delay) is found nearly always.
func TestQuantileDifferenceControls(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const sims = 500
	same, shifted := 0, 0
	for range sims {
		a := histogramOf(latencies(rng, 3000, 3e-3))
		d, err := QuantileDifference(a, histogramOf(latencies(rng, 3000, 3e-3)), 0.5, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if d.Significant() {
			same++
		}
		d, err = QuantileDifference(a, histogramOf(latencies(rng, 3000, 3.5e-3)), 0.5, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if d.Significant() && d.Estimate > 0 {
			shifted++
		}
	}
	if rate := float64(same) / sims; rate > 0.05 {
		t.Errorf("identical distributions: a difference in %.1f%% of runs, want <= 5%%", 100*rate)
	}
	if rate := float64(shifted) / sims; rate < 0.9 {
		t.Errorf("a 0.5 ms shift found in %.1f%% of runs, want >= 90%%", 100*rate)
	}
}
