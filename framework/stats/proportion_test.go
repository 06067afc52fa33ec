package stats

import (
	"math"
	"strings"
	"testing"
	"testing/quick"
)

// Wilson reference bounds computed independently with mpmath (40 digits)
// from the textbook formula (p̂ + z²/2n ± z·sqrt(p̂(1-p̂)/n + z²/4n²)) / (1 + z²/n).
func TestWilsonKnownValues(t *testing.T) {
	cases := []struct {
		k, n     int64
		conf     float64
		low, hgh float64
	}{
		{0, 60000, 0.95, 0, 6.40202148279195e-5},
		{324, 60000, 0.95, 0.00484442938165222, 0.00601889941485556},
		{1, 1, 0.95, 0.206549314377237, 1},
		{50, 100, 0.95, 0.403831530365996, 0.596168469634004},
		{1528, 59913, 0.95, 0.0242713951945408, 0.026796741648481},
		{648, 60000, 0.99, 0.00976589096898804, 0.0119422901154141},
		{3, 10, 0.9, 0.126876583903198, 0.558300204130165},
	}
	for _, c := range cases {
		p, err := Wilson(c.k, c.n, c.conf)
		if err != nil {
			t.Fatalf("Wilson(%d, %d, %v): %v", c.k, c.n, c.conf, err)
		}
		if !close(p.CI.Low, c.low, 1e-12) || !close(p.CI.High, c.hgh, 1e-12) {
			t.Errorf("Wilson(%d, %d, %v) CI = [%.15g, %.15g], want [%.15g, %.15g]",
				c.k, c.n, c.conf, p.CI.Low, p.CI.High, c.low, c.hgh)
		}
		if want := float64(c.k) / float64(c.n); p.Estimate != want {
			t.Errorf("Wilson(%d, %d) Estimate = %v, want %v", c.k, c.n, p.Estimate, want)
		}
	}
	// The brief's rounded figures.
	p, _ := Wilson(50, 100, 0.95)
	if math.Abs(p.CI.Low-0.4038) > 5e-5 || math.Abs(p.CI.High-0.5962) > 5e-5 {
		t.Errorf("50 of 100: CI %v, want [0.4038, 0.5962]", p.CI)
	}
	p, _ = Wilson(0, 60000, 0.95)
	if math.Abs(p.CI.High-6.4e-5) > 0.05e-5 {
		t.Errorf("0 of 60000: upper bound %v, want about 6.4e-5", p.CI.High)
	}
}

