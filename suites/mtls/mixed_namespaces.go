package mtls

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Needs: at least two meshed modes deployed side by side in this run.
// Scenario: in this mode's namespace plaintext is refused and in-mesh calls
// succeed, while the other modes' namespaces run in the same cluster.
// Expectation: verified (each namespace enforces STRICT on its own).
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.mixed-namespaces",
	Area:     "mtls",
	Scenario: "STRICT holds per namespace with other meshed modes in the same cluster",
	Needs:    []spec.Need{steps.NeedMeshedModes(2)},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		podURL, err := steps.EchoPodURL(ctx, r, fixtures.EchoHTTPPort)
		if err != nil {
			return verdict.Measured{}, err
		}
		plain, err := steps.Probe(ctx, r, steps.Outside(), podURL)
		if err != nil {
			return verdict.Measured{}, err
		}
		inMesh, err := steps.Probe(ctx, r, steps.InMesh(r), steps.EchoURL(r))
		if err != nil {
			return verdict.Measured{}, err
		}
		detail := fmt.Sprintf("plaintext: %s; in-mesh: %s; modes side by side: %v", plain.Outcome, inMesh.Outcome, r.Env.Config.Modes)
		if plain.Outcome == "no-http-response" && inMesh.Outcome == "http-200" {
			return verdict.Measured{Outcome: "verified", Detail: detail}, nil
		}
		return verdict.Measured{Outcome: "not verified", Detail: detail}, nil
	},
})
