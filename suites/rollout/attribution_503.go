package rollout

import (
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Policy: the client's sidecar logs its outbound requests (Telemetry,
// Istio's built-in envoy provider) for the T1 baseline run only.
// Scenario: the T1 baseline run of rollout.baseline (shared: one load and
// restart loop, which has the access log on and echo's pods watched); each
// 503 of the access log placed by its upstream host on the pod timeline.
// Expectation: GUIDE's hypothesis, 503s sent to pods going away.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.503-attribution",
	Area:     "rollout",
	Scenario: "the T1 baseline run, with the client sidecar's access log on; each 503's flags and upstream host against echo's pod timeline",
	Slow:     true,
	Loads:    steps.RolloutLoads(steps.RolloutRun{}),
	Measure:  rolloutAccessLog,
})
