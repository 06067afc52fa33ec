// Package canary holds GUIDE §5's traffic-splitting claims.
package canary

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: HTTPRoute on Service echo-canary (GAMMA): 90% v1, 10% v2; one
// replica each, so a split that is NOT honoured shows the replica share, 50%.
// Scenario: the in-mesh client calls echo-canary; each answer names its pod.
// Expectation: honoured with sidecar or waypoint, not with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "canary.east-west-needs-l7",
	Area:     "canary",
	Scenario: "HTTPRoute 90/10 on echo-canary; in-mesh client -> echo-canary, share of v2",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		route := fixtures.CanaryHTTPRoute(scenario.Target(r), fixtures.DefaultSplit)
		if err := scenario.ApplyAndAwait(ctx, r, route); err != nil {
			return verdict.Measurement{}, err
		}
		url := fmt.Sprintf("http://%s.%s:%d/debug", fixtures.CanaryName, r.Namespace(), fixtures.EchoHTTPPort)
		return steps.Split(ctx, r, scenario.InMesh(r), url, fixtures.DefaultSplit)
	},
})
