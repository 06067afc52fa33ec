package stats

import (
	"math"
	"math/rand"
	"testing"
	"testing/quick"
)

// Reference values below were computed independently with mpmath at 40
// digits (normal: -sqrt(2)·erfinv(1-2p); t: root of the t CDF written with
// mpmath.betainc) and agree with printed tables, e.g. t(0.975, 4) = 2.776.

func TestNormalQuantileKnownValues(t *testing.T) {
	cases := []struct{ p, want float64 }{
		{0.5, 0},
		{0.975, 1.9599639845400542355},
		{0.025, -1.9599639845400542355},
		{0.995, 2.575829303548900761},
		{0.95, 1.6448536269514727149},
		{0.9, 1.281551565544600467},
		{1e-10, -6.3613409024040562047},
		// 0.999999 is not exact in binary; this is the quantile of the float64
		// nearest to it (the exact decimal gives 4.75342430882290).
		{0.999999, 4.753424308817087},
	}
	for _, c := range cases {
		got := NormalQuantile(c.p)
		if !close(got, c.want, 1e-13) {
			t.Errorf("NormalQuantile(%v) = %.17g, want %.17g", c.p, got, c.want)
		}
	}
}

func TestNormalQuantileEdges(t *testing.T) {
	if got := NormalQuantile(0); !math.IsInf(got, -1) {
		t.Errorf("NormalQuantile(0) = %v, want -Inf", got)
	}
	if got := NormalQuantile(1); !math.IsInf(got, 1) {
		t.Errorf("NormalQuantile(1) = %v, want +Inf", got)
	}
	for _, p := range []float64{-0.1, 1.1, math.NaN()} {
		if got := NormalQuantile(p); !math.IsNaN(got) {
			t.Errorf("NormalQuantile(%v) = %v, want NaN", p, got)
		}
	}
	// Deep tail, where math.Erfinv(1-2p) would already be infinite.
	if got := NormalQuantile(1e-300); math.IsInf(got, 0) || got > -37 || got < -37.1 {
		t.Errorf("NormalQuantile(1e-300) = %v, want about -37.05", got)
	}
}

