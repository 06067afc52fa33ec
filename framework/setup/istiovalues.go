package setup

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/probeset"
)

// What Istio makes of the facts a provider states of its nodes
// (cluster.Facts): the charts' values, the report's statement of
// istio-cni's mode, and where istio-cni's host probe set can be read.

// istioValues fits Istio's charts to the nodes, keyed by chart name (base,
// istiod, cni, ztunnel); the installer merges them under the user's
// -istio-values. nil where the nodes need nothing of Istio's defaults.
//
//   - Nodes too small for GUIDE's requests (f.Sizing): the injected
//     sidecars request what the workloads do (requests only; the limits
//     stay the chart's), istio-cni and ztunnel 50m per node instead of
//     100m and 200m. istiod's own 100m is already the default
//     -istio-values (testdata/istio/values.yaml).
//   - A node that is this host's processes (f.HostProcesses; the control
//     plane and the suite share its two cores): one istiod, without
//     autoscaling and with small requests.
//   - The node's CNI directories where they are not the usual ones
//     (f.CNIBinDir, f.CNIConfDir), so istio-cni chains onto the node's
//     own configuration and plugins, and the pods' network namespaces
//     where the node's runtime keeps them (f.NetnsDir).
//   - An ipset-rewriting CNI (f.IpsetRewriter): istio-cni in native
//     nftables mode (nativeNftables).
func istioValues(f cluster.Facts) map[string]map[string]any {
	v := sizedIstioValues(f.Sizing.CPURequest)
	if f.HostProcesses {
		v = withChart(v, "istiod")
		v["istiod"]["autoscaleEnabled"] = false
		v["istiod"]["replicaCount"] = 1
		v["istiod"]["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}}
	}
	for key, dir := range map[string]string{"cniBinDir": f.CNIBinDir, "cniConfDir": f.CNIConfDir, "cniNetnsDir": f.NetnsDir} {
		if dir != "" {
			v = withChart(v, "cni")
			v["cni"][key] = dir
		}
	}
	if f.IpsetRewriter != "" {
		v = withNativeNftables(v)
	}
	return v
}

// sizedIstioValues are the charts' requests sized as the workloads are
// (cpuRequest; nil when "": GUIDE's and the charts' requests).
func sizedIstioValues(cpuRequest string) map[string]map[string]any {
	if cpuRequest == "" {
		return nil
	}
	return map[string]map[string]any{
		"istiod": {
			// The injected istio-init and istio-proxy request 100m each
			// by default: on the local node 18 sidecar pods would ask for
			// 1.8 of the 2 cores.
			"global": map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": cpuRequest, "memory": "128Mi"}}}},
		},
		"cni":     {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
		"ztunnel": {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
	}
}

// withChart makes sure v (which may be nil) has values for chart and
// returns it.
func withChart(v map[string]map[string]any, chart string) map[string]map[string]any {
	if v == nil {
		v = map[string]map[string]any{}
	}
	if v[chart] == nil {
		v[chart] = map[string]any{}
	}
	return v
}

// withNativeNftables adds istio-cni's native nftables switch to v (which
// may be nil) and returns it.
//
// A CNI that rewrites every host ipset on each sync (cluster.Facts.
// IpsetRewriter: kube-router before v2.6.1, kube-router#1918; the local
// node's v2.1.0 and make kind-node-image's) wipes the pod IPs istio-cni
// adds to its iptables-mode probe ipset istio-inpod-probes-v4 between two
// syncs; the kubelet's probes of those pods then reach ztunnel unSNATed
// and STRICT mTLS denies them (on the 3-node kind cluster of make
// kind-node-image, ambient set-up failed with 2 of 6 echo pods Ready:
// docs/kind-on-podman.md, the run of 2026-12-02). In nftables mode the
// probe set is an nftables set in istio-cni's own table, which ipset never
// sees. Only istio-cni's chart reads global.nativeNftables for ambient
// (istiod's uses it for the sidecar's istio-init, which this leaves as it
// is; ztunnel's chart has no such value).
func withNativeNftables(v map[string]map[string]any) map[string]map[string]any {
	v = withChart(v, "cni")
	v["cni"]["global"] = map[string]any{"nativeNftables": true}
	return v
}

// istioCNISettings is what the report states beside the ambient numbers
// when istio-cni runs apart from Istio's defaults (native nftables mode
// over an ipset-rewriting CNI), "" when it does not.
func istioCNISettings(f cluster.Facts) string {
	switch {
	case f.IpsetRewriter == "":
		return ""
	case f.HostProcesses:
		return "native nftables (global.nativeNftables=true; the node's " + f.IpsetRewriter +
			" rewrites every host ipset each sync, kube-router#1918; Istio's default is iptables mode)"
	default:
		return "native nftables (global.nativeNftables=true): the cluster's CNI " + f.IpsetRewriter +
			" rewrites every host ipset each sync (kube-router#1918, fixed in " + cluster.KubeRouterIpsetFix +
			"), which drops pods from istio-cni's iptables-mode probe set; Istio's default is iptables mode"
	}
}

// sizingNote is what the report states when the nodes are too small for
// GUIDE's requests (f.Sizing.CPURequest set): the provider's reason, the
// workloads' requests, and Istio's sized as istioValues sizes them. On the
// local node (f.HostProcesses) it names the sidecars' requests only.
func sizingNote(f cluster.Facts) string {
	q := f.Sizing.CPURequest
	n := f.Sizing.Why + ": workload CPU requests " + q + " instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests " + q + " instead of the chart's 100m"
	if !f.HostProcesses {
		n += ", istio-cni and ztunnel 50m per node"
	}
	return n
}

// hostProbeSet reads istio-cni's host probe set where the nodes are this
// host's processes (their network namespace is the host's), and is nil
// where the suite cannot read it.
func hostProbeSet(f cluster.Facts) func(context.Context) (probeset.Set, error) {
	if !f.HostProcesses {
		return nil
	}
	return func(ctx context.Context) (probeset.Set, error) { return probeset.Read(ctx, probeset.HostRunner) }
}

// clusterValues are the chart values the provider's nodes need.
func clusterValues(p cluster.Provider) map[istio.Chart]map[string]any {
	out := map[istio.Chart]map[string]any{}
	for c, vals := range istioValues(p.Facts()) {
		out[istio.Chart(c)] = vals
	}
	return out
}
