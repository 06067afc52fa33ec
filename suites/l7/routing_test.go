package l7

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Tallies as CountSplit makes them from SplitRequests (200) calls each, with
// echo-v1 and echo-v2 at one ready pod each (the canary set).
func TestJudgeHeaderRouting(t *testing.T) {
	c := claimstest.Claim(t, "l7.header-routing")
	pods := steps.SplitTally{V1: 1, V2: 1}
	cases := []struct {
		name          string
		with, without steps.SplitTally
		m             mode.Mode
		want          string
		result        verdict.Result
	}{
		{"the route applied (sidecar)", steps.SplitTally{V1: 0, V2: 200}, steps.SplitTally{V1: 200, V2: 0}, mode.Sidecar, steps.SplitHonoured, verdict.Reproduced},
		{"no L7 proxy: the replica share both times", steps.SplitTally{V1: 97, V2: 103}, steps.SplitTally{V1: 104, V2: 96}, mode.AmbientL4, steps.SplitNotHonoured, verdict.Reproduced},
		// Negative controls: ambient-l4 honouring the route, a waypoint that
		// ignores it, and a route without its match (all to v2) each fail.
		{"ztunnel honouring a header route is not what GUIDE says", steps.SplitTally{V1: 0, V2: 200}, steps.SplitTally{V1: 200, V2: 0}, mode.AmbientL4, steps.SplitHonoured, verdict.NotReproduced},
		{"a waypoint ignoring the route", steps.SplitTally{V1: 101, V2: 99}, steps.SplitTally{V1: 95, V2: 105}, mode.AmbientL7, steps.SplitNotHonoured, verdict.NotReproduced},
		{"everything to v2 whatever the header", steps.SplitTally{V1: 0, V2: 200}, steps.SplitTally{V1: 0, V2: 200}, mode.AmbientL7, "", verdict.Inconclusive},
		{"half the calls with the header routed", steps.SplitTally{V1: 48, V2: 152}, steps.SplitTally{V1: 200, V2: 0}, mode.Sidecar, "", verdict.Inconclusive},
	}
	for _, k := range cases {
		got, err := judgeHeaderRouting(k.with, k.without, pods)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if got.Outcome != k.want {
			t.Errorf("%s: outcome %q (%s), want %q", k.name, got.Outcome, got.Detail, k.want)
		}
		if v := verdict.Judge(c, k.m, got); v.Result != k.result {
			t.Errorf("%s [%s]: %s (%s), want %s", k.name, k.m, v.Result, v.Reason, k.result)
		}
	}
	got, _ := judgeHeaderRouting(steps.SplitTally{V1: 0, V2: 200}, steps.SplitTally{V1: 200, V2: 0}, pods)
	if *got.Count != 400 || *got.Total != 400 || !strings.Contains(got.Detail, "x-meshclaims-version: v2") {
		t.Errorf("honoured: %+v", got)
	}
	// Bad input: no v2 pod ready.
	if _, err := judgeHeaderRouting(steps.SplitTally{V1: 0, V2: 200}, steps.SplitTally{V1: 200, V2: 0}, steps.SplitTally{V1: 1}); err == nil || !strings.Contains(err.Error(), "v1=1 v2=0") {
		t.Errorf("no v2 pod: %v", err)
	}
}

// The path route's single set judged as l7.path-routing: all to v2 is
// honoured, the replica share is not; each wrong way round fails.
func TestPathRoutingJudged(t *testing.T) {
	c := claimstest.Claim(t, "l7.path-routing")
	cases := []struct {
		name   string
		tally  steps.SplitTally
		m      mode.Mode
		result verdict.Result
	}{
		{"waypoint applies the route", steps.SplitTally{V1: 0, V2: 200}, mode.AmbientL7, verdict.Reproduced},
		{"ztunnel: replica share", steps.SplitTally{V1: 106, V2: 94}, mode.AmbientL4, verdict.Reproduced},
		{"a sidecar that ignores the path", steps.SplitTally{V1: 99, V2: 101}, mode.Sidecar, verdict.NotReproduced},
		{"ztunnel routing by path", steps.SplitTally{V1: 0, V2: 200}, mode.AmbientL4, verdict.NotReproduced},
		{"the prefix rule taking /debug", steps.SplitTally{V1: 200, V2: 0}, mode.Sidecar, verdict.Inconclusive},
	}
	for _, k := range cases {
		got, err := steps.JudgeSplit(k.tally.V1, k.tally.V2, pathToV2, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(c, k.m, got); v.Result != k.result {
			t.Errorf("%s [%s]: %s (%s), want %s", k.name, k.m, v.Result, v.Reason, k.result)
		}
	}
}
