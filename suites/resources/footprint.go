package resources

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
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// noProxy is what a footprint records in mode none: there is no proxy to
// read, and a zero would read as a proxy that costs nothing.
const noProxy = "no proxy: mode none runs no sidecar and no ztunnel, so there is no proxy footprint to measure"

// FootprintFloor is the shortest footprint load: the kubelet refreshes a
// container's stats every 10-15 s, and CPU needs two of its readings inside
// the load, so 45 s leaves at least three at the slowest refresh.
const FootprintFloor = 45 * time.Second

// footprintProxy names the proxy container whose footprint mode m's load
// shows, given the in-mesh client pod that sends the load and the ztunnel
// pods on that client's node: in sidecar mode the client's own sidecar
// (every request of the load passes it, outbound), in ambient-l4 the
// client node's ztunnel. A pod without the container, no ztunnel or more
// than one on the node, or another mode is an error naming what was found.
func footprintProxy(m mode.Mode, client *corev1.Pod, ztunnels []corev1.Pod) (*corev1.Pod, kubeletstats.ContainerRef, error) {
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

// describeResources says what a container requested and may use, from its
// spec: the figures a footprint on a small node must be read beside.
func describeResources(c *corev1.Container) string {
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

// footprintCaveats says, beside the numbers, where this run's proxy is not
// the one the documented figures describe: a sidecar that is upstream
// Envoy rather than istio-proxy's Envoy build (proxyEnv is the run's
// spec.Env.Proxy), and a CPU request the provider lowered for its small
// node (providerCPURequest, fixtures.Images.CPURequest), which under
// contention decides the proxy's CPU share.
func footprintCaveats(m mode.Mode, proxyEnv, providerCPURequest string, ctr *corev1.Container) []string {
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

// proxyFootprint runs the claim's load (1,000 qps) from the mode's in-mesh
// client against echo and reads, from the kubelet's Summary API, the
// working set and CPU of the one proxy every request passes
// (footprintProxy) while the load runs. Only readings the kubelet took
// inside the load count (kubeletstats.Window). The result carries the
// load's achieved qps, which the verdict needs (verdict.MinLoadShare), and
// the setup says which proxy, its requests and limits, and the load.
func proxyFootprint(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	if r.Mode == mode.None {
		r.SetSetup("%s", noProxy)
		return verdict.Measurement{Detail: noProxy}, nil
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	c := scenario.InMesh(r)
	client, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return verdict.Measurement{}, err
	}
	var ztunnels, otherZtunnels []corev1.Pod
	if r.Mode.Ambient() {
		list, err := m.Kube.Client.CoreV1().Pods(istioNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: fixtures.LabelApp + "=" + ztunnelApp})
		if err != nil {
			return verdict.Measurement{}, fmt.Errorf("ztunnel pods: %w", err)
		}
		ztunnels, otherZtunnels = ztunnelsByNode(list.Items, client.Spec.NodeName)
	}
	proxy, ref, err := footprintProxy(r.Mode, client, ztunnels)
	if err != nil {
		return verdict.Measurement{}, err
	}
	ctr, _ := containerOf(proxy, proxyContainer)
	s, err := steps.SetupLoad(r, scenario.EchoURL(r), FootprintFloor)
	if err != nil {
		return verdict.Measurement{}, err
	}
	reader := func(node string, ref kubeletstats.ContainerRef) func(context.Context) (kubeletstats.Sample, error) {
		return func(ctx context.Context) (kubeletstats.Sample, error) {
			sum, err := kubeletstats.Read(ctx, m.Kube.Client, node)
			if err != nil {
				return kubeletstats.Sample{}, err
			}
			return kubeletstats.Find(sum, ref)
		}
	}
	// The load and the sampling run side by side; the window is the load's
	// own span, so readings before it started or after it ended are left out.
	// In ambient mode the other nodes' ztunnels are read too: on several
	// nodes the load's HBONE tunnels end at echo's nodes' ztunnels, whose
	// cost the client node's figure leaves out.
	done := make(chan struct{})
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sample := func(node string, ref kubeletstats.ContainerRef) *nodeSamples {
		ns := &nodeSamples{node: node, ref: ref, finished: make(chan struct{})}
		go func() {
			defer close(ns.finished)
			ns.samples, ns.err = SampleUntil(sctx, reader(node, ref), r.Env.Config.Timeouts.SummaryPoll, done)
		}()
		return ns
	}
	judged := sample(proxy.Spec.NodeName, ref)
	var others []*nodeSamples
	for _, z := range otherZtunnels {
		others = append(others, sample(z.Spec.NodeName, kubeletstats.ContainerRef{Namespace: z.Namespace, Pod: z.Name, Container: proxyContainer}))
	}
	start := time.Now()
	run, loadErr := steps.Load(ctx, r, c, "footprint", s)
	end := time.Now()
	close(done)
	<-judged.finished
	for _, o := range others {
		<-o.finished
	}
	if loadErr != nil {
		return verdict.Measurement{}, loadErr
	}
	samples, sampleErr := judged.samples, judged.err
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
		steps.DescribeLoad(r, s), ref, ctr.Image, describeResources(ctr), proxy.Spec.NodeName,
		u.Samples, u.To.Sub(u.From).Round(time.Second), r.Env.Config.Timeouts.SummaryPoll)
	extra := map[string]float64{
		"working_set_max_mib": u.MaxWorkingSetMiB,
		"kubelet_readings":    float64(u.Samples),
		"window_s":            u.To.Sub(u.From).Seconds(),
		"connections":         float64(run.Result.NumThreads),
		"requests":            float64(run.Result.Requests()),
	}
	if r.Mode.Ambient() {
		perNode := ztunnelsPerNode(proxy.Spec.NodeName, u, others, start, end, extra)
		r.Logf("%s", perNode)
		setup += "; " + perNode
	}
	if cv := footprintCaveats(r.Mode, r.Env.Proxy, m.Options.Images.CPURequest, ctr); len(cv) > 0 {
		setup += "; differs from the documented setup: " + strings.Join(cv, "; ")
	}
	r.SetSetup("%s", setup)
	return verdict.Measurement{
		Value:       verdict.Float64(u.WorkingSetMiB),
		VCPU:        verdict.Float64(u.VCPU),
		AchievedQPS: verdict.Float64(qps),
		Extra:       extra,
	}, nil
}

// nodeSamples are one node's proxy readings during a footprint load.
type nodeSamples struct {
	node     string
	ref      kubeletstats.ContainerRef
	samples  []kubeletstats.Sample
	err      error
	finished chan struct{}
}

// ztunnelsByNode splits the cluster's ztunnel pods into those on node (the
// one footprintProxy reads; more than one there is its error) and those on
// every other node, sorted by node.
func ztunnelsByNode(all []corev1.Pod, node string) (on, others []corev1.Pod) {
	for _, p := range all {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == node {
			on = append(on, p)
		} else {
			others = append(others, p)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Spec.NodeName < others[j].Spec.NodeName })
	return on, others
}

// ztunnelsPerNode says what every node's ztunnel used during the load
// (start to end): the client's node, which the verdict reads, then the
// others, and sets extra's ztunnel_mib_<node> and ztunnel_vcpu_<node> for
// each other node. A node whose readings failed or fell outside the load
// says so instead of a figure: a gap is not a zero.
func ztunnelsPerNode(clientNode string, client kubeletstats.Usage, others []*nodeSamples, start, end time.Time, extra map[string]float64) string {
	parts := []string{fmt.Sprintf("%s %.1f MiB / %.3f vCPU (the client's node, the figure judged)", clientNode, client.WorkingSetMiB, client.VCPU)}
	for _, o := range others {
		if o.err != nil {
			parts = append(parts, fmt.Sprintf("%s not read (%v)", o.node, o.err))
			continue
		}
		u, err := kubeletstats.Window(o.samples, start, end)
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s not read (%v)", o.node, err))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MiB / %.3f vCPU", o.node, u.WorkingSetMiB, u.VCPU))
		extra["ztunnel_mib_"+o.node] = u.WorkingSetMiB
		extra["ztunnel_vcpu_"+o.node] = u.VCPU
	}
	if len(others) == 0 {
		return "ztunnel per node during the load: " + parts[0] + "; no other node runs a ztunnel, so both ends of every call were this one's"
	}
	return "ztunnel per node during the load: " + strings.Join(parts, "; ")
}
