// Package interference judges whether a load that ran at once with other
// modes' loads (-concurrent-modes) measured what it measures alone. The
// check compares one mode's run alongside the others with a shorter
// reference run of the same load alone, in the same run: its error rates
// per restart cycle and its median latency, each difference with its
// interval, so the report can set "no interference found, within ±x" or
// "interference: ..." beside the numbers measured alongside.
//
// It is pure: the steps that run the loads (framework/steps) turn each run
// into a Run, and the unit tests feed it simulated runs, a disturbed one
// (the negative control: interference is reported) and identical ones (the
// positive control: none is).
package interference

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/stats"
)

// Run is one side of the check: a rollout load's restart cycles and its
// latency histogram.
type Run struct {
	Name    string
	Cycles  []Cycle
	Latency []stats.Bucket // every call, in seconds (fortio's histogram)
}

// Cycle is one restart cycle of a run: the requests sent in it and the
// errors that came back.
type Cycle struct {
	Requests    int64
	Unavailable int64 // 503 answers
	NoResponse  int64 // -1: no HTTP response
}

// Rate is one error rate of the mode alone and alongside.
type Rate struct {
	Name             string           // "503", "no-response"
	Alone, Alongside stats.Proportion // pooled over the run's cycles (Wilson), as the claims read them
	// PerCycle is the difference (alongside minus alone) of the mean rate
	// per restart cycle with Welch's interval over cycles: errors come in
	// bursts per cycle (the unit of independence the sequential rule uses
	// too), so requests are not independent draws. P is the judged
	// permutation p-value of the same difference (stats.PermutationPValue):
	// with the reference run's few, skewed cycles Welch's level is not
	// kept (identical runs would be called disturbed too often), an exact
	// relabelling of cycles is.
	PerCycle stats.Difference
	P        float64
	// PerRequest is Newcombe's interval of the pooled rates, shown beside
	// it and never judged: it treats requests as independent, which
	// bursts per cycle are not, so it finds "interference" in runs that
	// differ only by chance (TestRequestLevelIntervalsCryWolf).
	PerRequest stats.Difference
	// Unchecked says why no per-cycle interval was made ("" when it was).
	Unchecked string
}

// Latency is a quantile of the mode's latency alone and alongside.
type Latency struct {
	Quantile         float64 // 0.5
	Alone, Alongside float64 // s
	// Difference is alongside minus alone, the histograms' distribution-
	// free interval (stats.QuantileDifference). A fortio result keeps a
	// histogram, not a time series, so batch means cannot be formed from
	// one run; the interval takes calls as independent and is therefore
	// too narrow rather than too wide: it errs towards reporting
	// interference, the safe side for running loads at once.
	Difference stats.Difference
	Unchecked  string
}

// Check is the interference check of one mode's load.
type Check struct {
	Mode string   // the mode measured alone and alongside
	With []string // the modes whose loads ran alongside
	// Alone and Alongside name the two runs (their raw results).
	Alone, Alongside string
	Rates            []Rate
	Latency          Latency
	// Confidence is the family's: each of the comparisons is made at
	// 1 - (1-Confidence)/comparisons (Bonferroni), so that identical runs
	// report interference at most 1-Confidence of the time.
	Confidence float64
	// Disturbed is true when an interval excludes no change: the load
	// alongside measured something else than alone.
	Disturbed bool
}

// comparisons is the number of intervals a Check judges: the 503 rate,
// the no-response rate and the median.
const comparisons = 3

// permutationRounds resolves p to 1/5000, far below the 1.7% each
// comparison is judged at.
const permutationRounds = 4999

// MinCycles is the fewest restart cycles a side needs for a per-cycle
// interval (a spread needs two).
const MinCycles = 2

// Compare judges the run alongside against the one alone at confidence
// (the family's, e.g. 0.95).
func Compare(mode string, with []string, alone, alongside Run, confidence float64) (Check, error) {
	if !(confidence > 0 && confidence < 1) {
		return Check{}, fmt.Errorf("confidence %g is not in (0,1)", confidence)
	}
	c := Check{Mode: mode, With: with, Alone: alone.Name, Alongside: alongside.Name, Confidence: confidence}
	each := 1 - (1-confidence)/comparisons
	for _, k := range []struct {
		name  string
		count func(Cycle) int64
	}{
		{"503", func(c Cycle) int64 { return c.Unavailable }},
		{"no-response", func(c Cycle) int64 { return c.NoResponse }},
	} {
		r, err := compareRate(k.name, k.count, alone.Cycles, alongside.Cycles, each)
		if err != nil {
			return Check{}, fmt.Errorf("%s rate: %w", k.name, err)
		}
		c.Disturbed = c.Disturbed || (r.Unchecked == "" && r.P < 1-each)
		c.Rates = append(c.Rates, r)
	}
	c.Latency = Latency{Quantile: 0.5}
	if len(alone.Latency) == 0 || len(alongside.Latency) == 0 {
		c.Latency.Unchecked = "a run has no latency histogram"
	} else {
		d, err := stats.QuantileDifference(alone.Latency, alongside.Latency, 0.5, each)
		if err != nil {
			c.Latency.Unchecked = err.Error()
		} else {
			c.Latency.Difference = d
			c.Latency.Alone, _, _ = stats.HistogramQuantile(alone.Latency, 0.5, each)
			c.Latency.Alongside = c.Latency.Alone + d.Estimate
			c.Disturbed = c.Disturbed || d.Significant()
		}
	}
	return c, nil
}

