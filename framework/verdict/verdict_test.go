package verdict

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

func registry(t *testing.T) *claims.Registry {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	reg, err := claims.Load(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func ratio(t *testing.T, ak, an, bk, bn int64) *stats.RatioEstimate {
	a, err := stats.Wilson(ak, an, Confidence)
	if err != nil {
		t.Fatal(err)
	}
	b, err := stats.Wilson(bk, bn, Confidence)
	if err != nil {
		t.Fatal(err)
	}
	r, err := stats.RateRatio(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestJudge(t *testing.T) {
	reg := registry(t)
	cases := []struct {
		name   string
		claim  string
		mode   mode.Mode
		got    Measured
		want   Result
		reason string
	}{
		{"GUIDE's own sidecar rollout numbers reproduce", "rollout.baseline", mode.Sidecar,
			Measured{Count: Int64(324), Total: Int64(60000), NoResponse: Int64(2)}, Reproduced, "503 rate 324/60000"},
		{"no 503s at all is not sidecar's 0.5%", "rollout.baseline", mode.Sidecar,
			Measured{Count: Int64(0), Total: Int64(60000), NoResponse: Int64(2)}, NotReproduced, "lies outside a factor of 3"},
		{"ambient-l4 zero 503 shown by 60,000 requests", "rollout.baseline", mode.AmbientL4,
			Measured{Count: Int64(0), Total: Int64(60000), NoResponse: Int64(195)}, Reproduced, "consistent with documented zero"},
		{"zero of 50 cannot show zero", "rollout.hardened", mode.Sidecar,
			Measured{Count: Int64(0), Total: Int64(50), NoResponse: Int64(0)}, Inconclusive, "too few requests"},
		{"hardened sidecar 503s fire the zero check", "rollout.hardened", mode.Sidecar,
			Measured{Count: Int64(100), Total: Int64(60000), NoResponse: Int64(0)}, NotReproduced, "documented zero"},
		{"-1 rate far above documented fails even when 503s match", "rollout.baseline", mode.AmbientL4,
			Measured{Count: Int64(0), Total: Int64(60000), NoResponse: Int64(3000)}, NotReproduced, "no-response (-1) rate"},
		{"mesh-free rollout is recorded, not judged", "rollout.baseline", mode.None,
			Measured{Count: Int64(12), Total: Int64(6000), NoResponse: Int64(40)}, Recorded, "nothing documented"},
		{"P50 overhead within ±0.6 ms", "latency.p50-overhead", mode.Sidecar, Measured{Value: Float64(1.6)}, Reproduced, "[0.69, 1.89]"},
		{"ambient-l4 overhead of a sidecar's size is not negligible", "latency.p50-overhead", mode.AmbientL4, Measured{Value: Float64(1.3)}, NotReproduced, ""},
		{"repeated overheads with an interval straddling the band edge", "latency.p50-overhead", mode.AmbientL4,
			Measured{Value: Float64(0.7), Runs: []float64{0.2, 1.2, 0.7}}, Inconclusive, "over 3 runs"},
		{"GUIDE's ratio reproduces", "rollout.l7-vs-sidecar", mode.AmbientL7,
			Measured{Ratio: ratio(t, 1528, 59913, 324, 60000)}, Reproduced, "ratio 4.7"},
		{"equal rates are not 5x", "rollout.l7-vs-sidecar", mode.AmbientL7,
			Measured{Ratio: ratio(t, 330, 60000, 324, 60000)}, NotReproduced, ""},
		{"plaintext blocked", "mtls.plaintext-blocked", mode.AmbientL4,
			Measured{Outcome: "no-http-response", Detail: "EOF"}, Reproduced, "(EOF) as documented"},
		{"plaintext answered is a failure", "mtls.plaintext-blocked", mode.Sidecar,
			Measured{Outcome: "http-200"}, NotReproduced, "documented no-http-response"},
		{"missing NetworkPolicy enforcement never passes", "netpol.app-port-only", mode.AmbientL4,
			Measured{Outcome: "http-200", Unmet: "networkpolicy-enforcement: the probe policy did not block"}, Inconclusive, "precondition not met"},
		{"all 200 at steady state", "latency.all-ok", mode.None,
			Measured{Count: Int64(0), Total: Int64(12000)}, Reproduced, "non-200 rate"},
		{"percentiles within 1 ms", "latency.percentiles", mode.AmbientL4,
			Measured{Percentiles: map[string]float64{"50": 0.9, "75": 1.2, "90": 1.9, "99": 2.5, "99.9": 3.5}}, Reproduced, "P99.9 3.5 vs 2.93 (ok)"},
		{"a percentile out of band", "latency.percentiles", mode.None,
			Measured{Percentiles: map[string]float64{"50": 0.9, "75": 1.2, "90": 1.9, "99": 2.5, "99.9": 9}}, NotReproduced, "P99.9 9 vs 2 (out)"},
		{"no duplicates out of 9,135", "retry.no-duplicates", mode.Sidecar,
			Measured{Count: Int64(0), Total: Int64(9135)}, Reproduced, "duplicate rate"},
		{"duplicates fire the detector", "retry.no-duplicates", mode.AmbientL7,
			Measured{Count: Int64(40), Total: Int64(7229)}, NotReproduced, "duplicate rate"},
		{"split ignored by ztunnel reproduces ambient-l4's documented value", "canary.east-west-needs-l7", mode.AmbientL4,
			Measured{Outcome: "not-honoured", Count: Int64(98), Total: Int64(200)}, Reproduced, "as documented"},
		{"an undecided split is inconclusive, not ambient-l4's not-honoured", "canary.east-west-needs-l7", mode.AmbientL4,
			Measured{Count: Int64(1), Total: Int64(3), Detail: "inconclusive: the interval contains both"}, Inconclusive, "contains both"},
		{"an undecided split is inconclusive where honoured is documented", "canary.east-west-needs-l7", mode.AmbientL7,
			Measured{Count: Int64(1), Total: Int64(3), Detail: "inconclusive: the interval contains both"}, Inconclusive, "contains both"},
		{"retries never happened: inconclusive whatever the duplicates", "retry.no-duplicates", mode.Sidecar,
			Measured{Count: Int64(0), Total: Int64(9135), Unmet: "retries: the proxy retried 0 times"}, Inconclusive, "precondition not met"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(reg.MustGet(c.claim), c.mode, c.got)
			if v.Result != c.want {
				t.Fatalf("got %s, want %s: %s", v.Result, c.want, v.Reason)
			}
			if !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("reason %q does not contain %q", v.Reason, c.reason)
			}
			if v.Passed() != (c.want == Reproduced || c.want == Recorded) {
				t.Fatalf("Passed() = %v for %s", v.Passed(), v.Result)
			}
		})
	}
}

func TestBand(t *testing.T) {
	three := 3.0
	abs := 0.5
	lo, hi, how := band(0.01, claims.Tolerance{Factor: &three, Absolute: &abs})
	if lo != 0.01-0.5 || hi != 0.51 || !strings.Contains(how, "factor of 3") {
		t.Fatalf("band = [%v, %v] %s", lo, hi, how)
	}
}
