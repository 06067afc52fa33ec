package resources

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/meshclaims/meshclaims/framework/kubeletstats"
	"github.com/meshclaims/meshclaims/framework/scenario"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// container is one container of a kubelet /stats/summary pod, as the
// kubelet writes it (stats/v1alpha1 ContainerStats), in MB and millicores.
func container(name string, mb, millicores uint64) string {
	return fmt.Sprintf(`{"name":%q,"startTime":"2026-12-01T07:00:00Z",
	 "cpu":{"time":"2026-12-01T07:30:00Z","usageNanoCores":%d,"usageCoreNanoSeconds":912345678},
	 "memory":{"time":"2026-12-01T07:30:00Z","availableBytes":100000000,"usageBytes":%d,"workingSetBytes":%d,"rssBytes":30000000,"pageFaults":1234,"majorPageFaults":0},
	 "rootfs":{"time":"2026-12-01T07:30:00Z","availableBytes":1,"capacityBytes":2,"usedBytes":3,"inodesFree":4,"inodes":5,"inodesUsed":6},
	 "logs":{"time":"2026-12-01T07:30:00Z","availableBytes":1,"capacityBytes":2,"usedBytes":3,"inodesFree":4,"inodes":5,"inodesUsed":6}}`,
		name, millicores*1e6, mb*1e6+1e6, mb*1e6)
}

func podSummary(ns, name string, containers ...string) string {
	return fmt.Sprintf(`{"podRef":{"name":%q,"namespace":%q,"uid":"0b1e2f3a-4c5d-6e7f-8091-a2b3c4d5e6f7"},
	 "startTime":"2026-12-01T07:00:00Z","containers":[%s],
	 "cpu":{"time":"2026-12-01T07:30:00Z","usageNanoCores":1},"memory":{"time":"2026-12-01T07:30:00Z","workingSetBytes":1},
	 "network":{"time":"2026-12-01T07:30:00Z","name":"eth0","rxBytes":1,"txBytes":2},"process_stats":{"process_count":3}}`,
		name, ns, strings.Join(containers, ","))
}

// nodeSummary is a node's summary in a cluster running every mode side by
// side: sidecar workloads and an ingress gateway (class istio, also an
// istio-proxy) in meshclaims-sidecar, a waypoint and an ingress gateway in
// meshclaims-ambient-l7, a workload in meshclaims-ambient-l4, and in
// istio-system ztunnel (container istio-proxy), istiod and a gateway.
func nodeSummary() string {
	return `{"node":{"nodeName":"meshclaims-control-plane","startTime":"2026-12-01T06:00:00Z",
	 "cpu":{"time":"2026-12-01T07:30:00Z","usageNanoCores":500000000},"memory":{"time":"2026-12-01T07:30:00Z","workingSetBytes":2000000000}},
	 "pods":[` + strings.Join([]string{
		podSummary("meshclaims-sidecar", "echo-6b7c9d8f5-abcde", container("echo", 10, 1), container("istio-proxy", 50, 4)),
		podSummary("meshclaims-sidecar", "order-5d6f7c8b9-fghij", container("order", 10, 1), container("istio-proxy", 60, 6)),
		podSummary("meshclaims-sidecar", "echo-ingress-istio-7c8d9-klmno", container("istio-proxy", 300, 30)),
		podSummary("meshclaims-ambient-l7", "waypoint-6f7d8c9b5-pqrst", container("istio-proxy", 200, 20)),
		podSummary("meshclaims-ambient-l7", "echo-ingress-istio-5b6c7-uvwxy", container("istio-proxy", 310, 31)),
		podSummary("meshclaims-ambient-l4", "echo-6b7c9d8f5-zzzzz", container("echo", 10, 1)),
		podSummary("istio-system", "ztunnel-x7k2p", container("istio-proxy", 40, 3)),
		podSummary("istio-system", "istiod-7d9f8b6c5-x2k4p", container("discovery", 400, 40)),
		podSummary("istio-system", "istio-ingressgateway-7c9-abcde", container("istio-proxy", 320, 32)),
	}, ",") + `]}`
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// The pods as the API lists them in the mode's namespace and istio-system
// (labels as Istio's templates set them).
func apiPods() map[string]*corev1.Pod {
	gw := func(name string) map[string]string {
		return map[string]string{scenario.LabelGatewayName: name, "gateway.networking.k8s.io/gateway-class-name": "istio"}
	}
	list := []*corev1.Pod{
		pod("meshclaims-sidecar", "echo-6b7c9d8f5-abcde", map[string]string{"app": "echo"}),
		pod("meshclaims-sidecar", "order-5d6f7c8b9-fghij", map[string]string{"app": "order"}),
		pod("meshclaims-sidecar", "echo-ingress-istio-7c8d9-klmno", gw("echo-ingress")),
		pod("meshclaims-ambient-l7", "waypoint-6f7d8c9b5-pqrst", map[string]string{scenario.LabelGatewayName: "waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}),
		pod("meshclaims-ambient-l7", "echo-ingress-istio-5b6c7-uvwxy", gw("echo-ingress")),
		pod("meshclaims-ambient-l4", "echo-6b7c9d8f5-zzzzz", map[string]string{"app": "echo"}),
		pod("istio-system", "ztunnel-x7k2p", map[string]string{"app": "ztunnel", "app.kubernetes.io/name": "ztunnel"}),
		pod("istio-system", "istiod-7d9f8b6c5-x2k4p", map[string]string{"app": "istiod"}),
		pod("istio-system", "istio-ingressgateway-7c9-abcde", map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}),
	}
	out := map[string]*corev1.Pod{}
	for _, p := range list {
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

// Only the mode's own proxies count: not gateways (which are istio-proxy
// containers too), not other namespaces' proxies, not istiod.
func TestTallyProxiesCountsTheModesOwn(t *testing.T) {
	s, err := kubeletstats.Decode([]byte(nodeSummary()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		m    mode.Mode
		want map[string]float64
	}{
		{mode.Sidecar, map[string]float64{"sidecar_count": 2, "sidecar_memory_mb": 110, "sidecar_vcpu": 0.010}},
		{mode.AmbientL7, map[string]float64{"waypoint_count": 1, "waypoint_memory_mb": 200, "waypoint_vcpu": 0.020, "ztunnel_count": 1, "ztunnel_memory_mb": 40, "ztunnel_vcpu": 0.003}},
		{mode.AmbientL4, map[string]float64{"ztunnel_count": 1, "ztunnel_memory_mb": 40, "ztunnel_vcpu": 0.003}},
		{mode.None, map[string]float64{}},
	}
	for _, c := range cases {
		got := tallyProxies(c.m, c.m.Namespace(), []*statsv1alpha1.Summary{s}, apiPods())
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.m, got, c.want)
			continue
		}
		for k, v := range c.want {
			if d := got[k] - v; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: %s = %v, want %v (all: %v)", c.m, k, got[k], v, got)
			}
		}
	}
	// Negative control: without the API's labels (pods unknown) nothing is
	// taken for a proxy on its container name alone.
	if got := tallyProxies(mode.Sidecar, mode.Sidecar.Namespace(), []*statsv1alpha1.Summary{s}, nil); len(got) != 0 {
		t.Errorf("counted without pod labels: %v", got)
	}
}