// Property: the quantile inverts the CDF Φ(x) = erfc(-x/√2)/2.
func TestNormalQuantileInvertsCDF(t *testing.T) {
	f := func(u uint64) bool {
		p := (float64(u%(1<<53)) + 0.5) / (1 << 53) // (0,1)
		x := NormalQuantile(p)
		var back float64
		if p < 0.5 {
			back = 0.5 * math.Erfc(-x/math.Sqrt2)
			return close(back, p, 1e-12)
		}
		back = 0.5 * math.Erfc(x/math.Sqrt2) // upper tail, compared with 1-p
		return close(back, 1-p, 1e-12)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func TestTQuantileKnownValues(t *testing.T) {
	cases := []struct {
		p    float64
		df   int
		want float64
	}{
		{0.975, 1, 12.706204736174704646},
		{0.975, 2, 4.3026527297494638523},
		{0.975, 4, 2.7764451051977943578},
		{0.975, 30, 2.04227245630123831},
		{0.995, 10, 3.1692726726169512346},
		{0.95, 5, 2.0150483733330242378},
		{0.975, 10, 2.2281388519862747484},
		{0.975, 100, 1.9839715185235522866},
		{0.9995, 3, 12.923978636687483065},
		{0.025, 4, -2.7764451051977943578},
		{0.6, 7, 0.26316686135202281214},
		{0.999, 1000, 3.0984021639129229128},
		// Large df: lgamma cancellation limits accuracy to about 1e-10 here.
		{0.975, 1000, 1.962339080826408},
		{0.975, 10000, 1.960201239890626},
		{0.975, 100000, 1.9599877075346093},
		{0.975, 1000000, 1.9599663568141066},
	}
	for _, c := range cases {
		got := TQuantile(c.p, c.df)
		if !close(got, c.want, 1e-10) {
			t.Errorf("TQuantile(%v, %d) = %.17g, want %.17g", c.p, c.df, got, c.want)
		}
	}
	// The table values the brief names, at table precision.
	for _, c := range []struct {
		p    float64
		df   int
		want float64
	}{{0.975, 4, 2.776}, {0.975, 2, 4.303}, {0.975, 30, 2.042}} {
		if got := TQuantile(c.p, c.df); math.Abs(got-c.want) > 0.0005 {
			t.Errorf("TQuantile(%v, %d) = %v, table says %v", c.p, c.df, got, c.want)
		}
	}
}

func TestTQuantileEdges(t *testing.T) {
	// Deep tails stay finite and accurate: df 1 at p = 1e-300 is
	// -1/(π·1e-300); df 30 at 1e-20 from mpmath.
	if got := TQuantile(1e-300, 1); !close(got, -1/(math.Pi*1e-300), 1e-12) {
		t.Errorf("TQuantile(1e-300, 1) = %v", got)
	}
	if got := TQuantile(1e-20, 30); !close(got, -22.658878371940190, 1e-9) {
		t.Errorf("TQuantile(1e-20, 30) = %.17g", got)
	}
	if got := TQuantile(0.5, 3); got != 0 {
		t.Errorf("TQuantile(0.5, 3) = %v, want 0", got)
	}
	if got := TQuantile(0, 3); !math.IsInf(got, -1) {
		t.Errorf("TQuantile(0, 3) = %v, want -Inf", got)
	}
	if got := TQuantile(1, 3); !math.IsInf(got, 1) {
		t.Errorf("TQuantile(1, 3) = %v, want +Inf", got)
	}
	for _, c := range []struct {
		p  float64
		df int
	}{{0.9, 0}, {0.9, -2}, {-0.5, 3}, {1.5, 3}, {math.NaN(), 3}} {
		if got := TQuantile(c.p, c.df); !math.IsNaN(got) {
			t.Errorf("TQuantile(%v, %d) = %v, want NaN", c.p, c.df, got)
		}
	}
}

// Property: df 1 and 2 have closed forms (Cauchy: tan(π(p-½)); df 2:
// (2p-1)/sqrt(2p(1-p))). TQuantile uses them; the general incomplete-beta
// search, which serves every other df, must agree with them.
func TestTQuantileClosedForms(t *testing.T) {
	f := func(u uint32) bool {
		p := (float64(u) + 0.5) / (1 << 32)
		cauchy := math.Tan(math.Pi * (p - 0.5))
		two := (2*p - 1) / math.Sqrt(2*p*(1-p))
		q := math.Min(p, 1-p)
		searched1, searched2 := tUpperSearch(q, 1), tUpperSearch(q, 2)
		if p < 0.5 {
			searched1, searched2 = -searched1, -searched2
		}
		return close(TQuantile(p, 1), cauchy, 1e-9) && close(TQuantile(p, 2), two, 1e-9) &&
			close(searched1, cauchy, 1e-9) && close(searched2, two, 1e-9)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 3000}); err != nil {
		t.Error(err)
	}
}

// Properties: symmetric around 0, increasing in p, shrinking towards the
// normal quantile as df grows, and inverting the t CDF.
func TestTQuantileProperties(t *testing.T) {
	f := func(u uint32, d uint16) bool {
		p := 0.5 + (float64(u)+0.5)/(1<<33) // (0.5, 1)
		df := int(d%500) + 1
		q := TQuantile(p, df)
		if !(q > 0) || !close(TQuantile(1-p, df), -q, 1e-9) {
			return false
		}
		if TQuantile(math.Min(p+1e-6, 1-1e-12), df) < q {
			return false
		}
		if next := TQuantile(p, df+1); next > q || next < NormalQuantile(p)-1e-12 {
			return false
		}
		return close(tCDF(q, float64(df)), p, 1e-11)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
	// Large df: the Cornish-Fisher expansion z + (z³+z)/(4ν) is accurate to
	// O(1/ν²), an oracle independent of the incomplete beta.
	z := NormalQuantile(0.975)
	for _, df := range []int{200, 5000} {
		nu := float64(df)
		want := z + (z*z*z+z)/(4*nu)
		if got := TQuantile(0.975, df); math.Abs(got-want) > 10/(nu*nu) {
			t.Errorf("TQuantile(0.975, %d) = %.15g, Cornish-Fisher says %.15g", df, got, want)
		}
	}
}

// The t interval must cover the true mean at its nominal rate: a direct test
// that the quantile is the right one (the normal z would cover about 88%
// at n = 5, not 95%). Seeded, so the outcome is reproducible.
func TestSummarizeCoverage(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	const trials, n, mu = 20000, 5, 2.45
	covered := 0
	xs := make([]float64, n)
	for i := 0; i < trials; i++ {
		for j := range xs {
			xs[j] = mu + 0.07*rng.NormFloat64()
		}
		s, err := Summarize(xs, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if s.CI.Contains(mu) {
			covered++
		}
	}
	rate := float64(covered) / trials
	// Binomial sd of the coverage is about 0.0015; ±0.006 is 4 sd.
	if math.Abs(rate-0.95) > 0.006 {
		t.Errorf("95%% t interval covered the mean in %.4f of %d trials", rate, trials)
	}
}

func BenchmarkTQuantile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		TQuantile(0.975, 4)
	}
}

func BenchmarkNormalQuantile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		NormalQuantile(0.975)
	}
}

// close reports whether got is within rel relative error of want (absolute
// near zero).
func close(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) <= rel
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}
