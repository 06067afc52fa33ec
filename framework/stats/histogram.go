package stats

import (
	"fmt"
	"math"
)

// Bucket is one bucket of a latency histogram (fortio's): Count values in
// [Low, High), in seconds.
type Bucket struct {
	Low, High float64
	Count     int64
}

// HistogramQuantile is quantile p (in (0,1)) of the values a histogram
// holds, interpolated linearly inside its bucket (as fortio does), with a
// distribution-free interval at confidence: the order statistics whose
// ranks bound the quantile with that probability (the binomial's normal
// approximation, so n should be in the hundreds or more), widened to the
// edges of the buckets they fall in, since a histogram knows a value only
// to its bucket. The values are taken as independent draws; where they are
// not, the interval is too narrow, never too wide.
func HistogramQuantile(h []Bucket, p, confidence float64) (estimate float64, ci Interval, err error) {
	if !(p > 0 && p < 1) {
		return 0, Interval{}, fmt.Errorf("quantile %g is not in (0,1)", p)
	}
	if err := checkConfidence(confidence); err != nil {
		return 0, Interval{}, err
	}
	var n int64
	for i, b := range h {
		if b.Count < 0 || !(b.High >= b.Low) {
			return 0, Interval{}, fmt.Errorf("bucket %d [%g, %g) holds %d: want a count >= 0 and High >= Low", i, b.Low, b.High, b.Count)
		}
		if i > 0 && b.Low < h[i-1].High {
			return 0, Interval{}, fmt.Errorf("bucket %d starts at %g, before bucket %d ends (%g): buckets must be sorted and apart", i, b.Low, i-1, h[i-1].High)
		}
		n += b.Count
	}
	if n == 0 {
		return 0, Interval{}, fmt.Errorf("histogram holds no values")
	}
	nf := float64(n)
	half := zFor(confidence) * math.Sqrt(nf*p*(1-p))
	lo := int64(math.Max(1, math.Floor(nf*p-half)))
	hi := int64(math.Min(nf, math.Ceil(nf*p+half)+1))
	// bucketOf is the bucket holding the k-th smallest value (1-based).
	bucketOf := func(k int64) int {
		var seen int64
		for i, b := range h {
			seen += b.Count
			if seen >= k {
				return i
			}
		}
		return len(h) - 1
	}
	ci = Interval{Low: h[bucketOf(lo)].Low, High: h[bucketOf(hi)].High}
	rank := nf * p
	var below float64
	for _, b := range h {
		if b.Count == 0 {
			continue
		}
		if below+float64(b.Count) >= rank {
			estimate = b.Low + (b.High-b.Low)*(rank-below)/float64(b.Count)
			break
		}
		below += float64(b.Count)
	}
	return estimate, ci, nil
}

// QuantileDifference is quantile p of histogram b minus that of a, with an
// interval at confidence: each side's HistogramQuantile interval at
// sqrt(confidence), so that both hold together with at least confidence
// (the two histograms are independent), and the difference's interval is
// [low b - high a, high b - low a].
func QuantileDifference(a, b []Bucket, p, confidence float64) (Difference, error) {
	if err := checkConfidence(confidence); err != nil {
		return Difference{}, err
	}
	each := math.Sqrt(confidence)
	ea, ia, err := HistogramQuantile(a, p, each)
	if err != nil {
		return Difference{}, fmt.Errorf("first histogram: %w", err)
	}
	eb, ib, err := HistogramQuantile(b, p, each)
	if err != nil {
		return Difference{}, fmt.Errorf("second histogram: %w", err)
	}
	return Difference{Estimate: eb - ea, CI: Interval{Low: ib.Low - ia.High, High: ib.High - ia.Low}, Confidence: confidence}, nil
}
