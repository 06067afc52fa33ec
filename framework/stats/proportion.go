package stats

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Interval is a closed confidence interval [Low, High].
type Interval struct{ Low, High float64 }

// Contains reports whether x lies in the closed interval.
func (i Interval) Contains(x float64) bool { return i.Low <= x && x <= i.High }

// Width is High-Low.
func (i Interval) Width() float64 { return i.High - i.Low }

// Proportion is a binomial estimate Count of Total with a Wilson score
// interval. Build it with Wilson or Pool; a hand-built value is checked again
// by every function that takes one.
type Proportion struct {
	Count, Total int64
	Estimate     float64  // Count/Total (0 when Total==0)
	CI           Interval // Wilson score interval at Confidence
	Confidence   float64  // e.g. 0.95
}

// Wilson returns count of total as a Proportion with its Wilson score interval
// at the given confidence. The Wilson interval is used rather than the normal
// ("Wald") one because it stays inside [0,1] and keeps its coverage at the
// rates these claims live at (0 of 60000, 324 of 60000).
//
// With total == 0 there is no information: Estimate is 0 and CI is [0,1].
// Errors: total < 0, count < 0, count > total, confidence not in (0,1).
func Wilson(count, total int64, confidence float64) (Proportion, error) {
	if err := checkCounts(count, total); err != nil {
		return Proportion{}, err
	}
	if err := checkConfidence(confidence); err != nil {
		return Proportion{}, err
	}
	p := Proportion{Count: count, Total: total, Confidence: confidence, CI: Interval{0, 1}}
	if total == 0 {
		return p, nil
	}
	n := float64(total)
	ph := float64(count) / n
	z := zFor(confidence)
	z2n := z * z / n
	denom := 1 + z2n
	centre := (ph + z2n/2) / denom
	half := z * math.Sqrt(ph*(1-ph)/n+z2n/(4*n)) / denom
	p.Estimate = ph
	p.CI = Interval{Low: math.Max(0, centre-half), High: math.Min(1, centre+half)}
	// The bounds at the edges are exactly 0 and 1; rounding must not turn
	// "0 of n" into a tiny positive lower bound.
	if count == 0 {
		p.CI.Low = 0
	}
	if count == total {
		p.CI.High = 1
	}
	return p, nil
}

// String renders the estimate, e.g.
// "324/60000 = 0.540% [0.484%, 0.602%] 95% CI".
func (p Proportion) String() string {
	return fmt.Sprintf("%d/%d = %s %s", p.Count, p.Total, percent(p.Estimate), p.CIText())
}

// CIText renders the interval alone, e.g. "[0.484%, 0.602%] 95% CI".
func (p Proportion) CIText() string {
	return fmt.Sprintf("[%s, %s] %s CI", percent(p.CI.Low), percent(p.CI.High), confidenceLabel(p.Confidence))
}

// Pool combines repeated binomial runs (e.g. three rollout runs) into one
// Proportion of the summed counts and totals, with its Wilson interval.
// Pooling assumes the runs share one underlying rate; Summarize over the
// per-run estimates shows whether they do. All confidences must match.
func Pool(ps ...Proportion) (Proportion, error) {
	if len(ps) == 0 {
		return Proportion{}, errors.New("stats: Pool needs at least one proportion, got none")
	}
	var count, total int64
	confidence := ps[0].Confidence
	for i, p := range ps {
		if err := checkCounts(p.Count, p.Total); err != nil {
			return Proportion{}, fmt.Errorf("proportion %d: %w", i, err)
		}
		if err := checkConfidence(p.Confidence); err != nil {
			return Proportion{}, fmt.Errorf("proportion %d: %w", i, err)
		}
		if p.Confidence != confidence {
			return Proportion{}, fmt.Errorf("stats: Pool: proportion %d has confidence %v but proportion 0 has %v; all confidences must match", i, p.Confidence, confidence)
		}
		if total > math.MaxInt64-p.Total {
			return Proportion{}, fmt.Errorf("stats: Pool: total overflows int64 at proportion %d (total %d)", i, p.Total)
		}
		count += p.Count
		total += p.Total
	}
	return Wilson(count, total, confidence)
}

// RatioEstimate is a ratio of two rates with its confidence interval.
type RatioEstimate struct {
	Estimate   float64
	CI         Interval
	Confidence float64
	// Corrected is true when a zero count forced the 0.5 continuity
	// correction; Estimate and CI are then both of the corrected counts.
	Corrected bool
}

