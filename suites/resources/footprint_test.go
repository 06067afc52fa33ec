package resources

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/kubeletstats"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

func resources(cpuReq, memReq, cpuLim, memLim string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
	}
}

// The in-mesh client as injection leaves it with native sidecars: the
// proxy is an init container that keeps running (restartPolicy Always).
func injectedClient() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "meshclaims-sidecar", Name: "fortio-client-7d5c9b8f64-q2wzt", Labels: map[string]string{"app": "fortio-client"}},
		Spec: corev1.PodSpec{
			NodeName:       "meshclaims-local",
			InitContainers: []corev1.Container{{Name: "istio-proxy", Image: "localhost/istio/proxyv2:1.30.3-dev", RestartPolicy: &always, Resources: resources("10m", "128Mi", "2", "1Gi")}},
			Containers:     []corev1.Container{{Name: "fortio", Image: "localhost/meshclaims/workload:dev", Resources: resources("10m", "32Mi", "300m", "128Mi")}},
		},
	}
}

func ztunnelPod(name string, containers ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: istioNamespace, Name: name, Labels: map[string]string{"app": "ztunnel"}},
		Spec: corev1.PodSpec{NodeName: "meshclaims-local"}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "docker.io/istio/ztunnel:1.30.2"})
	}
	return p
}

