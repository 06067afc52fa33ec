// Package l7 holds GUIDE's "L4-only's limitations": the L7 features that
// ztunnel alone cannot apply and a sidecar or a waypoint can, one claim per
// feature.
package l7

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: HTTPRoute on Service echo-canary (GAMMA): header
// x-meshclaims-version: v2 to echo-v2, everything else to echo-v1; one
// replica each. Scenario: the in-mesh client calls echo-canary's /debug 200
// times with the header and 200 times without; each answer names its pod.
// Expectation: routed as the rules say with sidecar or waypoint; the replica
// share (50/50) both times with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.header-routing",
	Area:     "l7",
	Scenario: "HTTPRoute header match on echo-canary; in-mesh client with and without the header, share of v2",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		route := fixtures.CanaryHeaderRoute(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, route); err != nil {
			return verdict.Measurement{}, err
		}
		url := fmt.Sprintf("http://%s.%s:%d/debug", fixtures.CanaryName, r.Namespace(), fixtures.EchoHTTPPort)
		return HeaderRouting(ctx, r, scenario.InMesh(r), url)
	},
})
