package steps

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kubeletstats"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// NoProxy is what a footprint records in mode none: there is no proxy to
// read, and a zero would read as a proxy that costs nothing.
const NoProxy = "no proxy: mode none runs no sidecar and no ztunnel, so there is no proxy footprint to measure"

// FootprintFloor is the shortest footprint load: the kubelet refreshes a
// container's stats every 10-15 s, and CPU needs two of its readings inside
// the load, so 45 s leaves at least three at the slowest refresh.
const FootprintFloor = 45 * time.Second

// FootprintProxy names the proxy container whose footprint mode m's load
// shows, given the in-mesh client pod that sends the load and the ztunnel
// pods on that client's node: in sidecar mode the client's own sidecar
// (every request of the load passes it, outbound), in ambient-l4 the
// client node's ztunnel. A pod without the container, no ztunnel or more
// than one on the node, or another mode is an error naming what was found.
func FootprintProxy(m mode.Mode, client *corev1.Pod, ztunnels []corev1.Pod) (*corev1.Pod, kubeletstats.ContainerRef, error) {
	var p *corev1.Pod
	switch m {
	case mode.Sidecar:
		p = client
	case mode.AmbientL4:
		if len(ztunnels) != 1 {
			var names []string
			for _, z := range ztunnels {
				names = append(names, z.Name)
			}
			return nil, kubeletstats.ContainerRef{}, fmt.Errorf("node %s runs %d ztunnel pods (%s); the footprint reads exactly one", client.Spec.NodeName, len(ztunnels), strings.Join(names, ", "))
		}
		p = &ztunnels[0]
	default:
		return nil, kubeletstats.ContainerRef{}, fmt.Errorf("mode %s has no per-proxy footprint claim; accepted: %s, %s", m, mode.Sidecar, mode.AmbientL4)
	}
	if _, err := containerOf(p, proxyContainer); err != nil {
		return nil, kubeletstats.ContainerRef{}, err
	}
	return p, kubeletstats.ContainerRef{Namespace: p.Namespace, Pod: p.Name, Container: proxyContainer}, nil
}

// containerOf finds a container of the pod's spec by name, among its
// containers and its init containers (Istio's native sidecar is an init
// container that keeps running).
func containerOf(p *corev1.Pod, name string) (*corev1.Container, error) {
	var names []string
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
			names = append(names, list[i].Name)
		}
	}
	sort.Strings(names)
	return nil, fmt.Errorf("pod %s/%s has no container %q (containers: %s)", p.Namespace, p.Name, name, strings.Join(names, ", "))
}

