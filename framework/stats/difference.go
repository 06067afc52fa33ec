package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Difference is an estimated change (new minus old) with its interval.
type Difference struct {
	Estimate   float64
	CI         Interval
	Confidence float64
}

// Significant reports whether the interval excludes zero: the change is
// more than the two samples' noise.
func (d Difference) Significant() bool { return d.CI.Low > 0 || d.CI.High < 0 }

// ProportionDifference is b - a for two independent proportions with
// Newcombe's hybrid score interval (Newcombe 1998, method 10), built from
// the two Wilson intervals. Unlike the Wald interval it behaves at 0 of n
// and at the small rates these claims live at. Both must have the same
// confidence.
func ProportionDifference(a, b Proportion) (Difference, error) {
	for _, p := range []Proportion{a, b} {
		if err := checkCounts(p.Count, p.Total); err != nil {
			return Difference{}, err
		}
		if p.Total == 0 {
			return Difference{}, fmt.Errorf("proportion %d/0: no requests, no difference to estimate", p.Count)
		}
	}
	if a.Confidence != b.Confidence {
		return Difference{}, fmt.Errorf("confidences %g and %g differ", a.Confidence, b.Confidence)
	}
	d := b.Estimate - a.Estimate
	lo := d - math.Sqrt(sq(b.Estimate-b.CI.Low)+sq(a.CI.High-a.Estimate))
	hi := d + math.Sqrt(sq(b.CI.High-b.Estimate)+sq(a.Estimate-a.CI.Low))
	return Difference{Estimate: d, CI: Interval{Low: math.Max(-1, lo), High: math.Min(1, hi)}, Confidence: a.Confidence}, nil
}

// MeanDifference is mean(b) - mean(a) with Welch's t interval (unequal
// variances, Welch-Satterthwaite degrees of freedom). Both need at least two
// values: one run has no spread to compare.
func MeanDifference(a, b []float64, confidence float64) (Difference, error) {
	if len(a) < 2 || len(b) < 2 {
		return Difference{}, fmt.Errorf("runs %d and %d: a mean difference needs at least 2 runs on each side", len(a), len(b))
	}
	sa, err := Summarize(a, confidence)
	if err != nil {
		return Difference{}, err
	}
	sb, err := Summarize(b, confidence)
	if err != nil {
		return Difference{}, err
	}
	va, vb := sq(sa.StdDev)/float64(sa.N), sq(sb.StdDev)/float64(sb.N)
	d := sb.Mean - sa.Mean
	se := math.Sqrt(va + vb)
	if se == 0 {
		return Difference{Estimate: d, CI: Interval{Low: d, High: d}, Confidence: confidence}, nil
	}
	df := sq(va+vb) / (sq(va)/float64(sa.N-1) + sq(vb)/float64(sb.N-1))
	t := TQuantile(1-(1-confidence)/2, int(math.Floor(df)))
	return Difference{Estimate: d, CI: Interval{Low: d - t*se, High: d + t*se}, Confidence: confidence}, nil
}

func sq(x float64) float64 { return x * x }

// PermutationPValue is the two-sided p-value of mean(b) - mean(a) under
// the hypothesis that the values of a and b come from one distribution
// (exchangeable): the share of rounds random relabellings of the pooled
// values whose Welch statistic (the difference over its standard error)
// is at least as large, (1+k)/(1+rounds). Unlike Welch's t interval it
// keeps its level for a handful of skewed values (the error rates of a few
// restart cycles, most near zero and some bursts); studentizing keeps its
// power when the two sides' spreads differ (Janssen 1997). rng makes it
// reproducible: the same values and seed give the same p.
func PermutationPValue(a, b []float64, rounds int, rng *rand.Rand) (float64, error) {
	if len(a) < 2 || len(b) < 2 {
		return 0, fmt.Errorf("values %d and %d: a studentized permutation test needs at least 2 on each side", len(a), len(b))
	}
	if rounds < 1 {
		return 0, fmt.Errorf("rounds %d: want at least 1", rounds)
	}
	pooled := append(append([]float64(nil), a...), b...)
	welch := func(x, y []float64) float64 {
		mx, vx := meanVar(x)
		my, vy := meanVar(y)
		d := math.Abs(my - mx)
		se := math.Sqrt(vx/float64(len(x)) + vy/float64(len(y)))
		switch {
		case d == 0:
			return 0
		case se == 0:
			return math.Inf(1)
		}
		return d / se
	}
	observed := welch(a, b)
	// Ties (many cycles without an error) must count as "as large".
	tol := 1e-9 * math.Max(1, observed)
	k := 0
	for range rounds {
		// A partial Fisher-Yates shuffle draws the relabelled a.
		for i := range len(a) {
			j := i + rng.IntN(len(pooled)-i)
			pooled[i], pooled[j] = pooled[j], pooled[i]
		}
		if welch(pooled[:len(a)], pooled[len(a):]) >= observed-tol {
			k++
		}
	}
	return float64(1+k) / float64(1+rounds), nil
}

// meanVar is the mean and sample variance of xs (len >= 2).
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += sq(x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}
