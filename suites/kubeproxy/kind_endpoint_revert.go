package kubeproxy

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: kubeproxy.kind-endpoint-change's trials, and right after
// echo-v2 answered, the selector patched back to echo-v1; timed until
// echo-v1 answers; 5 times.
// Expectation: HYBRID's kind figure for the mode the cluster's kube-proxy
// runs: iptables 1.02-1.03 s and nftables 1.01-1.02 s (held for
// minSyncPeriod), ipvs 60-83 ms.
var _ = spec.Declare(spec.Def{
	Claim:    "kubeproxy.kind-endpoint-revert",
	Area:     "kubeproxy",
	Scenario: "time from changing a Service's endpoint back right after a change until the first backend answers again, judged against the figure of the kube-proxy mode the cluster runs",
	Needs:    []spec.Need{needKubeProxyConfig},
	Measure:  kubeProxyEndpointRevert,
})
