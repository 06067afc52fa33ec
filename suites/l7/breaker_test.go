package l7

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// The breaker's load shape (the registry's setup, at test length) run for
// real through the suite's engine on loopback: against a plain echo with the
// claim's delay every answer is 200 (what ztunnel leaves: not-honoured); an
// echo answering 503 to 60% of calls stands in for the pool's overflow
// (Envoy's own 503s reach fortio as the same RetCodes): honoured. Judged as
// l7.circuit-breaking in each mode, with the wrong way round failing.
func TestBreakerJudgedOnFortioRuns(t *testing.T) {
	c := claimstest.Claim(t, "l7.circuit-breaking")
	r := spec.NewRun(c, mode.Sidecar, &spec.Env{Config: &config.Config{DurationScale: 1}}, nil)
	s, err := steps.SetupLoad(r, "http://echo/", breakerFloor)
	if err != nil {
		t.Fatal(err)
	}
	if s.QPS != 200 || s.Connections != 16 {
		t.Fatalf("breaker load %+v, want the setup's 200 qps x 16", s)
	}
	s.AllowInitialErrors = true
	s.Duration = breakerFloor // the shortest run the spec makes: zero 503s must decide there

	quiet := fortiotest.RunSpec(t, "breaker-l4", s, "delay=20ms")
	got, err := judgeBreaker(quiet.Result.RetCodes)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != steps.SplitNotHonoured {
		t.Fatalf("all-200 run: %s", got.Detail)
	}
	if v := verdict.Judge(c, mode.AmbientL4, got); v.Result != verdict.Reproduced {
		t.Errorf("ambient-l4, no 503: %s (%s)", v.Result, v.Reason)
	}
	if v := verdict.Judge(c, mode.AmbientL7, got); v.Result != verdict.NotReproduced {
		t.Errorf("a waypoint whose breaker never trips: %s", v.Result)
	}

	tripped := fortiotest.RunSpec(t, "breaker-l7", s, "delay=20ms&status=503:60")
	got, err = judgeBreaker(tripped.Result.RetCodes)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != steps.SplitHonoured {
		t.Fatalf("60%% 503 run: %s", got.Detail)
	}
	if v := verdict.Judge(c, mode.Sidecar, got); v.Result != verdict.Reproduced {
		t.Errorf("sidecar, breaker tripped: %s (%s)", v.Result, v.Reason)
	}
	if v := verdict.Judge(c, mode.AmbientL4, got); v.Result != verdict.NotReproduced {
		t.Errorf("ztunnel tripping a breaker: %s", v.Result)
	}

	// A few 503s (2%) decide nothing; a -1 or another code is a broken run.
	if got, _ := judgeBreaker(map[int]int64{200: 980, 503: 20}); got.Outcome != "" {
		t.Errorf("2%% 503s: %q", got.Outcome)
	}
	if _, err := judgeBreaker(map[int]int64{200: 990, -1: 10}); err == nil || !strings.Contains(err.Error(), "code -1") {
		t.Errorf("-1s: %v", err)
	}
	if _, err := judgeBreaker(map[int]int64{}); err == nil {
		t.Error("no answers judged")
	}
}
