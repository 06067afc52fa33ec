package kubeproxy

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: a Service selecting echo-v1 alone; 2 s later its selector is
// patched to echo-v2 while the client pod requests the ClusterIP back to
// back; timed until echo-v2 answers; 5 times.
// Expectation: HYBRID's kind figure for the mode the cluster's kube-proxy
// runs: iptables 7-9 ms, ipvs 31-36 ms, nftables 6-8 ms.
var _ = spec.Declare(spec.Def{
	Claim:    "kubeproxy.kind-endpoint-change",
	Area:     "kubeproxy",
	Scenario: "time from changing a one-backend Service's endpoint until the new backend answers, judged against the figure of the kube-proxy mode the cluster runs",
	Needs:    []spec.Need{needKubeProxyConfig},
	Measure:  kubeProxyEndpointChange,
})