func TestFootprintProxy(t *testing.T) {
	client := injectedClient()
	p, ref, err := footprintProxy(mode.Sidecar, client, nil)
	if err != nil || p != client || ref != (kubeletstats.ContainerRef{Namespace: "meshclaims-sidecar", Pod: "fortio-client-7d5c9b8f64-q2wzt", Container: "istio-proxy"}) {
		t.Errorf("sidecar: %v %v", ref, err)
	}
	_, ref, err = footprintProxy(mode.AmbientL4, client, []corev1.Pod{ztunnelPod("ztunnel-x7k2p", "istio-proxy")})
	if err != nil || ref != (kubeletstats.ContainerRef{Namespace: istioNamespace, Pod: "ztunnel-x7k2p", Container: "istio-proxy"}) {
		t.Errorf("ambient-l4: %v %v", ref, err)
	}
	// Negative controls: an uninjected client (no proxy container), no or
	// two ztunnels on the node, a ztunnel pod without the container, a mode
	// the claim has no figure for.
	bare := injectedClient()
	bare.Spec.InitContainers = nil
	for name, c := range map[string]struct {
		m        mode.Mode
		client   *corev1.Pod
		ztunnels []corev1.Pod
		want     string
	}{
		"uninjected":    {mode.Sidecar, bare, nil, `pod meshclaims-sidecar/fortio-client-7d5c9b8f64-q2wzt has no container "istio-proxy" (containers: fortio)`},
		"no ztunnel":    {mode.AmbientL4, client, nil, "node meshclaims-local runs 0 ztunnel pods ()"},
		"two ztunnels":  {mode.AmbientL4, client, []corev1.Pod{ztunnelPod("ztunnel-a", "istio-proxy"), ztunnelPod("ztunnel-b", "istio-proxy")}, "runs 2 ztunnel pods (ztunnel-a, ztunnel-b)"},
		"renamed":       {mode.AmbientL4, client, []corev1.Pod{ztunnelPod("ztunnel-x7k2p", "ztunnel")}, `pod istio-system/ztunnel-x7k2p has no container "istio-proxy" (containers: ztunnel)`},
		"waypoint mode": {mode.AmbientL7, client, nil, "mode ambient-l7 has no per-proxy footprint claim; accepted: sidecar, ambient-l4"},
	} {
		if _, _, err := footprintProxy(c.m, c.client, c.ztunnels); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestFootprintCaveats(t *testing.T) {
	proxy := &injectedClient().Spec.InitContainers[0]
	upstream := "proxy upstream-envoy: localhost/istio/proxyv2:1.30.3-dev, Envoy 0ebfcfe5/1.38.3/Modified/RELEASE/BoringSSL; istiod: x"
	got := strings.Join(footprintCaveats(mode.Sidecar, upstream, "10m", proxy), "; ")
	for _, want := range []string{"not istio-proxy's Envoy build", "container istio-proxy requests cpu 10m, the provider's lowered request"} {
		if !strings.Contains(got, want) {
			t.Errorf("caveats %q lack %q", got, want)
		}
	}
	// Istio's release proxy, Istio's request: nothing to say. ztunnel is
	// not Envoy, whatever the run's sidecar proxy is.
	release := "proxy istio-proxy: docker.io/istio/proxyv2:1.30.2, Envoy abc; istiod: x"
	withChart := proxy.DeepCopy()
	withChart.Resources = resources("100m", "128Mi", "2", "1Gi")
	if got := footprintCaveats(mode.Sidecar, release, "", withChart); len(got) != 0 {
		t.Errorf("release proxy: %q", got)
	}
	if got := footprintCaveats(mode.AmbientL4, upstream, "10m", withChart); len(got) != 0 {
		t.Errorf("ztunnel: %q", got)
	}
}

func TestDescribeResources(t *testing.T) {
	c := injectedClient().Spec.InitContainers[0]
	if got := describeResources(&c); got != "requests cpu 10m, memory 128Mi; limits cpu 2, memory 1Gi" {
		t.Errorf("%q", got)
	}
	if got := describeResources(&corev1.Container{}); got != "requests none; limits none" {
		t.Errorf("%q", got)
	}
}

func TestSampleUntil(t *testing.T) {
	ctx := context.Background()
	done := make(chan struct{})
	n := 0
	read := func(context.Context) (kubeletstats.Sample, error) {
		n++
		if n == 3 {
			close(done)
		}
		return kubeletstats.Sample{UsageCoreNanoSeconds: uint64(n)}, nil
	}
	got, err := SampleUntil(ctx, read, time.Millisecond, done)
	if err != nil || len(got) != 3 || got[2].UsageCoreNanoSeconds != 3 {
		t.Errorf("%v %v", got, err)
	}
	// A failed read ends the sampling with its error.
	boom := errors.New("kubelet summary of node n: the server is currently unable to handle the request")
	got, err = SampleUntil(ctx, func(context.Context) (kubeletstats.Sample, error) { return kubeletstats.Sample{}, boom }, time.Millisecond, make(chan struct{}))
	if !errors.Is(err, boom) || len(got) != 0 {
		t.Errorf("%v %v", got, err)
	}
	if _, err := SampleUntil(ctx, read, 0, done); err == nil || !strings.Contains(err.Error(), "summary poll interval 0s: must be > 0") {
		t.Errorf("poll 0: %v", err)
	}
}

// Mode none records that it has no proxy, with no number that could read
// as a proxy costing nothing; it needs no cluster.
func TestProxyFootprintNoneHasNoProxy(t *testing.T) {
	r := spec.NewRun(&claims.Claim{ID: "resources.proxy-footprint"}, mode.None, &spec.Env{}, nil)
	got, err := proxyFootprint(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Detail != noProxy || got.Value != nil || got.VCPU != nil || got.AchievedQPS != nil || r.Setup() != noProxy {
		t.Errorf("%+v, setup %q", got, r.Setup())
	}
}

func TestZtunnelsByNode(t *testing.T) {
	on := func(name, node string) corev1.Pod {
		p := ztunnelPod(name, "istio-proxy")
		p.Spec.NodeName = node
		return p
	}
	gone := on("ztunnel-old", "kind-worker")
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	mine, others := ztunnelsByNode([]corev1.Pod{on("ztunnel-c", "kind-worker2"), on("ztunnel-a", "kind-worker"), gone, on("ztunnel-b", "kind-control-plane")}, "kind-worker")
	if len(mine) != 1 || mine[0].Name != "ztunnel-a" {
		t.Errorf("client node's ztunnels: %v", mine)
	}
	if len(others) != 2 || others[0].Spec.NodeName != "kind-control-plane" || others[1].Spec.NodeName != "kind-worker2" {
		t.Errorf("other nodes' ztunnels, by node: %v", others)
	}
}

func TestZtunnelsPerNode(t *testing.T) {
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	end := start.Add(45 * time.Second)
	reading := func(s int, cpuNs uint64, mib float64) kubeletstats.Sample {
		at := start.Add(time.Duration(s) * time.Second)
		return kubeletstats.Sample{CPUTime: at, UsageCoreNanoSeconds: cpuNs, MemoryTime: at, WorkingSetBytes: uint64(mib * kubeletstats.MiB)}
	}
	client := kubeletstats.Usage{Samples: 3, WorkingSetMiB: 13.1, VCPU: 0.24}
	echoNode := &nodeSamples{node: "kind-worker2", samples: []kubeletstats.Sample{reading(5, 1e9, 9), reading(20, 4e9, 10), reading(35, 7e9, 11)}}
	failed := &nodeSamples{node: "kind-control-plane", err: errors.New("summary: 503")}
	outside := &nodeSamples{node: "kind-worker3", samples: []kubeletstats.Sample{reading(-10, 1e9, 9), reading(50, 2e9, 9)}}
	extra := map[string]float64{}
	got := ztunnelsPerNode("kind-worker", client, []*nodeSamples{failed, echoNode, outside}, start, end, extra)
	for _, want := range []string{"kind-worker 13.1 MiB / 0.240 vCPU (the client's node, the figure judged)", "kind-worker2 10.0 MiB / 0.200 vCPU",
		"kind-control-plane not read (summary: 503)", "kind-worker3 not read (0 distinct readings"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if extra["ztunnel_mib_kind-worker2"] != 10 || extra["ztunnel_vcpu_kind-worker2"] != 0.2 {
		t.Errorf("extra per node: %v", extra)
	}
	if _, ok := extra["ztunnel_mib_kind-control-plane"]; ok {
		t.Errorf("a node not read has a figure: %v", extra)
	}
	// One node: said, so a single-node figure is not read as the per-node cost of a spread mesh.
	if got := ztunnelsPerNode("meshclaims-local", client, nil, start, end, map[string]float64{}); !strings.Contains(got, "no other node runs a ztunnel") {
		t.Errorf("single node: %q", got)
	}
}
