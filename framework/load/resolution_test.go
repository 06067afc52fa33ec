package load

import (
	"math"
	"testing"
)

// fortio's bucket edges in units of the resolution (fortio stats.go
// histogramBucketValues), to check ResolutionFor against the rule it
// relies on: the bucket holding a value is at most a third of it.
var fortioEdges = []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50,
	60, 70, 80, 90, 100, 120, 140, 160, 180, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 900, 1000,
	2000, 3000, 4000, 5000, 7500, 10000, 20000, 30000, 40000, 50000, 75000, 100000}

func bucketShare(v, d float64) float64 {
	u := v / d
	for i := 1; i < len(fortioEdges); i++ {
		if u < fortioEdges[i] {
			return (fortioEdges[i] - fortioEdges[i-1]) / u
		}
	}
	return math.Inf(1)
}

func TestResolutionForResolvesThePercentiles(t *testing.T) {
	for _, c := range []struct {
		name     string
		lo, hi   float64
		want     float64
		resolved bool
	}{
		// GUIDE's EKS none/sidecar percentiles: the finest resolution.
		{"GUIDE none", 0.00082, 0.004, 0.00001, true},
		// The local sidecar run's steady load: P50 10.67 ms, P99.9 195 ms.
		{"local sidecar", 0.01067, 0.1948, 0.0005, true},
		// A spread wider than fortio's fine range leaves the median coarse.
		{"median and tail 1000x apart", 0.0001, 0.1, 0.0005, false},
	} {
		d, ok, err := ResolutionFor(c.lo, c.hi)
		if err != nil || d != c.want || ok != c.resolved {
			t.Errorf("%s: ResolutionFor(%g, %g) = %g, %v, %v; want %g, %v", c.name, c.lo, c.hi, d, ok, err, c.want, c.resolved)
			continue
		}
		// The rule itself, on fortio's edges: a tail up to twice the
		// calibration's and the median both sit in narrow buckets.
		for _, v := range []float64{c.hi, 2 * c.hi * 0.99} {
			if s := bucketShare(v, d); s > 1.0/3 {
				t.Errorf("%s: %g s at %g s resolution is in a bucket %.0f%% of it", c.name, v, d, 100*s)
			}
		}
		if s := bucketShare(c.lo, d); c.resolved && s > 1.0/3 {
			t.Errorf("%s: low %g s at %g is in a bucket %.0f%% of it", c.name, c.lo, d, 100*s)
		}
	}
	// Negative control: 10 µs for the local sidecar's percentiles, the
	// fixed resolution before calibration, puts them in wide buckets.
	if s := bucketShare(0.01067, LatencyResolution); s <= 1.0/3 {
		t.Errorf("10.67 ms at 10 µs: bucket share %.2f, expected the 1000d-2000d bucket", s)
	}
	for _, bad := range [][2]float64{{0, 1}, {0.2, 0.1}, {math.NaN(), 1}} {
		if _, _, err := ResolutionFor(bad[0], bad[1]); err == nil {
			t.Errorf("ResolutionFor(%g, %g) accepted", bad[0], bad[1])
		}
	}
}
