package sidecarcost

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: PERMISSIVE (STRICT removed for the spec), then a DestinationRule
// for echo with tls DISABLE, then with ISTIO_MUTUAL.
// Scenario: HYBRID's load with each. Expectation: encryption costs about
// 0.19 ms of the sidecars' 2.2 ms (mean(on) - mean(off)).
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.mtls-cost-split",
	Area:     "sidecarcost",
	Scenario: "DestinationRule tls DISABLE vs ISTIO_MUTUAL, 500 qps x 16 connections, mean latency difference",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		if err := steps.WithoutStrict(ctx, r); err != nil {
			return verdict.Measured{}, err
		}
		t := steps.Target(r)
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			var means [2]float64
			for j, mutual := range []bool{false, true} {
				if err := steps.Apply(ctx, r, fixtures.EchoTLS(t, mutual)); err != nil {
					return 0, nil, err
				}
				steps.Settle(ctx, r, r.Env.Config.Timeouts.NetPolSettle, "istiod to push the DestinationRule")
				run, err := steps.Load(ctx, r, steps.InMesh(r), steps.RunName(map[bool]string{false: "mtls-off", true: "mtls-on"}[mutual], i), hybridLoad(r, steps.EchoURL(r)))
				if err != nil {
					return 0, nil, err
				}
				means[j] = steps.MeanMs(run)
			}
			return means[1] - means[0], map[string]float64{"mtls_off_mean_ms": means[0], "mtls_on_mean_ms": means[1]}, nil
		})
	},
})
