package method

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// HYBRID's method lesson, as a check the suite runs on its own loads:
// fortio reports a percentile by interpolating inside the histogram bucket
// that holds it, so a percentile whose bucket is wide next to its value is
// a position in that bucket, not a measurement (HYBRID: 0.5, 0.9 and 0.99 ms
// from a 1 ms bucket holding every sub-millisecond request). fortio's bucket
// edges (fortio stats histogramBucketValues: 1..11, then by 2, 5, 10, x10)
// are never more than 25% of the value apart between 10 and 1,000
// resolutions; a percentile whose bucket is wider than a third of its value
// lies outside that designed range (the resolution is too coarse for it, or
// it is in the top buckets, 1,000 resolutions and up), and its value is the
// interpolation, not the data.
const maxBucketShare = 1.0 / 3

// bucketPositions lists the percentiles of h that are bucket positions,
// as "P50 0.5 ms in [0, 1) ms". An empty list means every percentile is
// resolved. A histogram without percentiles or buckets is an error.
func bucketPositions(h *fortioresult.Histogram) ([]string, error) {
	if h == nil || len(h.Percentiles) == 0 || len(h.Data) == 0 {
		return nil, fmt.Errorf("the run's histogram has no percentiles or no buckets to check")
	}
	var out []string
	for _, p := range h.Percentiles {
		found := false
		for _, b := range h.Data {
			if p.Value < b.Start || p.Value > b.End {
				continue
			}
			found = true
			if w := b.End - b.Start; w > p.Value*maxBucketShare {
				out = append(out, fmt.Sprintf("P%g %.4g ms in [%.4g, %.4g) ms", p.Percentile, p.Value*1e3, b.Start*1e3, b.End*1e3))
			}
			break
		}
		if !found {
			return nil, fmt.Errorf("P%g %g s lies in no bucket of the histogram", p.Percentile, p.Value)
		}
	}
	return out, nil
}

// percentilesResolved judges a load's percentiles: verified when none is a
// bucket position.
func percentilesResolved(run *load.Run) (verdict.Measurement, error) {
	res, err := fortioresult.Parse(run.Name, run.Raw)
	if err != nil {
		return verdict.Measurement{}, err
	}
	pos, err := bucketPositions(res.DurationHistogram)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("%s: %w", run.Name, err)
	}
	got := verdict.Measurement{Outcome: "verified", Extra: map[string]float64{"bucket_positions": float64(len(pos)), "resolution_s": run.Spec.Normalized().Resolution},
		Detail: fmt.Sprintf("%d percentiles, none on a bucket position (resolution %g s)", len(res.DurationHistogram.Percentiles), run.Spec.Normalized().Resolution)}
	if len(pos) > 0 {
		got.Outcome = "not verified"
		got.Detail = "bucket positions: " + strings.Join(pos, "; ")
	}
	return got, nil
}

// steadyPercentilesResolved checks the mode's shared T5 load.
func steadyPercentilesResolved(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	run, err := steps.SteadyLoad(ctx, r, r.Mode)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return percentilesResolved(run)
}
