package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kindNode is a node as kind's kubelet registers it: the host's cores as
// allocatable CPU, the control plane tainted NoSchedule.
func kindNode(name, cpu string, controlPlane bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	if controlPlane {
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// On this 2-core host (two workers of 2 cores: 4 schedulable) the suite's
// pods do not fit at GUIDE's requests; on a 4-core workstation (8) they do.
// The tainted control plane's cores do not count: no workload lands there.
func TestKindWorkloadSizing(t *testing.T) {
	small := []corev1.Node{kindNode("cp", "2", true), kindNode("w1", "2", false), kindNode("w2", "2", false)}
	q, why := kindWorkloadSizing(small)
	if q != LocalCPURequest || !strings.Contains(why, "2 schedulable nodes") || !strings.Contains(why, "4 allocatable") {
		t.Errorf("2-core host: %q (%q); want %s with the nodes and CPU named", q, why, LocalCPURequest)
	}
	big := []corev1.Node{kindNode("cp", "4", true), kindNode("w1", "4", false), kindNode("w2", "4", false)}
	if q, why := kindWorkloadSizing(big); q != "" || why != "" {
		t.Errorf("4-core host (8 schedulable): %q (%q); want GUIDE's requests", q, why)
	}
	// The control plane's 8 cores are tainted: still small.
	tainted := []corev1.Node{kindNode("cp", "8", true), kindNode("w1", "3", false)}
	if q, _ := kindWorkloadSizing(tainted); q != LocalCPURequest {
		t.Errorf("tainted control plane counted: %q", q)
	}
	// A single untainted control plane of 8 cores holds them.
	if q, _ := kindWorkloadSizing([]corev1.Node{kindNode("cp", "8", false)}); q != "" {
		t.Errorf("single schedulable 8-core node: %q, want GUIDE's", q)
	}
}

// The Istio values follow the sizing: none on a cluster with room, the
// local node's requests on a small one, and never istio-cni's directories
// or iptables mode (those stay Istio's defaults on kind).
func TestKindIstioValuesFollowSizing(t *testing.T) {
	k := NewKind(Options{})
	if v := k.IstioValues(); v != nil {
		t.Errorf("before Start / with room: %v, want none", v)
	}
	k.cpuRequest, k.sizingWhy = kindWorkloadSizing([]corev1.Node{kindNode("w1", "2", false)})
	v := k.IstioValues()
	px := v["istiod"]["global"].(map[string]any)["proxy"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)
	if px["cpu"] != LocalCPURequest {
		t.Errorf("sidecar request %v, want %s", px["cpu"], LocalCPURequest)
	}
	for _, key := range []string{"cniBinDir", "cniConfDir", "cniNetnsDir", "global"} {
		if _, ok := v["cni"][key]; ok {
			t.Errorf("kind sets istio-cni's %s: %v", key, v["cni"])
		}
	}
}