// String renders the ratio, e.g. "4.72x [4.19x, 5.32x] 95% CI".
func (r RatioEstimate) String() string {
	s := fmt.Sprintf("%.3gx [%.3gx, %.3gx] %s CI", r.Estimate, r.CI.Low, r.CI.High, confidenceLabel(r.Confidence))
	if r.Corrected {
		s += " (0.5 continuity correction)"
	}
	return s
}

// RateRatio estimates the ratio of the rate of a over the rate of b, e.g. the
// ambient-l7 503 rate over the sidecar 503 rate ("about 5x"), with the Katz
// log interval: ln(RR) ± z·sqrt(1/a − 1/n_a + 1/b − 1/n_b).
//
// Zero counts: when either count is 0 the log interval is undefined, so 0.5 is
// added to every cell of the 2x2 table (each count gets +0.5, each total +1)
// and Estimate and CI are both computed from the corrected counts, so the
// interval always contains the estimate; Corrected records it. When both
// counts are 0 the data say nothing about the ratio and RateRatio returns an
// error. The two confidences must match; each total must be positive.
func RateRatio(a, b Proportion) (RatioEstimate, error) {
	for _, side := range []struct {
		name string
		p    Proportion
	}{{"a", a}, {"b", b}} {
		if err := checkCounts(side.p.Count, side.p.Total); err != nil {
			return RatioEstimate{}, fmt.Errorf("RateRatio %s: %w", side.name, err)
		}
		if side.p.Total == 0 {
			return RatioEstimate{}, fmt.Errorf("stats: RateRatio %s: total 0; a rate needs at least one trial", side.name)
		}
		if err := checkConfidence(side.p.Confidence); err != nil {
			return RatioEstimate{}, fmt.Errorf("RateRatio %s: %w", side.name, err)
		}
	}
	if a.Confidence != b.Confidence {
		return RatioEstimate{}, fmt.Errorf("stats: RateRatio: confidence of a %v differs from confidence of b %v; they must match", a.Confidence, b.Confidence)
	}
	if a.Count == 0 && b.Count == 0 {
		return RatioEstimate{}, fmt.Errorf("stats: RateRatio: both counts are 0 (0/%d over 0/%d); the ratio is undefined", a.Total, b.Total)
	}
	ca, na := float64(a.Count), float64(a.Total)
	cb, nb := float64(b.Count), float64(b.Total)
	corrected := a.Count == 0 || b.Count == 0
	if corrected {
		ca, na, cb, nb = ca+0.5, na+1, cb+0.5, nb+1
	}
	rr := (ca / na) / (cb / nb)
	se := math.Sqrt(1/ca - 1/na + 1/cb - 1/nb)
	z := zFor(a.Confidence)
	return RatioEstimate{
		Estimate:   rr,
		CI:         Interval{Low: rr * math.Exp(-z*se), High: rr * math.Exp(z*se)},
		Confidence: a.Confidence,
		Corrected:  corrected,
	}, nil
}

// zFor is the two-sided normal critical value for a confidence.
func zFor(confidence float64) float64 { return NormalQuantile(1 - (1-confidence)/2) }

func checkCounts(count, total int64) error {
	switch {
	case total < 0:
		return fmt.Errorf("stats: total %d is negative; accepted: total >= 0", total)
	case count < 0:
		return fmt.Errorf("stats: count %d is negative; accepted: 0 <= count <= total (%d)", count, total)
	case count > total:
		return fmt.Errorf("stats: count %d is greater than total %d; accepted: 0 <= count <= total", count, total)
	}
	return nil
}

func checkConfidence(c float64) error {
	if !(c > 0 && c < 1) {
		return fmt.Errorf("stats: confidence %v is not in (0,1); accepted: a fraction such as 0.95", c)
	}
	return nil
}

// percent formats a fraction as a percentage: three decimals from 0.1% up,
// three significant digits below, so 6.4e-5 shows as 0.0064% and not 0.000%.
func percent(f float64) string {
	pc := f * 100
	if pc == 0 || math.Abs(pc) >= 0.1 {
		return strconv.FormatFloat(pc, 'f', 3, 64) + "%"
	}
	return strconv.FormatFloat(pc, 'g', 3, 64) + "%"
}

// confidenceLabel formats 0.95 as "95%" and 0.999 as "99.9%".
func confidenceLabel(c float64) string {
	return strconv.FormatFloat(math.Round(c*1e6)/1e4, 'f', -1, 64) + "%"
}
