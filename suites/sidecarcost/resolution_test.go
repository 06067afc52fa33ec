package sidecarcost

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// HYBRID's loads (paced 500 qps for cost-latency, l4-vs-l7 and mtls-split;
// saturation for cost-throughput) ask fortio for 10 µs or finer: HYBRID's
// no-mesh latencies are 0.23-0.54 ms, where 0.1 ms buckets are 20-40% of
// the value.
// Before issue 9 they ran at 0.1 ms.
func TestHybridLoadsAskForFineResolution(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	reg, err := claims.Load(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := &spec.Env{Config: &config.Config{DurationScale: 1}}
	r := spec.NewRun(reg.MustGet("sidecar.cost-latency"), mode.Sidecar, env, nil)
	url := "http://echo.meshclaims-sidecar:8080/"
	for name, claim := range map[string]string{"paced": "sidecar.cost-latency", "saturation": "sidecar.cost-throughput"} {
		s, err := hybridLoad(spec.NewRun(reg.MustGet(claim), mode.Sidecar, env, nil), url)
		if err != nil {
			t.Fatalf("%s load: %v", name, err)
		}
		if name == "saturation" && s.QPS != 0 {
			t.Errorf("%s load from %s: qps %g, want no limit", name, claim, s.QPS)
		}
		if got := s.Normalized().Resolution; got > 1e-5 {
			t.Errorf("%s load: resolution %g s, want <= 1e-05", name, got)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s load: %v", name, err)
		}
	}

	// HYBRID's paced load for real (500 qps x 16 connections, 1 s) through
	// the suite's engine on loopback: the analyzer accepts its percentiles,
	// and the old 0.1 ms resolution is flagged (negative control).
	s, err := hybridLoad(r, url)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = time.Second
	for _, c := range []struct {
		resolution float64
		coarse     bool
	}{{s.Resolution, false}, {1e-4, true}} {
		s.Resolution = c.resolution
		// The control needs a sub-millisecond P50 (0.1 ms is coarse only
		// below 1 ms): a contended host gets up to three tries.
		var sum fortioresult.Summary
		for attempt := 1; attempt <= 3; attempt++ {
			run := fortiotest.RunSpec(t, "hybrid", s, "delay=100us")
			res, err := fortioresult.Parse(run.Name, run.Raw)
			if err != nil {
				t.Fatal(err)
			}
			sum = fortioresult.Summarize(res)
			if !c.coarse || sum.PercentilesMs["50"] < 1 {
				break
			}
			t.Logf("control run %d: loopback P50 %v ms (host contended)", attempt, sum.PercentilesMs["50"])
		}
		if sum.Little.CoarseHistogram != c.coarse {
			t.Errorf("resolution %g s, P50 %v ms: coarse %v, want %v (%s)", c.resolution, sum.PercentilesMs["50"],
				sum.Little.CoarseHistogram, c.coarse, sum.Little.HistogramReason)
		}
	}
}
