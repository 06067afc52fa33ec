package l7

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: HTTPRoute on echo-canary, every request to echo-v1 with a copy to
// echo-v2. Scenario: 200 marked calls from the in-mesh client; the marked
// lines in echo-v1's and echo-v2's logs are counted. Expectation: a copy of
// each call at v2 with a sidecar or a waypoint; none with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.mirroring",
	Area:     "l7",
	Scenario: "HTTPRoute echo-canary -> echo-v1, mirror to echo-v2; 200 marked calls; copies counted in the versions' logs",
	Measure:  mirroring,
})
