package stats_test

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/stats"
)

// GUIDE's rollout baseline: 503s out of requests, per mode, and the claim
// that ambient-l7's 503 rate is about 5x sidecar's.
func ExampleRateRatio() {
	sidecar, _ := stats.Wilson(324, 60000, 0.95)
	l7, _ := stats.Wilson(1528, 59913, 0.95)
	ratio, _ := stats.RateRatio(l7, sidecar)
	fmt.Println(sidecar)
	fmt.Println(l7)
	fmt.Println(ratio, "excludes 1:", !ratio.CI.Contains(1))
	// Output:
	// 324/60000 = 0.540% [0.484%, 0.602%] 95% CI
	// 1528/59913 = 2.550% [2.427%, 2.680%] 95% CI
	// 4.72x [4.19x, 5.32x] 95% CI excludes 1: true
}

// Zero failures still bound the rate: 0 of 60000 is below 0.0064% at 95%.
func ExampleWilson() {
	p, _ := stats.Wilson(0, 60000, 0.95)
	fmt.Println(p)
	// Output: 0/60000 = 0.000% [0.000%, 0.0064%] 95% CI
}

// HYBRID's lesson: a 1 ms histogram cannot report a 0.232 ms P50.
func ExampleLittlesLaw() {
	c := stats.LittlesLaw(16, 217476, 0, 0.0000736, 0.000232, 0.001, 0.1)
	fmt.Println(c.OK())
	fmt.Println(c.Reason)
	// Output:
	// false
	// mean 0.0736 ms matches Little's law 16 connections / 217476.0 qps = 0.0736 ms (off by 0.039%, tolerance 10.000%); histogram resolution 1.000 ms is coarser than a tenth of P50 0.232 ms: percentiles are bucket positions
}

// Five repeated runs of HYBRID's sidecar mean latency, in ms.
func ExampleSummarize() {
	s, _ := stats.Summarize([]float64{2.43, 2.44, 2.45, 2.46, 2.47}, 0.95)
	fmt.Println(s)
	// Output: n=5 mean 2.45 sd 0.0158 [2.43, 2.47] 95% CI, spread 1.633%
}

// Three rollout runs pooled into one rate.
func ExamplePool() {
	a, _ := stats.Wilson(300, 60000, 0.95)
	b, _ := stats.Wilson(324, 60000, 0.95)
	c, _ := stats.Wilson(350, 60000, 0.95)
	p, _ := stats.Pool(a, b, c)
	fmt.Println(p)
	// Output: 974/180000 = 0.541% [0.508%, 0.576%] 95% CI
}

func ExampleErrorsPerCycle() {
	sidecar, _ := stats.ErrorsPerCycle(324, 42)
	l7, _ := stats.ErrorsPerCycle(1528, 65)
	fmt.Printf("sidecar %.1f, ambient-l7 %.1f 503s per rollout cycle\n", sidecar.PerCycle, l7.PerCycle)
	// Output: sidecar 7.7, ambient-l7 23.5 503s per rollout cycle
}

func ExamplePercentile() {
	intervals := []float64{20.0, 20.1, 20.1, 20.2, 20.3, 22.0} // ms between events
	// P99 rank 0.99·5 = 4.95: 20.3 + 0.95·(22.0-20.3) = 21.915, which is 21.9149… in binary.
	p50, _ := stats.Percentile(intervals, 50)
	p99, _ := stats.Percentile(intervals, 99)
	fmt.Printf("median %.2f ms, P99 %.2f ms\n", p50, p99)
	// Output: median 20.15 ms, P99 21.91 ms
}
