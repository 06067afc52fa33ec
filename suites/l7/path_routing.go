package l7

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: HTTPRoute on Service echo-canary (GAMMA): path exactly /debug to
// echo-v2, prefix / to echo-v1; one replica each. Scenario: the in-mesh
// client calls echo-canary's /debug 200 times; each answer names its pod.
// Expectation: all to v2 with sidecar or waypoint; the replica share (50/50)
// with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.path-routing",
	Area:     "l7",
	Scenario: "HTTPRoute path match on echo-canary; in-mesh client -> /debug, share of v2",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		route := fixtures.CanaryPathRoute(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, route); err != nil {
			return verdict.Measurement{}, err
		}
		url := fmt.Sprintf("http://%s.%s:%d%s", fixtures.CanaryName, r.Namespace(), fixtures.EchoHTTPPort, fixtures.DebugPath)
		return PathRouting(ctx, r, scenario.InMesh(r), url)
	},
})
