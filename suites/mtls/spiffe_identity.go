package mtls

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: read the echo workload's certificate where the mode keeps it
// (sidecar: istio-proxy's Envoy admin /certs; ambient: the node's ztunnel
// admin /config_dump) and the namespace's istio-ca-root-cert.
// Expectation: SPIFFE ID spiffe://cluster.local/ns/<ns>/sa/default, issued
// under the same root as every other meshed namespace of the run.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.spiffe-identity",
	Area:     "mtls",
	Scenario: "echo's workload certificate and root CA, from the proxy that holds them",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		id, err := workloadIdentity(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		return id.Measurement(), nil
	},
})
