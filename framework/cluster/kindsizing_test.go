package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
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

// kind states the sizing it read among its facts, with its nodes sharing
// the host; before Start (and with room) GUIDE's requests.
func TestKindFactsFollowSizing(t *testing.T) {
	k := NewKind(Options{})
	if f := k.Facts(); f != (Facts{NodesShareHost: true}) {
		t.Errorf("before Start / with room: %+v, want only NodesShareHost", f)
	}
	k.read.Sizing.CPURequest, k.read.Sizing.Why = kindWorkloadSizing([]corev1.Node{kindNode("w1", "2", false)})
	f := k.Facts()
	const why = "kind's 1 schedulable nodes share this host's cores and report 2 allocatable CPU in all (below 8, where one meshed mode's pods at GUIDE's requests do not fit)"
	if f.Sizing != (Sizing{LocalCPURequest, why}) || !f.NodesShareHost {
		t.Errorf("small cluster: %+v, want %s because %q", f, LocalCPURequest, why)
	}
	if f.HostProcesses || f.CNIBinDir != "" || f.CNIConfDir != "" || f.NetnsDir != "" || f.IpsetRewriter != "" {
		t.Errorf("kind states facts it did not read: %+v", f)
	}
}

// -provider=existing sizes as kind does, from the nodes it reads at Start
// (a real API server; the nodes registered as a kubelet would): a 2-core
// node, as the local cluster CI qualifies through this provider, gets the
// smaller requests and says so; nodes with 8 cores keep GUIDE's. Found on
// the first sidecar run through -provider=existing: echo's sixth replica
// stayed Pending behind GUIDE's requests on the 2-core node.
func TestExistingProviderSizesASmallCluster(t *testing.T) {
	srv := apiserver.NewForTest(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(path, "envtest"); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	node := func(name, cpu string) {
		n := kindNode(name, cpu, false)
		created, err := cs.CoreV1().Nodes().Create(context.Background(), &n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The API server's TaintNodesByCondition admission taints a new
		// node not-ready (NoSchedule) until a kubelet reports Ready; as
		// a running node's, the taint goes.
		created.Spec.Taints = nil
		if created, err = cs.CoreV1().Nodes().Update(context.Background(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node("small", "2")
	e := NewExisting(KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	q, why := e.Facts().Sizing.CPURequest, e.Facts().Sizing.Why
	if q != LocalCPURequest || !strings.Contains(why, "the cluster's 1 schedulable nodes report 2 allocatable CPU") {
		t.Errorf("2-core cluster: %q (%q)", q, why)
	}
	if f := e.Facts(); f.HostProcesses || f.NodesShareHost || f.CNIBinDir != "" || f.IpsetRewriter != "" {
		t.Errorf("2-core cluster: facts %+v state more than the sizing", f)
	}
	node("big", "6")
	e = NewExisting(KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := e.Facts(); f != (Facts{}) {
		t.Errorf("8 cores between the nodes: %+v, want GUIDE's requests", f)
	}
}
