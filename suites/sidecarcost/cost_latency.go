// Package sidecarcost holds HYBRID's measurements of what a sidecar costs:
// latency, throughput, the share of encryption and of HTTP parsing, gRPC,
// one large download and the spacing of server-sent events. Each compares
// the sidecar namespace with the no-mesh baseline of the same run.
package sidecarcost

import (
	"context"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// hybridLoad is HYBRID's load as the claim's registry setup states it
// (500 qps, 16 connections, 25 s or 20 s; saturated for throughput),
// scaled, at least 5 s, at load.LatencyResolution: HYBRID's no-mesh
// latencies are 0.2-0.5 ms.
func hybridLoad(r *spec.Run, url string) (load.Spec, error) {
	return steps.LatencyLoad(r, url, 5*time.Second)
}

// loadOf runs HYBRID's load from client c against url.
func loadOf(ctx context.Context, r *spec.Run, c probe.Client, name, url string) (*load.Run, error) {
	s, err := hybridLoad(r, url)
	if err != nil {
		return nil, err
	}
	return steps.Load(ctx, r, c, name, s)
}

// Scenario: HYBRID's load against echo in the no-mesh namespace and in the
// sidecar namespace (sidecars on both ends, mTLS), -repeats times (HYBRID: 5).
// Expectation: mean latency +2.2 ms (about 10x).
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.cost-latency",
	Area:     "sidecarcost",
	Scenario: "500 qps x 16 connections x 25 s, no mesh vs sidecar+mTLS, mean latency",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			base, err := loadOf(ctx, r, scenario.InMeshOf(r, mode.None), scenario.RunName("none", i), scenario.EchoURLOf(mode.None))
			if err != nil {
				return 0, nil, err
			}
			side, err := loadOf(ctx, r, scenario.InMesh(r), scenario.RunName("sidecar", i), scenario.EchoURL(r))
			if err != nil {
				return 0, nil, err
			}
			return steps.MeanMs(side) - steps.MeanMs(base), map[string]float64{"none_mean_ms": steps.MeanMs(base), "sidecar_mean_ms": steps.MeanMs(side)}, nil
		})
	},
})

// Scenario: fortio with no qps limit for 20 s (scaled), no mesh vs sidecar.
// Expectation: the sidecar reaches 7.5% of the no-mesh throughput.
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.cost-throughput",
	Area:     "sidecarcost",
	Scenario: "saturation (no qps limit) x 16 connections x 20 s, sidecar qps / no-mesh qps",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			base, err := loadOf(ctx, r, scenario.InMeshOf(r, mode.None), scenario.RunName("none-max", i), scenario.EchoURLOf(mode.None))
			if err != nil {
				return 0, nil, err
			}
			side, err := loadOf(ctx, r, scenario.InMesh(r), scenario.RunName("sidecar-max", i), scenario.EchoURL(r))
			if err != nil {
				return 0, nil, err
			}
			extra := map[string]float64{"none_qps": base.Result.ActualQPS, "sidecar_qps": side.Result.ActualQPS}
			steps.LittleCheck(r, side, extra)
			return side.Result.ActualQPS / base.Result.ActualQPS, extra, nil
		})
	},
})
