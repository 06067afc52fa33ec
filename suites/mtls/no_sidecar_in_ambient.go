package mtls

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: read echo's pods in this mode's namespace.
// Expectation: sidecar pods carry istio-proxy (container or native sidecar);
// ambient pods carry none and are marked enrolled by istio-cni.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.no-sidecar-in-ambient",
	Area:     "mtls",
	Scenario: "echo's pods: istio-proxy container and ambient.istio.io/redirection annotation",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		pods, err := steps.EchoPods(ctx, r)
		if err != nil {
			return verdict.Measured{}, err
		}
		return steps.ProxyPlacement(r.Mode, pods), nil
	},
})
