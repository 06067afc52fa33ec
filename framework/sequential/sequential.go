package sequential

import (
	"errors"
	"fmt"
	"math"
)

// Interval is a confidence sequence's current interval.
type Interval struct{ Low, High float64 }

func (i Interval) String() string { return fmt.Sprintf("[%.4g, %.4g]", i.Low, i.High) }

// Betting is the hedged betting confidence sequence for the mean of
// observations in [0, 1]. The running intersection is kept, so the
// interval only ever narrows.
type Betting struct {
	alpha float64
	grid  []float64 // candidate means
	logKp []float64 // log capital betting the mean is above grid[j]
	logKm []float64 // ... below grid[j]
	out   []bool    // grid[j] has been excluded
	n     int
	sum   float64 // of observations
	ssq   float64 // of squared deviations from the running predictable mean
}

// gridSize is the number of candidate means: geometric from 1e-7 to 1 and
// 0, so that error rates of 0.01%-1% (GUIDE's) are resolved to within
// about 1%.
const gridSize = 2400

// betCap is the truncation c of the plug-in bet: |lambda| <= c/m (or
// c/(1-m)) keeps every factor of the capital positive; the paper uses 1/2.
const betCap = 0.5

// NewBetting starts a sequence at level alpha (e.g. 0.05 for 95%).
func NewBetting(alpha float64) (*Betting, error) {
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("sequential: alpha = %v: accepted: a level in (0, 1), e.g. 0.05", alpha)
	}
	b := &Betting{alpha: alpha}
	b.grid = append(b.grid, 0)
	lo := math.Log(1e-7)
	for j := 0; j < gridSize; j++ {
		b.grid = append(b.grid, math.Exp(lo+(0-lo)*float64(j)/float64(gridSize-1)))
	}
	b.logKp = make([]float64, len(b.grid))
	b.logKm = make([]float64, len(b.grid))
	b.out = make([]bool, len(b.grid))
	return b, nil
}

// Add takes one observation in [0, 1].
func (b *Betting) Add(x float64) error {
	if math.IsNaN(x) || x < 0 || x > 1 {
		return fmt.Errorf("sequential: observation %v: accepted: a proportion in [0, 1]", x)
	}
	// The bet is predictable: made from the observations before x.
	t := float64(b.n + 1)
	mu := (0.5 + b.sum) / t
	v := (0.25 + b.ssq) / t
	lambda := math.Sqrt(2 * math.Log(2/b.alpha) / (v * t * math.Log(1+t)))
	threshold := math.Log(1 / b.alpha)
	for j, m := range b.grid {
		if b.out[j] {
			continue
		}
		lp, lm := lambda, lambda
		if m > 0 {
			lp = math.Min(lambda, betCap/m)
		}
		if m < 1 {
			lm = math.Min(lambda, betCap/(1-m))
		}
		b.logKp[j] += math.Log1p(lp * (x - m))
		b.logKm[j] += math.Log1p(-lm * (x - m))
		// Hedged capital max(K+/2, K-/2) >= 1/alpha excludes m; the
		// exclusion stands (running intersection).
		if math.Max(b.logKp[j], b.logKm[j])-math.Ln2 >= threshold {
			b.out[j] = true
		}
	}
	b.n++
	b.sum += x
	b.ssq += (x - mu) * (x - mu)
	return nil
}

// N is the number of observations.
func (b *Betting) N() int { return b.n }

// Mean is the observations' mean (0 before any).
func (b *Betting) Mean() float64 {
	if b.n == 0 {
		return 0
	}
	return b.sum / float64(b.n)
}

// Interval is the current confidence sequence: from the smallest to the
// largest candidate mean not excluded, widened to the neighbouring grid
// points so that the grid never narrows it.
func (b *Betting) Interval() (Interval, error) {
	lo, hi := -1, -1
	for j := range b.grid {
		if !b.out[j] {
			if lo < 0 {
				lo = j
			}
			hi = j
		}
	}
	if lo < 0 {
		// Every candidate excluded: only possible when the data are not
		// from one bounded mean (or the grid misses it); say so.
		return Interval{}, errors.New("sequential: every candidate mean is excluded; the observations do not look like one mean in [0, 1]")
	}
	iv := Interval{Low: b.grid[max(lo-1, 0)], High: b.grid[min(hi+1, len(b.grid)-1)]}
	if lo == 0 {
		iv.Low = 0
	}
	return iv, nil
}

// Asymptotic is the normal-mixture asymptotic confidence sequence for the
// mean of i.i.d. observations with finite variance (batch means).
type Asymptotic struct {
	alpha, rho2 float64
	n           int
	mean, m2    float64 // Welford
	lo, hi      float64 // running intersection
	// BurnIn is how many observations pass before the interval is formed
	// (and intersected): an asymptotic interval from a handful of
	// observations is not yet valid, and with zero-inflated data (most
	// cycles error-free) its early narrowness would be locked in by the
	// intersection. 2 at least.
	BurnIn int
}

// NewAsymptotic starts a sequence at level alpha, tightest around optimum
// observations (the source's full number of cycles or batches). scale is
// the typical spread of one observation, fixed before any data (the
// claim's band width, say): the normal mixture's spread is set in its
// units, so the sequence is as tight for 0.1% rates as for 1 ms latencies.
// Choosing it from the data would void the guarantee.
func NewAsymptotic(alpha float64, optimum int, scale float64) (*Asymptotic, error) {
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("sequential: alpha = %v: accepted: a level in (0, 1), e.g. 0.05", alpha)
	}
	if optimum < 1 {
		return nil, fmt.Errorf("sequential: optimum = %d observations: accepted: 1 or more (the planned number of cycles or batches)", optimum)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("sequential: scale = %v: accepted: a finite positive spread of one observation", scale)
	}
	// Waudby-Smith et al., eq. (17): rho^2 minimising the width at t* for
	// unit variance, here in units of scale.
	l := -2 * math.Log(alpha)
	rho2 := (l + math.Log(l+1)) / (float64(optimum) * scale * scale)
	return &Asymptotic{alpha: alpha, rho2: rho2, lo: math.Inf(-1), hi: math.Inf(1)}, nil
}

// Add takes one observation (one batch's mean).
func (a *Asymptotic) Add(x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("sequential: observation %v: accepted: a finite number", x)
	}
	a.n++
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
	if a.n < max(a.BurnIn, 2) {
		return nil
	}
	t := float64(a.n)
	v := a.m2 / (t - 1)
	k := t*v*a.rho2 + 1
	w := math.Sqrt(2 * k / (t * t * a.rho2) * math.Log(math.Sqrt(k)/a.alpha))
	a.lo = math.Max(a.lo, a.mean-w)
	a.hi = math.Min(a.hi, a.mean+w)
	return nil
}

// N is the number of observations.
func (a *Asymptotic) N() int { return a.n }

// Interval is the current interval (infinite before two observations).
func (a *Asymptotic) Interval() Interval { return Interval{Low: a.lo, High: a.hi} }