// DescribeResources says what a container requested and may use, from its
// spec: the figures a footprint on a small node must be read beside.
func DescribeResources(c *corev1.Container) string {
	q := func(l corev1.ResourceList) string {
		var parts []string
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := l[n]; ok {
				parts = append(parts, string(n)+" "+v.String())
			}
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("requests %s; limits %s", q(c.Resources.Requests), q(c.Resources.Limits))
}

// FootprintCaveats says, beside the numbers, where this run's proxy is not
// the one the documented figures describe: a sidecar that is upstream
// Envoy rather than istio-proxy's Envoy build (proxyEnv is the run's
// spec.Env.Proxy), and a CPU request the provider lowered for its small
// node (providerCPURequest, fixtures.Images.CPURequest), which under
// contention decides the proxy's CPU share.
func FootprintCaveats(m mode.Mode, proxyEnv, providerCPURequest string, ctr *corev1.Container) []string {
	var out []string
	if m == mode.Sidecar && strings.HasPrefix(proxyEnv, "proxy "+string(istio.ProxyUpstreamEnvoy)+":") {
		out = append(out, "the sidecar is upstream Envoy (proxy kind "+string(istio.ProxyUpstreamEnvoy)+"), not istio-proxy's Envoy build: its memory and CPU are upstream Envoy's")
	}
	if req, ok := ctr.Resources.Requests[corev1.ResourceCPU]; ok && providerCPURequest != "" && req.String() == providerCPURequest {
		out = append(out, fmt.Sprintf("container %s requests cpu %s, the provider's lowered request for its small node, not Istio's default", ctr.Name, req.String()))
	}
	return out
}

// SampleUntil calls read every poll until done is closed, and returns the
// samples in the order read. A failed read ends the sampling with its
// error: a gap in the readings would not be seen in the window.
func SampleUntil(ctx context.Context, read func(context.Context) (kubeletstats.Sample, error), poll time.Duration, done <-chan struct{}) ([]kubeletstats.Sample, error) {
	if poll <= 0 {
		return nil, fmt.Errorf("summary poll interval %s: must be > 0", poll)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var out []kubeletstats.Sample
	for {
		select {
		case <-done:
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		case <-t.C:
			s, err := read(ctx)
			if err != nil {
				return out, err
			}
			out = append(out, s)
		}
	}
}

// ProxyFootprint runs the claim's load (1,000 qps) from the mode's in-mesh
// client against echo and reads, from the kubelet's Summary API, the
// working set and CPU of the one proxy every request passes
// (FootprintProxy) while the load runs. Only readings the kubelet took
// inside the load count (kubeletstats.Window). The result carries the
// load's achieved qps, which the verdict needs (verdict.MinLoadShare), and
// the setup says which proxy, its requests and limits, and the load.
func ProxyFootprint(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	if r.Mode == mode.None {
		r.SetSetup("%s", NoProxy)
		return verdict.Measurement{Detail: NoProxy}, nil
	}
	m, err := ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	c := InMesh(r)
	client, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return verdict.Measurement{}, err
	}
	var ztunnels []corev1.Pod
	if r.Mode.Ambient() {
		list, err := m.Kube.Client.CoreV1().Pods(IstioNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: fixtures.LabelApp + "=" + ztunnelApp, FieldSelector: "spec.nodeName=" + client.Spec.NodeName})
		if err != nil {
			return verdict.Measurement{}, fmt.Errorf("ztunnel pods on node %s: %w", client.Spec.NodeName, err)
		}
		ztunnels = list.Items
	}
	proxy, ref, err := FootprintProxy(r.Mode, client, ztunnels)
	if err != nil {
		return verdict.Measurement{}, err
	}
	ctr, _ := containerOf(proxy, proxyContainer)
	s, err := SetupLoad(r, EchoURL(r), FootprintFloor)
	if err != nil {
		return verdict.Measurement{}, err
	}
	read := func(ctx context.Context) (kubeletstats.Sample, error) {
		sum, err := kubeletstats.Read(ctx, m.Kube.Client, proxy.Spec.NodeName)
		if err != nil {
			return kubeletstats.Sample{}, err
		}
		return kubeletstats.Find(sum, ref)
	}
	// The load and the sampling run side by side; the window is the load's
	// own span, so readings before it started or after it ended are left out.
	done := make(chan struct{})
	sampled := make(chan struct{})
	var samples []kubeletstats.Sample
	var sampleErr error
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(sampled)
		samples, sampleErr = SampleUntil(sctx, read, r.Env.Config.Timeouts.SummaryPoll, done)
	}()
	start := time.Now()
	run, loadErr := Load(ctx, r, c, "footprint", s)
	end := time.Now()
	close(done)
	<-sampled
	if loadErr != nil {
		return verdict.Measurement{}, loadErr
	}
	if sampleErr != nil {
		return verdict.Measurement{}, fmt.Errorf("reading %s during the load: %w", ref, sampleErr)
	}
	u, err := kubeletstats.Window(samples, start, end)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("%s during the load (%s to %s): %w", ref, start.Format(time.RFC3339), end.Format(time.RFC3339), err)
	}
	qps := run.Result.ActualQPS
	r.Logf("footprint of %s: %.1f MiB (max %.1f), %.3f vCPU over %d kubelet readings (%s), at %.0f qps",
		ref, u.WorkingSetMiB, u.MaxWorkingSetMiB, u.VCPU, u.Samples, u.To.Sub(u.From), qps)
	setup := fmt.Sprintf("%s; proxy: container %s (image %s; %s) on node %s; %d kubelet readings over %s, read every %s",
		DescribeLoad(r, s), ref, ctr.Image, DescribeResources(ctr), proxy.Spec.NodeName,
		u.Samples, u.To.Sub(u.From).Round(time.Second), r.Env.Config.Timeouts.SummaryPoll)
	if cv := FootprintCaveats(r.Mode, r.Env.Proxy, m.Options.Images.CPURequest, ctr); len(cv) > 0 {
		setup += "; differs from the documented setup: " + strings.Join(cv, "; ")
	}
	r.SetSetup("%s", setup)
	return verdict.Measurement{
		Value:       verdict.Float64(u.WorkingSetMiB),
		VCPU:        verdict.Float64(u.VCPU),
		AchievedQPS: verdict.Float64(qps),
		Extra: map[string]float64{
			"working_set_max_mib": u.MaxWorkingSetMiB,
			"kubelet_readings":    float64(u.Samples),
			"window_s":            u.To.Sub(u.From).Seconds(),
			"connections":         float64(run.Result.NumThreads),
			"requests":            float64(run.Result.Requests()),
		},
	}, nil
}
