package l7

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: DestinationRule on echo-outlier ejecting an endpoint after one
// 5xx. Scenario: echo-outlier has a healthy pod and one failing every
// plain call; both are seen answering before the rule; then 200 calls from
// the in-mesh client. Expectation: the failing pod ejected (almost no 500s)
// with a sidecar or a waypoint; half the calls failing with ztunnel alone.
var _ = spec.Declare(spec.Def{
	Claim:    "l7.outlier-detection",
	Area:     "l7",
	Scenario: "echo-outlier (healthy + failing pod); DestinationRule outlierDetection consecutive5xxErrors 1; 200 calls, share of 500",
	Measure:  outlierDetection,
})