func compareRate(name string, count func(Cycle) int64, alone, alongside []Cycle, confidence float64) (Rate, error) {
	r := Rate{Name: name}
	pooled := func(cs []Cycle) (stats.Proportion, []float64, error) {
		var n, total int64
		var rates []float64
		for i, c := range cs {
			k := count(c)
			if c.Requests <= 0 || k < 0 || k > c.Requests {
				return stats.Proportion{}, nil, fmt.Errorf("cycle %d: %d errors of %d requests", i+1, k, c.Requests)
			}
			n += k
			total += c.Requests
			rates = append(rates, float64(k)/float64(c.Requests))
		}
		p, err := stats.Wilson(n, total, confidence)
		return p, rates, err
	}
	var ra, rb []float64
	var err error
	if r.Alone, ra, err = pooled(alone); err != nil {
		return Rate{}, fmt.Errorf("alone: %w", err)
	}
	if r.Alongside, rb, err = pooled(alongside); err != nil {
		return Rate{}, fmt.Errorf("alongside: %w", err)
	}
	if r.Alone.Total > 0 && r.Alongside.Total > 0 {
		if r.PerRequest, err = stats.ProportionDifference(r.Alone, r.Alongside); err != nil {
			return Rate{}, err
		}
	}
	if len(ra) < MinCycles || len(rb) < MinCycles {
		r.Unchecked = fmt.Sprintf("%d restart cycles alone and %d alongside; a per-cycle interval needs %d on each side", len(ra), len(rb), MinCycles)
		return r, nil
	}
	// With few cycles no relabelling can be rare enough: the smallest
	// two-sided p of an exact permutation test is 2 / C(n, alone). Then
	// the rate is not judged rather than "no interference found".
	if least := 2 / binomial(len(ra)+len(rb), len(ra)); least >= 1-confidence {
		r.Unchecked = fmt.Sprintf("%d restart cycles alone and %d alongside: no difference of so few could reach p < %.2g (the smallest possible is %.2g)", len(ra), len(rb), 1-confidence, least)
		return r, nil
	}
	if r.PerCycle, err = stats.MeanDifference(ra, rb, confidence); err != nil {
		return Rate{}, err
	}
	// A fixed seed: the same runs always get the same p (a report rebuilt
	// from the records judges as the run did).
	if r.P, err = stats.PermutationPValue(ra, rb, permutationRounds, rand.New(rand.NewPCG(25, 3))); err != nil {
		return Rate{}, err
	}
	return r, nil
}

// String is the check in one sentence, for the setup of every claim that
// read a load run alongside and for the run's notes.
func (c Check) String() string {
	var parts []string
	for _, r := range c.Rates {
		s := fmt.Sprintf("%s rate alone %s, alongside %s", r.Name, pct(r.Alone.Estimate), pct(r.Alongside.Estimate))
		if r.Unchecked != "" {
			s += " (not judged: " + r.Unchecked + ")"
		} else {
			s += fmt.Sprintf(", per-cycle difference %s (Welch [%s, %s]; permutation p %.2g)", pp(r.PerCycle.Estimate), pp(r.PerCycle.CI.Low), pp(r.PerCycle.CI.High), r.P)
		}
		parts = append(parts, s)
	}
	l := c.Latency
	if l.Unchecked != "" {
		parts = append(parts, "P50 not judged: "+l.Unchecked)
	} else {
		parts = append(parts, fmt.Sprintf("P50 alone %s, alongside %s, difference %s [%s, %s]", ms(l.Alone), ms(l.Alongside), ms(l.Difference.Estimate), ms(l.Difference.CI.Low), ms(l.Difference.CI.High)))
	}
	head := "no interference found"
	if c.Disturbed {
		head = "INTERFERENCE: the load alongside measured other rates or latency than alone"
	} else if !c.judged() {
		head = "interference not judged"
	}
	return fmt.Sprintf("interference check (%s alone, run %s, vs alongside %s, run %s; %g%% family confidence, Bonferroni over %d comparisons): %s: %s",
		c.Mode, c.Alone, strings.Join(c.With, ", "), c.Alongside, 100*c.Confidence, comparisons, head, strings.Join(parts, "; "))
}

// judged says whether any comparison was made.
func (c Check) judged() bool {
	for _, r := range c.Rates {
		if r.Unchecked == "" {
			return true
		}
	}
	return c.Latency.Unchecked == ""
}

// ReferenceShare is the part of the load's duration the reference run
// alone lasts, never under ReferenceFloor nor over the load: enough
// restart cycles for a per-cycle interval, a fraction of what running the
// modes at once saves.
const (
	ReferenceShare = 0.25
	ReferenceFloor = 30 * time.Second
)

// ReferenceDuration is the reference run's length for a load of d.
func ReferenceDuration(d time.Duration) time.Duration {
	r := time.Duration(float64(d) * ReferenceShare)
	return min(d, max(r, ReferenceFloor))
}

// binomial is n choose k as a float (large values lose precision only).
func binomial(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

func pct(x float64) string { return fmt.Sprintf("%.3g%%", 100*x) }
func pp(x float64) string  { return fmt.Sprintf("%+.3g pp", 100*x) }
func ms(x float64) string  { return fmt.Sprintf("%.3g ms", 1e3*x) }
