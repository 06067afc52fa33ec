package l7

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: DestinationRule on echo with a connection pool of one connection,
// one pending and one in-flight request. Scenario: fortio from the in-mesh
// client, the setup's 200 qps x 16 connections against echo ?delay=20ms.
// Expectation: most requests overflow (503) with a sidecar or a waypoint;
// none with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.circuit-breaking",
	Area:     "l7",
	Scenario: "DestinationRule pool of one on echo; fortio 200 qps x 16 against echo ?delay=20ms, share of 503",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		rule := fixtures.EchoBreaker(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, rule); err != nil {
			return verdict.Measurement{}, err
		}
		return circuitBreaking(ctx, r)
	},
})
