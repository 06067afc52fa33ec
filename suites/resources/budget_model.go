// Package resources holds REVIEW's budget model, judged with measured
// proxy memory in place of its assumed inputs, and the per-proxy working
// set and CPU under load that HYBRID and REVIEW cite.
package resources

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// The model: 100 pods; a sidecar per pod; or 10 ztunnels (one per node) and
// one waypoint.
const (
	modelPods     = 100
	modelZtunnels = 10
)

// Scenario: read the working-set memory and CPU of the running proxies from
// the kubelets' summary API (sidecars in sidecar mode; ztunnels and the
// waypoint in ambient-l7) and put the measured per-proxy averages into the
// model's formula. Expectation: REVIEW's totals (5,000 MB for sidecars,
// 700 MB for ambient) within the tolerance.
var _ = spec.Declare(spec.Def{
	Claim:    "resources.budget-model",
	Area:     "resources",
	Scenario: "REVIEW's budget model with measured proxy working sets as its inputs",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		u, err := ProxyUsage(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		avg := func(kind string) (float64, error) {
			n := u[kind+"_count"]
			if n == 0 {
				return 0, fmt.Errorf("no %s proxy is running: nothing to measure the model's %s input with", kind, kind)
			}
			return u[kind+"_memory_mb"] / n, nil
		}
		var total float64
		if r.Mode == mode.Sidecar {
			sc, err := avg("sidecar")
			if err != nil {
				return verdict.Measurement{}, err
			}
			total = modelPods * sc
		} else {
			zt, err := avg("ztunnel")
			if err != nil {
				return verdict.Measurement{}, err
			}
			wp, err := avg("waypoint")
			if err != nil {
				return verdict.Measurement{}, err
			}
			total = modelZtunnels*zt + wp
		}
		r.SetSetup("model formula with measured per-proxy working sets: %d pods with sidecars, or %d ztunnels + 1 waypoint", modelPods, modelZtunnels)
		return verdict.Measurement{Value: verdict.Float64(total), Extra: u}, nil
	},
})
