package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Newcombe (1998) Table II, example (a): 56/70 vs 48/80, method 10 gives
// 0.0524 to 0.3339 for the difference 0.2.
func TestProportionDifferenceMatchesNewcombe(t *testing.T) {
	a, _ := Wilson(48, 80, 0.95)
	b, _ := Wilson(56, 70, 0.95)
	d, err := ProportionDifference(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.Estimate-0.2) > 1e-9 || math.Abs(d.CI.Low-0.0524) > 5e-4 || math.Abs(d.CI.High-0.3339) > 5e-4 || !d.Significant() {
		t.Fatalf("got %+v, want 0.2 [0.0524, 0.3339]", d)
	}
	// Same counts: no change, interval around 0.
	same, _ := ProportionDifference(a, a)
	if same.Estimate != 0 || same.Significant() {
		t.Fatalf("identical proportions: %+v", same)
	}
	// 0/60000 vs 0/60000 is no change; 0 vs 330 of 60000 is one.
	z, _ := Wilson(0, 60000, 0.95)
	r, _ := Wilson(330, 60000, 0.95)
	if d, _ := ProportionDifference(z, z); d.Significant() {
		t.Errorf("0 vs 0: %+v", d)
	}
	if d, _ := ProportionDifference(z, r); !d.Significant() || d.CI.Low <= 0 {
		t.Errorf("0 vs 330 of 60000: %+v", d)
	}
	if _, err := ProportionDifference(Proportion{Count: 1, Total: 0}, z); err == nil {
		t.Error("1 of 0 accepted")
	}
}

func TestMeanDifferenceWelch(t *testing.T) {
	d, err := MeanDifference([]float64{1, 1.1, 0.9, 1.0}, []float64{2, 2.1, 1.9, 2.0}, 0.95)
	if err != nil || math.Abs(d.Estimate-1) > 1e-9 || !d.Significant() {
		t.Fatalf("%+v %v", d, err)
	}
	d, _ = MeanDifference([]float64{1, 1.1, 0.9}, []float64{1.05, 0.95, 1.0}, 0.95)
	if d.Significant() {
		t.Fatalf("noise called a change: %+v", d)
	}
	if _, err := MeanDifference([]float64{1}, []float64{1, 2}, 0.95); err == nil {
		t.Error("one run accepted")
	}
}

func TestPermutationPValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	same := []float64{0, 0.01, 0, 0.02, 0}
	p, err := PermutationPValue(same, same, 999, rng)
	if err != nil || p != 1 {
		t.Fatalf("identical sides: p %g, %v; want 1", p, err)
	}
	p, err = PermutationPValue([]float64{0, 0.001, 0, 0.002, 0.001, 0}, []float64{0.03, 0.02, 0.04, 0.025, 0.035, 0.03}, 999, rng)
	if err != nil || p > 0.01 {
		t.Fatalf("separated sides: p %g, %v; want <= 0.01", p, err)
	}
	// Reproducible with the same seed.
	a, b := []float64{0, 0.01, 0.03}, []float64{0.02, 0, 0.05, 0.01}
	p1, _ := PermutationPValue(a, b, 999, rand.New(rand.NewPCG(7, 7)))
	p2, _ := PermutationPValue(a, b, 999, rand.New(rand.NewPCG(7, 7)))
	if p1 != p2 {
		t.Fatalf("same seed gave %g and %g", p1, p2)
	}
	if _, err := PermutationPValue([]float64{1}, b, 99, rng); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Fatalf("one value accepted: %v", err)
	}
}
