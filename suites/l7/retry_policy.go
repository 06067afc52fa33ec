package l7

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: VirtualService on echo, retries attempts 3 on 5xx. Scenario: the
// in-mesh client calls echo 200 times with ?status=500:50 (fortio answers
// 500 to half). Expectation: with a sidecar or a waypoint the client sees
// few 500s (0.5^4 = 6.25%); with ztunnel alone, the server's half.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.retry-policy",
	Area:     "l7",
	Scenario: "VirtualService retries 3 x 5xx on echo; in-mesh client -> echo?status=500:50, share of 500s seen",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		policy := fixtures.EchoRetries(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, policy); err != nil {
			return verdict.Measurement{}, err
		}
		url := fmt.Sprintf("http://%s.%s:%d/?%s", fixtures.EchoName, r.Namespace(), fixtures.EchoHTTPPort, fixtures.FlakyQuery())
		return RetryPolicy(ctx, r, scenario.InMesh(r), url)
	},
})
