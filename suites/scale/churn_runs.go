package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

type churnPair struct{ quiet, churned, noMeshQuiet, noMeshChurned *load.Run }

var churns scenario.SharedMeasurement[churnPair]

// ChurnRuns runs SCALE's pattern scaled down to one namespace: a saturating
// load on echo for 60 s (scaled) without churn, then the same load while the
// canary Deployments are rescaled every second (SCALE: 85-115 replicas, here
// 1-3) and the namespace is relabelled every minute. Shared by both SCALE claims.
func ChurnRuns(ctx context.Context, r *spec.Run) (*load.Run, *load.Run, error) {
	p, err := churnRuns(ctx, r)
	return p.quiet, p.churned, err
}

// churnControl is the same pair of loads and churn in the no-mesh
// namespace, run before the mode's own (ChurnRuns runs both once): on a
// small or shared host the churn's pod starts (container runtime, CNI,
// NetworkPolicy syncs) take CPU from a saturating load whether or not a
// mesh is there, and a change this pair shows too is the cluster's, not
// the mesh's. nil, nil in mode none.
func churnControl(ctx context.Context, r *spec.Run) (*load.Run, *load.Run, error) {
	p, err := churnRuns(ctx, r)
	return p.noMeshQuiet, p.noMeshChurned, err
}

func churnRuns(ctx context.Context, r *spec.Run) (churnPair, error) {
	return churns.Get(r, r.Env.Config.RunID+"/"+string(r.Mode), func() (churnPair, error) {
		var p churnPair
		if r.Mode != mode.None {
			var err error
			p.noMeshQuiet, p.noMeshChurned, err = quietAndChurned(ctx, r, mode.None, "no-mesh-")
			if err != nil {
				return churnPair{}, fmt.Errorf("the no-mesh control: %w", err)
			}
		}
		var err error
		p.quiet, p.churned, err = quietAndChurned(ctx, r, r.Mode, "")
		return p, err
	})
}

// quietAndChurned runs the saturating load from mode m's client to m's
// echo, quiet and then while m's namespace churns, the churn undone after
// the spec.
func quietAndChurned(ctx context.Context, r *spec.Run, m mode.Mode, prefix string) (*load.Run, *load.Run, error) {
	if err := scenario.Quiesce(ctx, r, m); err != nil {
		return nil, nil, err
	}
	s := churnLoad(r)
	s.URL = scenario.EchoURLOf(m)
	c := scenario.InMeshOf(r, m)
	quiet, err := steps.Load(ctx, r, c, prefix+"quiet", s)
	if err != nil {
		return nil, nil, err
	}
	mesh, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, nil, err
	}
	// The churn rescales the canary versions and relabels the namespace:
	// put both back whatever happens, for the specs that follow.
	base := mesh.Options.CanaryReplicas
	if base == 0 {
		base = 1 // fixtures.CanaryEcho's default
	}
	ns := m.Namespace()
	r.Defer(func(ctx context.Context) error {
		if err := mesh.Applier.Phase(ctx, "restore after churn", func(ctx context.Context) error {
			return restoreChurn(ctx, mesh.Kube.Client, ns, base)
		}); err != nil {
			return err
		}
		return mesh.Kube.WaitAvailable(ctx, ns, r.Env.Config.Timeouts.WorkloadsReady, churnedDeployments...)
	})
	stop := startChurn(ctx, r, ns)
	churned, err := steps.Load(ctx, r, c, prefix+"churn", s)
	n, cerr := stop()
	r.Logf("churn in %s: %d changes", ns, n)
	if err != nil {
		return nil, nil, err
	}
	if cerr != nil {
		return nil, nil, fmt.Errorf("churn: %w", cerr)
	}
	return quiet, churned, nil
}

func startChurn(ctx context.Context, r *spec.Run, ns string) func() (int, error) {
	m, _ := scenario.ClusterOf(r)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var changes int
	var firstErr error
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var err error
			if i%60 == 59 {
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"}}}`, churnLabel, i)
				_, err = m.Kube.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			} else {
				name := churnedDeployments[rand.IntN(len(churnedDeployments))]
				patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+rand.IntN(3))
				_, err = m.Kube.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			}
			if err != nil && ctx.Err() == nil && firstErr == nil {
				firstErr = err
			}
			changes++
		}
	}()
	return func() (int, error) {
		cancel()
		<-done
		return changes, firstErr
	}
}

