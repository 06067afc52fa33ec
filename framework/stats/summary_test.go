package stats

import (
	"math"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/quick"
)

func TestSummarizeKnownValues(t *testing.T) {
	// Five runs; mean 2.45, sample variance 0.00025 (sum of squared
	// deviations 0.001 over 4), t(0.975, 4) = 2.7764451051977944.
	xs := []float64{2.43, 2.44, 2.45, 2.46, 2.47}
	s, err := Summarize(xs, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(0.001 / 4)
	half := 2.7764451051977944 * sd / math.Sqrt(5)
	if s.N != 5 || !close(s.Mean, 2.45, 1e-15) || !close(s.StdDev, sd, 1e-12) ||
		s.Min != 2.43 || s.Max != 2.47 || !close(s.RelSpread, 0.04/2.45, 1e-12) {
		t.Errorf("Summarize = %+v", s)
	}
	if !close(s.CI.Low, 2.45-half, 1e-13) || !close(s.CI.High, 2.45+half, 1e-13) || s.Confidence != 0.95 {
		t.Errorf("CI = %v, want 2.45 ± %v", s.CI, half)
	}
	if !s.HasInterval() || !strings.HasPrefix(s.String(), "n=5 mean 2.45 sd 0.0158 [2.43, 2.47] 95% CI, spread 1.633%") {
		t.Errorf("String() = %q", s.String())
	}
	// Three runs at 99%: t(0.995, 2) from mpmath is 9.9248432009182887.
	s, _ = Summarize([]float64{217476, 210000, 220000}, 0.99)
	wantHalf := 9.9248432009182887 * s.StdDev / math.Sqrt(3)
	if !close(s.CI.High-s.Mean, wantHalf, 1e-9) {
		t.Errorf("99%% half width %v, want %v", s.CI.High-s.Mean, wantHalf)
	}
}

func TestSummarizeSingleValue(t *testing.T) {
	s, err := Summarize([]float64{2.63}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{N: 1, Mean: 2.63, Min: 2.63, Max: 2.63, CI: Interval{2.63, 2.63}, Confidence: 0.95}
	if s != want || s.HasInterval() {
		t.Errorf("Summarize([2.63]) = %+v, want %+v", s, want)
	}
	if got := s.String(); got != "n=1 value 2.63 (no interval from one run)" {
		t.Errorf("String() = %q", got)
	}
}

func TestSummarizeSpreadEdges(t *testing.T) {
	s, _ := Summarize([]float64{3, 3, 3}, 0.95)
	if s.RelSpread != 0 || s.StdDev != 0 || s.CI != (Interval{3, 3}) {
		t.Errorf("constant runs: %+v", s)
	}
	s, _ = Summarize([]float64{-1, 1}, 0.95)
	if !math.IsInf(s.RelSpread, 1) {
		t.Errorf("mean 0 with spread: RelSpread = %v, want +Inf", s.RelSpread)
	}
	// Large offset, tiny spread: the two-pass variance keeps its digits.
	s, _ = Summarize([]float64{1e9 + 1, 1e9 + 2, 1e9 + 3}, 0.95)
	if !close(s.StdDev, 1, 1e-9) {
		t.Errorf("StdDev of 1e9+{1,2,3} = %v, want 1", s.StdDev)
	}
}

func TestSummarizeErrors(t *testing.T) {
	cases := []struct {
		xs   []float64
		conf float64
		want string
	}{
		{nil, 0.95, "at least one value"},
		{[]float64{1, math.NaN()}, 0.95, "value 1 is NaN"},
		{[]float64{math.Inf(-1)}, 0.95, "value 0 is -Inf"},
		{[]float64{1, 2}, 1.5, "confidence 1.5 "},
	}
	for _, c := range cases {
		if _, err := Summarize(c.xs, c.conf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Summarize(%v, %v) error = %v, want %q", c.xs, c.conf, err, c.want)
		}
	}
}

// Properties: Min <= Mean <= Max, CI contains the mean, shifting every value
// shifts mean and CI and leaves StdDev alone.
func TestSummarizeProperties(t *testing.T) {
	f := func(raw []float64, shift float64) bool {
		if len(raw) == 0 {
			return true
		}
		xs := make([]float64, len(raw))
		shifted := make([]float64, len(raw))
		shift = math.Mod(shift, 1e3)
		for i, r := range raw {
			xs[i] = math.Mod(r, 1e3)
			shifted[i] = xs[i] + shift
		}
		a, err1 := Summarize(xs, 0.9)
		b, err2 := Summarize(shifted, 0.9)
		if err1 != nil || err2 != nil {
			return false
		}
		return a.Min <= a.Mean+1e-9 && a.Mean <= a.Max+1e-9 && a.CI.Contains(a.Mean) &&
			math.Abs(b.Mean-a.Mean-shift) < 1e-8 && math.Abs(b.StdDev-a.StdDev) < 1e-7*(1+a.StdDev)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestPercentileKnownValues(t *testing.T) {
	// NumPy/R type 7 on 1..10 (np.percentile(np.arange(1, 11), p)).
	xs := []float64{7, 3, 1, 10, 2, 9, 4, 8, 6, 5}
	cases := []struct{ p, want float64 }{
		{0, 1}, {100, 10}, {50, 5.5}, {25, 3.25}, {90, 9.1}, {99, 9.91}, {10, 1.9},
	}
	for _, c := range cases {
		got, err := Percentile(xs, c.p)
		if err != nil || !close(got, c.want, 1e-12) {
			t.Errorf("Percentile(1..10, %v) = %v, %v; want %v", c.p, got, err, c.want)
		}
	}
	if xs[0] != 7 || xs[9] != 5 {
		t.Errorf("Percentile modified its input: %v", xs)
	}
	if got, _ := Percentile([]float64{20.1}, 99); got != 20.1 {
		t.Errorf("Percentile of one sample = %v", got)
	}
}

func TestPercentileErrors(t *testing.T) {
	cases := []struct {
		xs   []float64
		p    float64
		want string
	}{
		{nil, 50, "at least one sample"},
		{[]float64{1, 2}, -1, "percentile -1 is not in [0,100]"},
		{[]float64{1, 2}, 101, "percentile 101"},
		{[]float64{1, 2}, math.NaN(), "percentile NaN"},
		{[]float64{1, math.NaN()}, 50, "sample 1 is NaN"},
		{[]float64{math.Inf(1)}, 50, "sample 0 is +Inf"},
	}
	for _, c := range cases {
		if _, err := Percentile(c.xs, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Percentile(%v, %v) error = %v, want %q", c.xs, c.p, err, c.want)
		}
	}
}

// Properties: increasing in p, between min and max, exact at order
// statistics, independent of the input order.
func TestPercentileProperties(t *testing.T) {
	f := func(raw []float64, seed int64, pa, pb uint16) bool {
		if len(raw) == 0 {
			return true
		}
		xs := append([]float64(nil), raw...)
		p1, p2 := float64(pa%10001)/100, float64(pb%10001)/100
		if p1 > p2 {
			p1, p2 = p2, p1
		}
		v1, err1 := Percentile(xs, p1)
		v2, err2 := Percentile(xs, p2)
		if err1 != nil || err2 != nil || v1 > v2 {
			return false
		}
		sorted := append([]float64(nil), xs...)
		sort.Float64s(sorted)
		if v1 < sorted[0] || v2 > sorted[len(sorted)-1] {
			return false
		}
		if len(sorted) > 1 {
			k := int(seed&0x7fffffff) % len(sorted)
			at, _ := Percentile(xs, 100*float64(k)/float64(len(sorted)-1))
			if math.Abs(at-sorted[k]) > 1e-9*math.Max(1, math.Abs(sorted[k])) {
				return false
			}
		}
		shuffled := append([]float64(nil), xs...)
		rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, _ := Percentile(shuffled, p1)
		return again == v1 && reflect.DeepEqual(xs, raw)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func FuzzPercentile(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 50.0)
	f.Add(-1e300, 1e300, 0.0, 99.9)
	f.Fuzz(func(t *testing.T, a, b, c, p float64) {
		v, err := Percentile([]float64{a, b, c}, p)
		if err != nil {
			return
		}
		lo, hi := math.Min(a, math.Min(b, c)), math.Max(a, math.Max(b, c))
		if math.IsNaN(v) || v < lo || v > hi {
			t.Fatalf("Percentile(%v %v %v, %v) = %v outside [%v, %v]", a, b, c, p, v, lo, hi)
		}
	})
}
