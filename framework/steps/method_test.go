package steps

import (
	"strings"
	"testing"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// T5's load run for real on loopback against an echo that sleeps 0.1 ms
// (sub-millisecond, like GUIDE's no-mesh P50): at the suite's resolution no
// percentile is a bucket position; at fortio's default 1 ms (HYBRID's
// mistake) they all are, the negative control. Judged as the claim.
func TestPercentilesResolvedOnFortioRuns(t *testing.T) {
	r := latencyRun(t, "method.percentiles-off-bucket-edges")
	s, err := Steady(r)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = time.Second
	fine, err := PercentilesResolved(fortiotest.RunSpec(t, "steady-fine", s, "delay=100us"))
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(r.Claim, mode.None, fine); v.Result != verdict.Reproduced {
		t.Errorf("suite's resolution: %s (%s)", v.Result, v.Reason)
	}
	s.Resolution = 1e-3
	coarse, err := PercentilesResolved(fortiotest.RunSpec(t, "steady-1ms", s, "delay=100us"))
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(r.Claim, mode.None, coarse); v.Result != verdict.NotReproduced || !strings.Contains(coarse.Detail, "P50") {
		t.Errorf("1 ms resolution: %s (%s)", v.Result, coarse.Detail)
	}
	t.Logf("fine: %s; 1 ms: %s", fine.Detail, coarse.Detail)
}

// HYBRID's own numbers: every sub-millisecond request in fortio's first
// 1 ms bucket, percentiles interpolated to 0.5 / 0.9 / 0.99 ms.
func TestBucketPositionsHYBRID(t *testing.T) {
	h := &fortioresult.Histogram{Count: 10000, Min: 0.00012, Max: 0.00098}
	h.Data = append(h.Data, bucket(0.00012, 0.001, 10000))
	for _, p := range [][2]float64{{50, 0.0005}, {90, 0.0009}, {99, 0.00099}} {
		h.Percentiles = append(h.Percentiles, pctl(p[0], p[1]))
	}
	pos, err := BucketPositions(h)
	if err != nil || len(pos) != 3 {
		t.Fatalf("HYBRID's percentiles: %v, %v", pos, err)
	}
	if _, err := BucketPositions(&fortioresult.Histogram{}); err == nil {
		t.Error("an empty histogram was checked")
	}
	h.Percentiles = []fstats.Percentile{pctl(50, 0.5)}
	if _, err := BucketPositions(h); err == nil || !strings.Contains(err.Error(), "no bucket") {
		t.Errorf("a percentile outside the buckets: %v", err)
	}
}

func bucket(start, end float64, n int64) fstats.Bucket {
	return fstats.Bucket{Interval: fstats.Interval{Start: start, End: end}, Percent: 100, Count: n}
}

func pctl(p, v float64) fstats.Percentile { return fstats.Percentile{Percentile: p, Value: v} }
