// Package resources holds REVIEW's budget model, checked as arithmetic and
// set beside the proxies' measured memory and CPU.
package resources

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Model: 100 pods; sidecars 50 MB / 0.1 vCPU each; ambient 10 ztunnels
// (50 MB / 0.1 vCPU) + 1 waypoint (200 MB / 0.5 vCPU).
// Scenario: recompute the model's MB for the mode, and read the real proxies'
// working-set memory and CPU from the kubelets' summary API.
// Expectation: the model's own numbers (5,000 MB; 700 MB) hold.
var _ = spec.Declare(spec.Def{
	Claim:    "resources.budget-model",
	Area:     "resources",
	Scenario: "REVIEW's budget model recomputed, with measured proxy memory and CPU beside it",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		const pods, sidecarMB, ztunnels, ztunnelMB, waypointMB = 100, 50.0, 10, 50.0, 200.0
		model := pods * sidecarMB
		if r.Mode == mode.AmbientL7 {
			model = ztunnels*ztunnelMB + waypointMB
		}
		m := verdict.Measured{Value: verdict.Float64(model), Extra: map[string]float64{
			"model_memory_saving": 1 - (ztunnels*ztunnelMB+waypointMB)/(pods*sidecarMB),
			"model_cpu_saving":    1 - (ztunnels*0.1+0.5)/(pods*0.1),
		}}
		usage, err := steps.ProxyUsage(ctx, r)
		if err != nil {
			return m, err
		}
		for k, v := range usage {
			m.Extra[k] = v
		}
		return m, nil
	},
})
