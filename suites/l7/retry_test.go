package l7

import (
	"strings"
	"testing"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// results are the probe handler's answers as probe.ManyVia returns them:
// n500 answers 500 and the rest 200.
func flakyResults(n, n500 int) []probe.Result {
	out := make([]probe.Result, n)
	for i := range out {
		st := 200
		if i < n500 {
			st = 500
		}
		res := wp.Result{Status: st, Connected: true}
		out[i].Result = res
		out[i].Outcome, out[i].Detail = probe.Outcome(res)
	}
	return out
}

func TestRetryPolicyJudged(t *testing.T) {
	c := claimstest.Claim(t, "l7.retry-policy")
	cases := []struct {
		name   string
		n500   int
		m      mode.Mode
		result verdict.Result
	}{
		{"three retries: about 6% left (sidecar)", 13, mode.Sidecar, verdict.Reproduced},
		{"waypoint retries", 11, mode.AmbientL7, verdict.Reproduced},
		{"ztunnel: the server's half", 96, mode.AmbientL4, verdict.Reproduced},
		// Negative controls: a policy not applied where GUIDE says it is,
		// ztunnel retrying, and one retry's worth (25%) decides nothing.
		{"a sidecar that did not retry", 104, mode.Sidecar, verdict.NotReproduced},
		{"ztunnel retrying", 12, mode.AmbientL4, verdict.NotReproduced},
		{"a quarter: neither", 50, mode.AmbientL7, verdict.Inconclusive},
		// 58%: the 95% interval [51.1%, 64.6%] misses the server's 50%
		// (one time in twenty), the 99.9% one holds it: ztunnel did not retry.
		{"ztunnel: the server's half, 95% interval just above it", 116, mode.AmbientL4, verdict.Reproduced},
		{"two thirds: above the server's share by both intervals", 140, mode.AmbientL4, verdict.Inconclusive},
	}
	for _, k := range cases {
		failed, total, err := countFlaky(flakyResults(retryPolicyRequests, k.n500), retryPolicyRequests)
		if err != nil {
			t.Fatal(err)
		}
		got, err := judgeRetryPolicy(failed, total)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(c, k.m, got); v.Result != k.result {
			t.Errorf("%s [%s]: %s (%s), want %s", k.name, k.m, v.Result, v.Reason, k.result)
		}
	}
	// Broken measurements: too few calls, an answer neither 200 nor 500.
	if _, _, err := countFlaky(flakyResults(150, 10), retryPolicyRequests); err == nil || !strings.Contains(err.Error(), "150 of 200") {
		t.Errorf("too few calls: %v", err)
	}
	odd := flakyResults(retryPolicyRequests, 10)
	odd[5].Result = wp.Result{Cause: "reset", Error: "read: connection reset by peer"}
	odd[5].Outcome, odd[5].Detail = probe.Outcome(odd[5].Result)
	if _, _, err := countFlaky(odd, retryPolicyRequests); err == nil || !strings.Contains(err.Error(), "no-http-response") {
		t.Errorf("a reset among the answers: %v", err)
	}
	if _, err := judgeRetryPolicy(0, 0); err == nil {
		t.Error("no calls judged")
	}
}
