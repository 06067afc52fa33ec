package sidecarcost

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: PERMISSIVE (STRICT removed for the spec), then a DestinationRule
// for echo with tls DISABLE, then with ISTIO_MUTUAL.
// Scenario: HYBRID's load on the no-mesh echo, then with each rule, per
// repeat. Expectation: encryption is about 8% (0.19 ms of 2.2 ms) of the
// sidecars' overhead over no mesh: (on - off) / (on - none).
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.mtls-cost-split",
	Area:     "sidecarcost",
	Scenario: "no mesh, then DestinationRule tls DISABLE and ISTIO_MUTUAL, 500 qps x 16 connections: share of the overhead that is encryption",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		if err := steps.WithoutStrict(ctx, r); err != nil {
			return verdict.Measurement{}, err
		}
		t := scenario.Target(r)
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			none, err := loadOf(ctx, r, scenario.InMeshOf(r, mode.None), scenario.RunName("none", i), scenario.EchoURLOf(mode.None))
			if err != nil {
				return 0, nil, err
			}
			var means [2]float64
			for j, mutual := range []bool{false, true} {
				dr := fixtures.EchoTLS(t, mutual)
				if err := scenario.ApplyAndAwait(ctx, r, dr); err != nil {
					return 0, nil, err
				}
				run, err := loadOf(ctx, r, scenario.InMesh(r), scenario.RunName(map[bool]string{false: "mtls-off", true: "mtls-on"}[mutual], i), scenario.EchoURL(r))
				if err != nil {
					return 0, nil, err
				}
				means[j] = steps.MeanMs(run)
			}
			extra := map[string]float64{"none_mean_ms": steps.MeanMs(none), "mtls_off_mean_ms": means[0], "mtls_on_mean_ms": means[1]}
			share, err := stats.ShareOf(means[1]-means[0], means[1]-steps.MeanMs(none))
			return share, extra, err
		})
	},
})
