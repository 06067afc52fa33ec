package mtls

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// plaintextToEchoPod is HYBRID's probe: curl from outside the mesh to an echo pod.
func plaintextToEchoPod(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	url, err := scenario.EchoPodURL(ctx, r, fixtures.EchoHTTPPort)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return scenario.ProbeOutcome(ctx, r, scenario.Outside(), url)
}

// Policy: none (the namespace's STRICT PeerAuthentication is removed for the spec).
// Scenario: plaintext from outside the mesh to an echo pod.
// Expectation: 200, PERMISSIVE is Istio's default.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.permissive-default",
	Area:     "mtls",
	Scenario: "no PeerAuthentication: plaintext client outside the mesh -> echo pod",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		if err := steps.WithoutStrict(ctx, r); err != nil {
			return verdict.Measurement{}, err
		}
		return plaintextToEchoPod(ctx, r)
	},
})

// Policy: STRICT (base set). Scenario: plaintext from outside.
// Expectation: no HTTP status at all; the connection is cut (curl exit 56).
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.strict-drops-connection",
	Area:     "mtls",
	Scenario: "STRICT: plaintext client outside the mesh -> echo pod",
	Measure:  plaintextToEchoPod,
})

// Policy: STRICT with portLevelMtls 8080: PERMISSIVE.
// Scenario: plaintext from outside to 8080. Expectation: 200.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.port-level-permissive",
	Area:     "mtls",
	Scenario: "STRICT with port 8080 PERMISSIVE: plaintext client outside the mesh -> echo pod:8080",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		pa := fixtures.PeerAuthPortPermissive(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, pa); err != nil {
			return verdict.Measurement{}, err
		}
		return plaintextToEchoPod(ctx, r)
	},
})
