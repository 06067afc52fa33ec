package rollout

import (
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Policy: the client's sidecar logs its outbound requests (Telemetry,
// Istio's built-in envoy provider), for this spec only. Scenario: the T1
// load and restart loop while echo's pods are watched; each 503 of the
// access log placed by its upstream host on the pod timeline.
// Expectation: GUIDE's hypothesis, 503s sent to pods going away.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.503-attribution",
	Area:     "rollout",
	Scenario: "the T1 run with the client sidecar's access log on; each 503's flags and upstream host against echo's pod timeline",
	Slow:     true,
	Loads:    steps.AccessLogLoads,
	Measure:  steps.RolloutAccessLog,
})