// churnLabel is the namespace label the churn rewrites every minute.
const churnLabel = "meshclaims.io/churn"

// churnedDeployments are the Deployments the churn rescales every second.
var churnedDeployments = []string{fixtures.CanaryV1Name, fixtures.CanaryV2Name}

// restoreChurn undoes the churn in namespace ns: the canary Deployments
// back to replicas, the churn label off the namespace.
func restoreChurn(ctx context.Context, c kubernetes.Interface, ns string, replicas int32) error {
	var errs []error
	for _, name := range churnedDeployments {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if _, err := c.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("restore %s/%s to %d replicas: %w", ns, name, replicas, err))
		}
	}
	// A merge patch with null removes the label (absent already: no-op).
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, churnLabel)
	if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("remove label %s from namespace %s: %w", churnLabel, ns, err))
	}
	return errors.Join(errs...)
}

// Stability is the largest relative change of throughput and P50 from the
// quiet run to the churned one.
func Stability(quiet, churned *load.Run) verdict.Measurement {
	d, qQPS, cQPS, qP50, cP50 := change(quiet, churned)
	return verdict.Measurement{Value: verdict.Float64(d), Extra: map[string]float64{
		"quiet_qps": qQPS, "churn_qps": cQPS, "quiet_p50_ms": qP50, "churn_p50_ms": cP50,
	}}
}

// stabilityWithControl is Stability with the no-mesh control's change
// beside it (Extra no_mesh_change, with its throughputs): the verdict
// (verdict's stability judgement) cannot lay on the mesh a change the
// cluster shows without one.
func stabilityWithControl(quiet, churned, noMeshQuiet, noMeshChurned *load.Run) verdict.Measurement {
	m := Stability(quiet, churned)
	if noMeshQuiet == nil || noMeshChurned == nil {
		return m
	}
	d, qQPS, cQPS, _, _ := change(noMeshQuiet, noMeshChurned)
	m.Extra[verdict.NoMeshChange] = d
	m.Extra["no_mesh_quiet_qps"], m.Extra["no_mesh_churn_qps"] = qQPS, cQPS
	return m
}

func change(quiet, churned *load.Run) (d, qQPS, cQPS, qP50, cP50 float64) {
	qQPS, cQPS = quiet.Result.ActualQPS, churned.Result.ActualQPS
	qP50, cP50 = steps.Percentiles(quiet)["50"], steps.Percentiles(churned)["50"]
	d = math.Max(math.Abs(cQPS-qQPS)/qQPS, math.Abs(cP50-qP50)/qP50)
	return d, qQPS, cQPS, qP50, cP50
}

// NodeCores is the CPU capacity of the cluster's nodes, with what it
// counted. Nodes that share one host (kind's containers, each reporting
// the host's cores) count once, as the largest node's capacity: their sum
// would divide the load by cores that are not there.
func NodeCores(ctx context.Context, r *spec.Run) (float64, string, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return 0, "", err
	}
	nodes, err := m.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, "", err
	}
	caps := make([]float64, len(nodes.Items))
	for i, n := range nodes.Items {
		caps[i] = float64(n.Status.Capacity.Cpu().MilliValue()) / 1000
	}
	return countCores(caps, m.NodesShareHost)
}

// countCores sums the nodes' CPU capacities, or takes the largest when the
// nodes share one host, and says which.
func countCores(caps []float64, shareHost bool) (float64, string, error) {
	var sum, largest float64
	for _, c := range caps {
		sum += c
		largest = math.Max(largest, c)
	}
	if sum <= 0 {
		return 0, "", fmt.Errorf("nodes report no CPU capacity")
	}
	if shareHost && len(caps) > 1 {
		return largest, fmt.Sprintf("%g cores: the %d nodes are containers on one host and each reports its %g cores, counted once", largest, len(caps), largest), nil
	}
	return sum, fmt.Sprintf("%g cores over %d node(s)", sum, len(caps)), nil
}

// churnLoad is the load of both churn runs: no qps limit, 16 connections,
// 60 s (scaled), at load.LatencyResolution since the runs' P50s are compared.
func churnLoad(r *spec.Run) load.Spec {
	return load.Spec{URL: scenario.EchoURL(r), QPS: 0, Connections: 16, Duration: r.Env.Config.Scale(60*time.Second, 10*time.Second),
		Resolution: load.LatencyResolution}
}
