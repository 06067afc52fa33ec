package sidecarcost

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: the same HTTP server reached through a Service port named tcp-
// (the sidecar relays bytes, L4) and through the http port (L7 parsing),
// HYBRID's load on each. Expectation: HTTP parsing costs about 0.87 ms.
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.l4-vs-l7-cost",
	Area:     "sidecarcost",
	Scenario: "echo via tcp-http port (L4 relay) vs http port (L7), mean latency difference",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		l4URL := fmt.Sprintf("http://%s.%s:%d/", fixtures.EchoName, r.Namespace(), fixtures.EchoTCPHTTPPort)
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			l4, err := steps.Load(ctx, r, steps.InMesh(r), steps.RunName("l4", i), hybridLoad(r, l4URL))
			if err != nil {
				return 0, nil, err
			}
			l7, err := steps.Load(ctx, r, steps.InMesh(r), steps.RunName("l7", i), hybridLoad(r, steps.EchoURL(r)))
			if err != nil {
				return 0, nil, err
			}
			return steps.MeanMs(l7) - steps.MeanMs(l4), map[string]float64{"l4_mean_ms": steps.MeanMs(l4), "l7_mean_ms": steps.MeanMs(l7)}, nil
		})
	},
})
