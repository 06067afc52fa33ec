package stats

import "math"

// NormalQuantile returns the p-quantile of the standard normal distribution
// (the inverse of its CDF): NormalQuantile(0.975) = 1.959963984540054.
// It returns -Inf for p == 0, +Inf for p == 1 and NaN for p outside [0,1].
//
// math.Erfinv is not used directly because 1-2p rounds to 1 for tiny p and the
// tail quantile would become infinite; instead an Abramowitz-Stegun 26.2.23
// start (error < 4.5e-4) is polished with Halley steps on math.Erfc, which is
// accurate in relative terms deep into the tail.
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case p > 0.5:
		// 1-p is exact for p in [0.5,1] (Sterbenz), so symmetry costs nothing.
		return -NormalQuantile(1 - p)
	}
	// Lower half: p in (0, 0.5).
	t := math.Sqrt(-2 * math.Log(p))
	x := -(t - (2.515517+0.802853*t+0.010328*t*t)/(1+1.432788*t+0.189269*t*t+0.001308*t*t*t))
	for i := 0; i < 8; i++ {
		e := 0.5*math.Erfc(-x/math.Sqrt2) - p
		u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
		step := u / (1 + x*u/2)
		x -= step
		if math.Abs(step) <= 1e-16*math.Abs(x) {
			break
		}
	}
	return x
}

// TQuantile returns the p-quantile of Student's t distribution with df
// degrees of freedom: TQuantile(0.975, 4) = 2.776445105197794. It returns
// -Inf for p == 0, +Inf for p == 1, and NaN for p outside [0,1] or df <= 0.
//
// The CDF comes from the regularized incomplete beta function; the quantile
// is found by Newton steps on the upper tail, kept inside a shrinking bracket
// so that a bad step falls back to bisection and the search always converges.
func TQuantile(p float64, df int) float64 {
	switch {
	case df <= 0 || math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case p < 0.5:
		// Search on the tail p itself: 1-p would round tiny p away.
		return -tUpperQuantile(p, float64(df))
	}
	return tUpperQuantile(1-p, float64(df)) // 1-p is exact by Sterbenz
}

// tUpperQuantile returns t > 0 with P(T > t) = q, for q in (0, 0.5).
// df 1 and 2 have closed forms that stay exact where the general search
// would meet t² beyond the float range (df 1 at q below about 1e-154).
func tUpperQuantile(q, nu float64) float64 {
	switch nu {
	case 1:
		return 1 / math.Tan(math.Pi*q)
	case 2:
		return (1 - 2*q) / math.Sqrt(2*q*(1-q))
	}
	return tUpperSearch(q, nu)
}

// tUpperSearch solves P(T > t) = q for t > 0 by safeguarded Newton steps.
func tUpperSearch(q, nu float64) float64 {
	// Bracket [lo, hi] with tUpper(lo) > q >= tUpper(hi).
	lo, hi := 0.0, 1.0
	for tUpper(hi, nu) > q {
		lo = hi
		hi *= 2
		if math.IsInf(hi, 1) {
			return hi
		}
	}
	// Start from the normal quantile: exact as df grows, and inside the
	// bracket more often than its midpoint.
	t := -NormalQuantile(q)
	if !(t > lo && t < hi) {
		t = (lo + hi) / 2
	}
	logDensityConst := lgamma((nu+1)/2) - lgamma(nu/2) - 0.5*math.Log(nu*math.Pi)
	for i := 0; i < 2000; i++ {
		f := tUpper(t, nu) - q // decreasing in t
		if f == 0 {
			return t
		}
		if f > 0 {
			lo = t
		} else {
			hi = t
		}
		density := math.Exp(logDensityConst - (nu+1)/2*log1pSquare(t/math.Sqrt(nu)))
		next := t + f/density // d(tUpper)/dt = -density
		if !(next > lo && next < hi) || density == 0 {
			next = lo + (hi-lo)/2
		}
		if next == t || math.Abs(next-t) <= 1e-15*math.Abs(t) {
			return next
		}
		if hi-lo <= 1e-15*hi {
			return lo + (hi-lo)/2
		}
		t = next
	}
	return t
}

// tUpper is P(T > t) for t >= 0 and Student's t with nu degrees of freedom.
// Two forms keep it accurate everywhere: near the centre through
// I_{t²/(nu+t²)}(1/2, nu/2), in the tail through I_{nu/(nu+t²)}(nu/2, 1/2).
func tUpper(t, nu float64) float64 {
	if t*t < nu {
		y := t * t / (nu + t*t)
		return 0.5 - 0.5*regIncBeta(0.5, nu/2, y)
	}
	// x = nu/(nu+t²) written as r²/(1+r²), r = sqrt(nu)/t < 1, so that t²
	// cannot overflow for the huge quantiles of df 1 deep in the tail.
	r := math.Sqrt(nu) / t
	x := r * r / (1 + r*r)
	return 0.5 * regIncBeta(nu/2, 0.5, x)
}

// log1pSquare is log(1+u²) without overflowing for huge u.
func log1pSquare(u float64) float64 {
	u = math.Abs(u)
	if u > 1 {
		return 2*math.Log(u) + math.Log1p(1/(u*u))
	}
	return math.Log1p(u * u)
}

// tCDF is P(T <= t) for Student's t with nu degrees of freedom.
func tCDF(t, nu float64) float64 {
	if t >= 0 {
		return 1 - tUpper(t, nu)
	}
	return tUpper(-t, nu)
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// regIncBeta is the regularized incomplete beta function I_x(a, b) for
// a, b > 0, evaluated by Lentz's continued fraction on whichever side of the
// mean converges quickly (Numerical Recipes §6.4).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	logFront := lgamma(a+b) - lgamma(a) - lgamma(b) + a*math.Log(x) + b*math.Log1p(-x)
	if x < (a+1)/(a+b+2) {
		return math.Exp(logFront) * betaContinuedFraction(a, b, x) / a
	}
	return 1 - math.Exp(logFront)*betaContinuedFraction(b, a, 1-x)/b
}

func betaContinuedFraction(a, b, x float64) float64 {
	const (
		tiny = 1e-300
		eps  = 1e-16
		// Large a or b needs O(sqrt(max(a,b))) terms; 100000 covers df far
		// beyond any run count while still bounding the loop.
		maxTerms = 100000
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxTerms; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
