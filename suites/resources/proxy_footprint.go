package resources

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: the claim's load (1,000 qps) from the mode's in-mesh client to
// echo, while the kubelet's Summary API is read for the one proxy every
// request passes: the client's sidecar (sidecar mode) or the client node's
// ztunnel (ambient-l4). Expectation: HYBRID's and REVIEW's per-proxy
// figures, sidecar about 60 MiB / 0.2 vCPU, ztunnel about 12 MiB / 0.06
// vCPU; mode none records that it runs no proxy.
var _ = spec.Declare(spec.Def{
	Claim:    "resources.proxy-footprint",
	Area:     "resources",
	Scenario: "1,000 qps x 16 connections through the mode's proxy, its working set and CPU from the kubelet's Summary API during the load",
	Slow:     true,
	Measure:  proxyFootprint,
})
