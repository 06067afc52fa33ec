package canary

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: an ingress Gateway (class istio) in the mode's namespace and an
// HTTPRoute attached to it splitting 90/10 between echo-v1 and echo-v2.
// Scenario: the client outside the mesh calls the gateway.
// Expectation: honoured whatever the backend's mode (the gateway routes on L7).
var _ = spec.Declare(spec.Def{
	Claim:    "canary.ingress-with-l4",
	Area:     "canary",
	Scenario: "ingress Gateway + HTTPRoute 90/10; outside client -> gateway, share of v2",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		t := scenario.Target(r)
		if err := scenario.Apply(ctx, r, fixtures.IngressGateway(t), fixtures.IngressCanaryRoute(t, fixtures.DefaultSplit)); err != nil {
			return verdict.Measurement{}, err
		}
		url, err := steps.IngressReachedBy(ctx, r, scenario.Outside(), "/debug")
		if err != nil {
			return verdict.Measurement{}, err
		}
		return steps.Split(ctx, r, scenario.Outside(), url, fixtures.DefaultSplit)
	},
})
