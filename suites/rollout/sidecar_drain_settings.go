package rollout

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: echo hardened with GUIDE's sidecar drain annotation only
// (proxy.istio.io/config: terminationDrainDuration 30s, proxyMetadata
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS "true"). Scenario: roll it out, wait for
// the old pods to go, read each new pod's istio-proxy environment.
// Expectation: every proxy carries both settings as the injector writes them.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.sidecar-drain-settings",
	Area:     "rollout",
	Scenario: "echo with the drain annotation rolled out; each pod's istio-proxy PROXY_CONFIG and EXIT_ON_ZERO_ACTIVE_CONNECTIONS",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		pods, err := hardenedEchoPods(ctx, r, r.Mode, fixtures.Hardening{SidecarDrain: true})
		if err != nil {
			return verdict.Measurement{}, err
		}
		return drainSettings(pods)
	},
})
