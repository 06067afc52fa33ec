package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kindSmallClusterCPU is the schedulable CPU below which a kind cluster
// cannot hold one meshed mode's pods at GUIDE's requests. A kind node is a
// container on the host and reports the host's cores as its allocatable
// CPU, so every node shares them. Measured on 2026-12-02 (sidecar mode,
// two workers of 2 allocatable cores each, GUIDE's 50m per workload
// container and the chart's 100m per sidecar): the
// workers' requests reached 1.9 and 2.0 cores and the outlier spec's
// Deployment stayed Pending, 5 min, so the spec failed. Twice that (8
// cores) leaves room for the ambient modes' per-node ztunnel and CNI.
var kindSmallClusterCPU = resource.MustParse("8")

// kindWorkloadSizing decides, from the cluster's nodes, whether the
// workloads and Istio request less CPU than GUIDE and the charts
// (LocalCPURequest), and says why. It returns "" when the schedulable
// nodes (no NoSchedule or NoExecute taint) have kindSmallClusterCPU or
// more between them: a kind cluster on an ordinary workstation keeps
// GUIDE's requests.
func kindWorkloadSizing(nodes []corev1.Node) (request, why string) {
	return smallClusterSizing(nodes, "kind's %d schedulable nodes share this host's cores and report %s allocatable CPU in all")
}

// smallClusterSizing is kindWorkloadSizing's rule for any cluster; lead
// says, with the count of schedulable nodes and their CPU, whose they are.
func smallClusterSizing(nodes []corev1.Node, lead string) (request, why string) {
	total := resource.Quantity{}
	schedulable := 0
	for _, n := range nodes {
		if unschedulable(n) {
			continue
		}
		schedulable++
		if c, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
			total.Add(c)
		}
	}
	if total.Cmp(kindSmallClusterCPU) >= 0 {
		return "", ""
	}
	return LocalCPURequest, fmt.Sprintf(lead, schedulable, total.String()) + fmt.Sprintf(" (below %s, where one meshed mode's pods at GUIDE's requests do not fit): workload CPU requests %s instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests %s instead of the chart's 100m, istio-cni and ztunnel 50m per node",
		kindSmallClusterCPU.String(), LocalCPURequest, LocalCPURequest)
}

func unschedulable(n corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// readSizing reads the nodes once Start has the cluster and decides the
// sizing (kindWorkloadSizing).
func (k *Kind) readSizing(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(k.RESTConfig())
	if err != nil {
		return err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("-provider=kind: reading the nodes' allocatable CPU: %w", err)
	}
	k.cpuRequest, k.sizingWhy = kindWorkloadSizing(nodes.Items)
	if k.ipsetKubeRouter, err = findIpsetRewritingKubeRouter(ctx, cs); err != nil {
		return fmt.Errorf("-provider=kind: %w", err)
	}
	return nil
}

// clusterFit is what the kind and existing providers read of a cluster at
// Start, and what follows from it for the workloads and Istio's charts.
// The zero value (before Start) keeps GUIDE's requests and Istio's
// defaults.
type clusterFit struct {
	// cpuRequest and sizingWhy: the workloads' and sidecars' CPU request
	// on a cluster too small for GUIDE's ("" otherwise).
	cpuRequest, sizingWhy string
	// ipsetKubeRouter is the image of the cluster's kube-router when it
	// rewrites every host ipset (kuberouter.go); "" otherwise.
	ipsetKubeRouter string
}

// WorkloadCPURequest implements WorkloadSizer: LocalCPURequest on a
// cluster too small for GUIDE's requests, "" (GUIDE's) otherwise and
// before Start.
func (f clusterFit) WorkloadCPURequest() (string, string) { return f.cpuRequest, f.sizingWhy }

// IstioValues implements IstioValuer: on a cluster too small for the
// charts' requests, the injected sidecars request what they do on the
// local node (requests only; the limits stay the chart's), and istio-cni
// and ztunnel 50m per node instead of 100m and 200m. istiod's own 100m is
// already the default -istio-values (testdata/istio/values.yaml). And on a
// cluster whose kube-router rewrites every host ipset (make
// kind-node-image's v2.1.0; kuberouter.go), istio-cni in native nftables
// mode, whose probe set ipset never sees. Nothing else: the CNI
// directories, and istio-cni's iptables mode on kind's own kindnetd, stay
// Istio's defaults. nil on a cluster with room and without such a CNI.
func (f clusterFit) IstioValues() map[string]map[string]any {
	v := smallClusterIstioValues(f.cpuRequest)
	if f.ipsetKubeRouter != "" {
		v = withNativeNftables(v)
	}
	return v
}

// IstioCNISettings implements IstioCNIStater: what the report states
// beside the ambient numbers when istio-cni runs apart from Istio's
// defaults, "" when it does not.
func (f clusterFit) IstioCNISettings() string {
	if f.ipsetKubeRouter == "" {
		return ""
	}
	return nftablesIstioCNI(f.ipsetKubeRouter)
}

// smallClusterIstioValues are the charts' requests sized as the workloads
// are (cpuRequest; nil when "": GUIDE's and the charts' requests).
func smallClusterIstioValues(cpuRequest string) map[string]map[string]any {
	if cpuRequest == "" {
		return nil
	}
	return map[string]map[string]any{
		"istiod": {
			"global": map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": cpuRequest, "memory": "128Mi"}}}},
		},
		"cni":     {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
		"ztunnel": {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
	}
}
