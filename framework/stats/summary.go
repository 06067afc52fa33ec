package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Summary combines repeated runs of one measurement.
type Summary struct {
	N          int
	Mean       float64
	StdDev     float64 // sample standard deviation (n-1); 0 when N == 1
	Min, Max   float64
	RelSpread  float64  // (Max-Min)/|Mean|; 0 when all values are equal, +Inf when Mean is 0 otherwise
	CI         Interval // Student-t interval of the mean; [Mean, Mean] when N == 1
	Confidence float64
}

// HasInterval reports whether CI is a real interval; with one run (N == 1)
// there is no spread to estimate and CI is the value itself.
func (s Summary) HasInterval() bool { return s.N > 1 }

// String renders the summary unitless, e.g.
// "n=5 mean 2.45 sd 0.0321 [2.41, 2.49] 95% CI, spread 3.27%".
func (s Summary) String() string {
	if !s.HasInterval() {
		return fmt.Sprintf("n=1 value %.4g (no interval from one run)", s.Mean)
	}
	return fmt.Sprintf("n=%d mean %.4g sd %.3g [%.4g, %.4g] %s CI, spread %s",
		s.N, s.Mean, s.StdDev, s.CI.Low, s.CI.High, confidenceLabel(s.Confidence), percent(s.RelSpread))
}

// Summarize returns mean, sample standard deviation, min, max, relative
// spread and the Student-t confidence interval of the mean of xs.
// Errors: empty xs, a NaN or infinite value (named by index), confidence not
// in (0,1).
func Summarize(xs []float64, confidence float64) (Summary, error) {
	if len(xs) == 0 {
		return Summary{}, errors.New("stats: Summarize needs at least one value, got none")
	}
	if err := checkConfidence(confidence); err != nil {
		return Summary{}, err
	}
	s := Summary{N: len(xs), Min: xs[0], Max: xs[0], Confidence: confidence}
	sum := 0.0
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Summary{}, fmt.Errorf("stats: value %d is %v; accepted: finite numbers", i, x)
		}
		sum += x
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Mean = sum / float64(s.N)
	// Two passes: squared deviations from the mean, not sum of squares minus
	// square of sum, which cancels catastrophically for values like 2.450±0.01.
	ss := 0.0
	for _, x := range xs {
		d := x - s.Mean
		ss += d * d
	}
	switch {
	case s.Max == s.Min:
		s.RelSpread = 0
	case s.Mean == 0:
		s.RelSpread = math.Inf(1)
	default:
		s.RelSpread = (s.Max - s.Min) / math.Abs(s.Mean)
	}
	if s.N == 1 {
		s.CI = Interval{s.Mean, s.Mean}
		return s, nil
	}
	s.StdDev = math.Sqrt(ss / float64(s.N-1))
	half := TQuantile(1-(1-confidence)/2, s.N-1) * s.StdDev / math.Sqrt(float64(s.N))
	s.CI = Interval{Low: s.Mean - half, High: s.Mean + half}
	return s, nil
}

// Percentile returns the p-th percentile (p in [0,100]) of samples with
// linear interpolation between order statistics (the "type 7" definition of
// R and NumPy's default): rank h = (n-1)·p/100. samples is not modified.
// Errors: empty samples, a NaN or infinite sample, p outside [0,100].
func Percentile(samples []float64, p float64) (float64, error) {
	if len(samples) == 0 {
		return 0, errors.New("stats: Percentile needs at least one sample, got none")
	}
	if !(p >= 0 && p <= 100) {
		return 0, fmt.Errorf("stats: percentile %v is not in [0,100]", p)
	}
	sorted := make([]float64, len(samples))
	for i, x := range samples {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("stats: sample %d is %v; accepted: finite numbers", i, x)
		}
		sorted[i] = x
	}
	sort.Float64s(sorted)
	h := float64(len(sorted)-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1], nil
	}
	frac := h - float64(lo)
	if frac == 0 {
		return sorted[lo], nil
	}
	a, b := sorted[lo], sorted[lo+1]
	v := a + frac*(b-a)
	if math.IsInf(b-a, 0) {
		// b-a overflows for values near ±MaxFloat64; the weighted form does not.
		v = a*(1-frac) + b*frac
	}
	// Rounding must not step outside the two order statistics.
	return math.Min(math.Max(v, a), b), nil
}
