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
// container and 100m per sidecar proxy): the workers' requests reached
// 1.9 and 2.0 cores and the outlier spec's Deployment stayed Pending,
// 5 min, so the spec failed. Twice that (8 cores) leaves room for the
// ambient modes' per-node agents.
var kindSmallClusterCPU = resource.MustParse("8")

// kindWorkloadSizing decides, from the cluster's nodes, whether the
// workloads request less CPU than GUIDE (LocalCPURequest), and says why.
// It returns "" when the schedulable nodes (no NoSchedule or NoExecute
// taint) have kindSmallClusterCPU or more between them: a kind cluster on
// an ordinary workstation keeps GUIDE's requests.
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
	return LocalCPURequest, fmt.Sprintf(lead, schedulable, total.String()) + fmt.Sprintf(" (below %s, where one meshed mode's pods at GUIDE's requests do not fit)",
		kindSmallClusterCPU.String())
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
	k.read.Sizing.CPURequest, k.read.Sizing.Why = kindWorkloadSizing(nodes.Items)
	if k.read.IpsetRewriter, err = findIpsetRewritingKubeRouter(ctx, cs); err != nil {
		return fmt.Errorf("-provider=kind: %w", err)
	}
	return nil
}

// readFacts is what the kind and existing providers read of a cluster at
// Start (Facts.Sizing and Facts.IpsetRewriter); its zero value, before
// Start, keeps GUIDE's requests and names no ipset rewriter.
type readFacts struct{ read Facts }
