// Package mtls holds the specs of GUIDE §1 and HYBRID's mTLS-mode claims.
package mtls

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: the mode's namespace-wide PeerAuthentication STRICT (base set).
// Scenario: the plaintext client outside the mesh calls an echo pod IP on 8080.
// Expectation: no HTTP response; how it fails (reset or EOF) is recorded.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.plaintext-blocked",
	Area:     "mtls",
	Scenario: "plaintext client outside the mesh -> echo pod IP:8080 under STRICT",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		url, err := scenario.EchoPodURL(ctx, r, fixtures.EchoHTTPPort)
		if err != nil {
			return verdict.Measurement{}, err
		}
		return scenario.ProbeOutcome(ctx, r, scenario.Outside(), url)
	},
})
