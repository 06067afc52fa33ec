package rollout

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: echo hardened with the sidecar drain annotation only. Scenario:
// check the settings reached the proxies, delete one idle pod while
// watching it, read when its istio-proxy terminated. Expectation: within
// 20 s of the delete, well before the 30 s drain (exit on zero connections).
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.sidecar-exit-on-zero",
	Area:     "rollout",
	Scenario: "echo with the drain annotation; one idle pod deleted; istio-proxy's finish against the delete",
	Measure:  sidecarExitOnZero,
})
