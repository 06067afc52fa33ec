package sidecarcost

import (
	"context"
	"fmt"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: unary gRPC pings (fortio's grpc runner) at 500 qps to echo's
// gRPC port, no mesh vs sidecar. Expectation: +3.4 ms mean latency.
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.grpc-latency",
	Area:     "sidecarcost",
	Scenario: "fortio grpc ping 500 qps x 16 connections, no mesh vs sidecar, mean latency",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		d := r.Env.Config.Scale(25*time.Second, 5*time.Second)
		target := func(m mode.Mode) string {
			return fmt.Sprintf("%s.%s:%d", fixtures.EchoName, m.Namespace(), fixtures.EchoGRPCPort)
		}
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			base, err := steps.GRPCLoad(ctx, r, scenario.InMeshOf(r, mode.None), scenario.RunName("grpc-none", i), target(mode.None), 500, 16, d)
			if err != nil {
				return 0, nil, err
			}
			side, err := steps.GRPCLoad(ctx, r, scenario.InMesh(r), scenario.RunName("grpc-sidecar", i), target(r.Mode), 500, 16, d)
			if err != nil {
				return 0, nil, err
			}
			return side - base, map[string]float64{"none_mean_ms": base, "sidecar_mean_ms": side}, nil
		})
	},
})