func TestWilsonZeroTotal(t *testing.T) {
	p, err := Wilson(0, 0, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if p.Estimate != 0 || p.CI != (Interval{0, 1}) {
		t.Errorf("Wilson(0, 0) = %+v, want estimate 0 and CI [0,1]", p)
	}
}

func TestWilsonErrorsNameTheBadValue(t *testing.T) {
	cases := []struct {
		k, n int64
		conf float64
		want string
	}{
		{0, -1, 0.95, "total -1"},
		{-3, 10, 0.95, "count -3"},
		{11, 10, 0.95, "count 11 is greater than total 10"},
		{1, 10, 0, "confidence 0 "},
		{1, 10, 1, "confidence 1 "},
		{1, 10, 95, "confidence 95 "},
		{1, 10, math.NaN(), "confidence NaN"},
	}
	for _, c := range cases {
		_, err := Wilson(c.k, c.n, c.conf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Wilson(%d, %d, %v) error = %v, want it to contain %q", c.k, c.n, c.conf, err, c.want)
		}
	}
}

// Properties: 0 <= Low <= Estimate <= High <= 1; a higher confidence gives
// a wider, nesting interval; k of n mirrors n-k of n.
func TestWilsonProperties(t *testing.T) {
	f := func(a, b uint32) bool {
		n := int64(b%1000000) + 1
		k := int64(a) % (n + 1)
		p95, err1 := Wilson(k, n, 0.95)
		p99, err2 := Wilson(k, n, 0.99)
		mirror, err3 := Wilson(n-k, n, 0.95)
		if err1 != nil || err2 != nil || err3 != nil {
			return false
		}
		ok := 0 <= p95.CI.Low && p95.CI.Low <= p95.Estimate && p95.Estimate <= p95.CI.High && p95.CI.High <= 1
		ok = ok && p99.CI.Low <= p95.CI.Low && p95.CI.High <= p99.CI.High
		ok = ok && (close(1-mirror.CI.High, p95.CI.Low, 1e-9) || math.Abs(1-mirror.CI.High-p95.CI.Low) < 1e-12)
		return ok
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func TestProportionString(t *testing.T) {
	p, _ := Wilson(324, 60000, 0.95)
	if got, want := p.String(), "324/60000 = 0.540% [0.484%, 0.602%] 95% CI"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	p, _ = Wilson(0, 60000, 0.999)
	if got, want := p.String(), "0/60000 = 0.000% [0.000%, 0.018%] 99.9% CI"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	p, _ = Wilson(0, 60000, 0.95)
	if got, want := p.String(), "0/60000 = 0.000% [0.000%, 0.0064%] 95% CI"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// GUIDE's "ambient-l7 503 rate about 5x sidecar": 1528/59913 over
// 324/60000 = 4.72. Katz reference computed with mpmath.
func TestRateRatioGuide(t *testing.T) {
	l7, _ := Wilson(1528, 59913, 0.95)
	sidecar, _ := Wilson(324, 60000, 0.95)
	r, err := RateRatio(l7, sidecar)
	if err != nil {
		t.Fatal(err)
	}
	if !close(r.Estimate, 4.72289758421316, 1e-12) ||
		!close(r.CI.Low, 4.19159605152693, 1e-12) || !close(r.CI.High, 5.32154370716159, 1e-12) {
		t.Errorf("RateRatio = %v %v, want 4.7229 [4.1916, 5.3215]", r.Estimate, r.CI)
	}
	if r.CI.Contains(1) {
		t.Errorf("GUIDE's ratio interval %v contains 1; the difference is real", r.CI)
	}
	if r.Corrected || r.Confidence != 0.95 {
		t.Errorf("RateRatio = %+v, want uncorrected at 0.95", r)
	}
	if got, want := r.String(), "4.72x [4.19x, 5.32x] 95% CI"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// Negative control: a ratio from nearly equal rates must not exclude 1, or
// "exceeds 1" verdicts would fire on noise.
func TestRateRatioNoDifferenceIncludesOne(t *testing.T) {
	a, _ := Wilson(330, 60000, 0.95)
	b, _ := Wilson(324, 60000, 0.95)
	r, err := RateRatio(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.CI.Contains(1) {
		t.Errorf("330 vs 324 of 60000: interval %v excludes 1", r.CI)
	}
	// Exactly double at 99%: reference from mpmath.
	a, _ = Wilson(648, 60000, 0.99)
	b, _ = Wilson(324, 60000, 0.99)
	r, _ = RateRatio(a, b)
	if !close(r.Estimate, 2, 1e-14) || !close(r.CI.Low, 1.67953384578732, 1e-12) || !close(r.CI.High, 2.38161321370985, 1e-12) {
		t.Errorf("648 vs 324 at 99%%: %v %v", r.Estimate, r.CI)
	}
}

func TestRateRatioZeroCounts(t *testing.T) {
	zero, _ := Wilson(0, 60000, 0.95)
	sidecar, _ := Wilson(324, 60000, 0.95)
	// ambient-l4's 0 503s over sidecar's 324: corrected to 0.5/60001 over
	// 324.5/60001 (mpmath reference).
	r, err := RateRatio(zero, sidecar)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Corrected || !close(r.Estimate, 0.00154083204930663, 1e-12) ||
		!close(r.CI.Low, 9.61739614294449e-5, 1e-12) || !close(r.CI.High, 0.0246861350919, 1e-11) {
		t.Errorf("0/60000 over 324/60000 = %+v", r)
	}
	if !r.CI.Contains(r.Estimate) || r.CI.Contains(1) {
		t.Errorf("corrected interval %v: must contain %v and exclude 1", r.CI, r.Estimate)
	}
	if got, want := r.String(), "0.00154x [9.62e-05x, 0.0247x] 95% CI (0.5 continuity correction)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// Zero in the denominator: finite and mirrored.
	inv, err := RateRatio(sidecar, zero)
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Corrected || !close(inv.Estimate, 1/r.Estimate, 1e-12) || math.IsInf(inv.CI.High, 0) {
		t.Errorf("324/60000 over 0/60000 = %+v", inv)
	}
}

func TestRateRatioErrors(t *testing.T) {
	ok, _ := Wilson(324, 60000, 0.95)
	zero, _ := Wilson(0, 60000, 0.95)
	ok99, _ := Wilson(324, 60000, 0.99)
	empty, _ := Wilson(0, 0, 0.95)
	cases := []struct {
		name string
		a, b Proportion
		want string
	}{
		{"both zero", zero, zero, "both counts are 0"},
		{"confidences differ", ok, ok99, "confidence of a 0.95 differs from confidence of b 0.99"},
		{"empty total", ok, empty, "b: total 0"},
		{"hand-built bad count", Proportion{Count: 7, Total: 5, Confidence: 0.95}, ok, "count 7 is greater than total 5"},
		{"hand-built no confidence", Proportion{Count: 1, Total: 5}, ok, "confidence 0 "},
	}
	for _, c := range cases {
		_, err := RateRatio(c.a, c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestPool(t *testing.T) {
	runs := []Proportion{}
	for _, k := range []int64{300, 324, 350} {
		p, _ := Wilson(k, 60000, 0.95)
		runs = append(runs, p)
	}
	got, err := Pool(runs...)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Wilson(974, 180000, 0.95)
	if got != want {
		t.Errorf("Pool = %v, want %v", got, want)
	}
	// Order does not matter.
	rev, _ := Pool(runs[2], runs[0], runs[1])
	if rev != got {
		t.Errorf("Pool in another order = %v, want %v", rev, got)
	}
	// Pooled interval is narrower than each run's.
	for _, r := range runs {
		if got.CI.Width() >= r.CI.Width() {
			t.Errorf("pooled width %v not narrower than run %v", got.CI.Width(), r)
		}
	}
}

func TestPoolErrors(t *testing.T) {
	a, _ := Wilson(1, 10, 0.95)
	b, _ := Wilson(1, 10, 0.99)
	cases := []struct {
		ps   []Proportion
		want string
	}{
		{nil, "at least one"},
		{[]Proportion{a, b}, "proportion 1 has confidence 0.99 but proportion 0 has 0.95"},
		{[]Proportion{a, {Count: -1, Total: 4, Confidence: 0.95}}, "proportion 1: stats: count -1"},
		{[]Proportion{{Count: 1, Total: 4, Confidence: 2}}, "confidence 2 "},
		{[]Proportion{{Total: math.MaxInt64, Confidence: 0.95}, {Total: 1, Confidence: 0.95}}, "overflows"},
	}
	for _, c := range cases {
		_, err := Pool(c.ps...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Pool(%v) error = %v, want it to contain %q", c.ps, err, c.want)
		}
	}
}

func TestIntervalContains(t *testing.T) {
	i := Interval{1, 2}
	for x, want := range map[float64]bool{0.5: false, 1: true, 1.5: true, 2: true, 2.5: false, math.NaN(): false} {
		if got := i.Contains(x); got != want {
			t.Errorf("%v.Contains(%v) = %v, want %v", i, x, got, want)
		}
	}
}

// FuzzWilson: any counts either give an error or a well-formed interval;
// never a panic or NaN.
func FuzzWilson(f *testing.F) {
	f.Add(int64(0), int64(60000), 0.95)
	f.Add(int64(324), int64(60000), 0.95)
	f.Add(int64(1), int64(1), 0.5)
	f.Add(int64(5), int64(3), 0.95)
	f.Add(int64(1)<<62, int64(1)<<62+5, 0.999999)
	f.Fuzz(func(t *testing.T, k, n int64, conf float64) {
		p, err := Wilson(k, n, conf)
		if err != nil {
			return
		}
		if math.IsNaN(p.CI.Low) || math.IsNaN(p.CI.High) ||
			!(0 <= p.CI.Low && p.CI.Low <= p.Estimate && p.Estimate <= p.CI.High && p.CI.High <= 1) {
			t.Fatalf("Wilson(%d, %d, %v) = %+v", k, n, conf, p)
		}
	})
}

func BenchmarkWilson(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_, _ = Wilson(324, 60000, 0.95)
	}
}
