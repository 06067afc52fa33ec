package mtls

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: none for echo (no DestinationRule; checked). Scenario: the
// in-mesh client calls echo's /debug, which prints the request headers.
// Expectation: echo's sidecar forwarded the client's SPIFFE identity in
// X-Forwarded-Client-Cert, i.e. the hop was mutual TLS (auto mTLS).
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.auto-without-destinationrule",
	Area:     "mtls",
	Scenario: "no DestinationRule for echo; in-mesh client -> echo /debug; X-Forwarded-Client-Cert URI",
	Measure:  autoMTLS,
})
