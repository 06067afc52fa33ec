package load

import "fmt"

// fortio's histogram puts its bucket edges at these multiples of the
// resolution d (fortio stats.go histogramBucketValues): 1 apart up to 12,
// then 2, 5, 10, 20, 50 and 100 apart up to 1000, then 1000 and wider.
// Between 3d and 1000d no bucket is wider than a third of the values in it;
// above 1000d the next edge is 2000d.
const (
	// ResolvedLow and ResolvedHigh bound, in units of the resolution, the
	// values fortio's buckets resolve to within a third.
	ResolvedLow  = 3
	ResolvedHigh = 1000
	// resolutionHeadroom keeps the calibrated highest percentile under
	// ResolvedHigh with room for the measured run's tail to be longer
	// than the calibration's.
	resolutionHeadroom = 0.5
)

// Resolutions are the histogram resolutions (s) ResolutionFor chooses
// from, finest first: LatencyResolution up to DefaultResolution's tenfold.
var Resolutions = []float64{0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001}

// ResolutionFor picks the finest resolution at which fortio resolves a
// load whose percentiles span lo to hi seconds (a short calibration run's
// P50 and P99.9): hi must stay below half of ResolvedHigh resolutions, so
// the measured run's slowest percentile is not in fortio's 1000-2000 bucket.
// resolved says whether lo is still at least ResolvedLow resolutions at the
// choice (false when the spread of the percentiles is wider than fortio's
// fine range: lo is then the one left coarse, since a tail of 1,000x its
// median belongs to the overflow anyway).
//
// On GUIDE's EKS numbers (P50 0.8 ms, P99.9 a few ms) this is
// LatencyResolution; on a slow shared runner where a sidecar's P50 is 10 ms
// and its P99.9 200 ms it is 0.5 ms, where 10 µs would put every percentile
// in a bucket as wide as the value (the 1000d-2000d bucket and up).
func ResolutionFor(lo, hi float64) (d float64, resolved bool, err error) {
	if !(lo > 0) || !(hi >= lo) {
		return 0, false, fmt.Errorf("load: resolution for percentiles %g-%g s: want 0 < low <= high", lo, hi)
	}
	d = Resolutions[len(Resolutions)-1]
	for _, r := range Resolutions {
		if hi < ResolvedHigh*resolutionHeadroom*r {
			d = r
			break
		}
	}
	return d, lo >= ResolvedLow*d, nil
}
