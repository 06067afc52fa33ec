// Package scale holds SCALE's claims in the scaled-down form that fits one
// cluster: a few services under the same churn pattern (rescale one service
// every second, relabel a namespace every minute).
package scale

import (
	"context"
	"time"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: saturating load on echo for 60 s (scaled) without churn, then
// with churn; first the same in the namespace without a mesh, the control.
// Expectation: throughput and P50 under churn within 20% of the quiet run
// (inconclusive when the control moves beyond that too).
var _ = spec.Declare(spec.Def{
	Claim:    "scale.churn-stability",
	Area:     "scale",
	Scenario: "saturating load on echo, quiet vs under churn (rescale every second, relabel every minute), after the same without a mesh as control",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		quiet, churned, err := ChurnRuns(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		noMeshQuiet, noMeshChurned, err := churnControl(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		return stabilityWithControl(quiet, churned, noMeshQuiet, noMeshChurned), nil
	},
})

// Scenario: the same saturating load under churn; queries per second divided
// by the CPU cores of the cluster's nodes. Expectation: order of SCALE's
// 2,178 queries per core (Cilium's comparison is out of scope).
var _ = spec.Declare(spec.Def{
	Claim:    "scale.queries-per-core",
	Area:     "scale",
	Scenario: "queries per second per node CPU core under churn",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		_, churned, err := ChurnRuns(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		cores, counted, err := NodeCores(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		r.SetSetup("saturating load on echo (16 connections, %s) under churn: %.0f qps over %s", churned.Result.ActualDuration.Round(time.Second), churned.Result.ActualQPS, counted)
		qpc := churned.Result.ActualQPS / cores
		return verdict.Measurement{Value: verdict.Float64(qpc), Extra: map[string]float64{"qps": churned.Result.ActualQPS, "cores": cores}}, nil
	},
})
