package sidecarcost

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: the no-mesh echo, then the same HTTP server reached through a
// Service port named tcp- (the sidecar relays bytes, L4) and through the
// http port (L7 parsing), HYBRID's load on each, per repeat.
// Expectation: HTTP parsing is about 39% of the sidecar's overhead over no
// mesh, (L7 - L4) / (L7 - none); the L4 relay keeps the rest (+1.35 ms, 61%).
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.l4-vs-l7-cost",
	Area:     "sidecarcost",
	Scenario: "no mesh, then echo via tcp-http port (L4 relay) and http port (L7): share of the overhead that is HTTP parsing",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		l4URL := fmt.Sprintf("http://%s.%s:%d/", fixtures.EchoName, r.Namespace(), fixtures.EchoTCPHTTPPort)
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			none, err := loadOf(ctx, r, scenario.InMeshOf(r, mode.None), scenario.RunName("none", i), scenario.EchoURLOf(mode.None))
			if err != nil {
				return 0, nil, err
			}
			l4, err := loadOf(ctx, r, scenario.InMesh(r), scenario.RunName("l4", i), l4URL)
			if err != nil {
				return 0, nil, err
			}
			l7, err := loadOf(ctx, r, scenario.InMesh(r), scenario.RunName("l7", i), scenario.EchoURL(r))
			if err != nil {
				return 0, nil, err
			}
			means := map[string]float64{"none_mean_ms": steps.MeanMs(none), "l4_mean_ms": steps.MeanMs(l4), "l7_mean_ms": steps.MeanMs(l7)}
			share, err := stats.ShareOf(steps.MeanMs(l7)-steps.MeanMs(l4), steps.MeanMs(l7)-steps.MeanMs(none))
			return share, means, err
		})
	},
})
