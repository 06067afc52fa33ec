package kubeproxy

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: read the mode the cluster's kube-proxy runs (kube-system/
// kube-proxy ConfigMap, config.conf), then create 10 Services for echo one
// after another and time, from the client pod, until each ClusterIP answers.
// Expectation: HYBRID's kind figure for that mode, the median of 10:
// iptables 1.04 s, ipvs 0.12 s, nftables 1.03 s. A cluster that publishes
// no kube-proxy configuration (the local provider, a kube-proxy
// replacement) is inconclusive.
var _ = spec.Declare(spec.Def{
	Claim:    "kubeproxy.kind-service-ready",
	Area:     "kubeproxy",
	Scenario: "time from Service creation until its ClusterIP answers, judged against the figure of the kube-proxy mode the cluster runs",
	Needs:    []spec.Need{needKubeProxyConfig},
	Measure:  kubeProxyServiceReady,
})
