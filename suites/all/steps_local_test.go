package all

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/kubeletstats"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
	"github.com/meshclaims/meshclaims/suites/kubeproxy"
	"github.com/meshclaims/meshclaims/suites/l7"
	"github.com/meshclaims/meshclaims/suites/netpol"
	"github.com/meshclaims/meshclaims/suites/resources"
	"github.com/meshclaims/meshclaims/suites/scale"
)

// TestStepsOnLocalCluster drives the scenario steps that only the Istio
// modes' specs use (gRPC load, large download, SSE spacing, canary split,
// churn, proxy usage and footprint, T2 orders during rollouts) against a real cluster: the
// local provider, in the no-mesh namespace. It proves the machinery, not the
// claims, and gives the split detector a real-cluster control: without an L7
// proxy the 90/10 route does not exist and the split must come out as the
// replica share, "not-honoured".
//
// Runs with MESHCLAIMS_LOCAL=1 as root (make e2e-local).
func TestStepsOnLocalCluster(t *testing.T) {
	setuptest.RequireLocal(t, "the steps")
	l := setuptest.Up(t, "-mode=none", "-cluster-name=meshclaims-steps", "-duration-scale=0.02", "-run-id=steps")
	ctx := context.Background()
	s, reg, out := l.Suite, l.Registry, l.Out
	run := func(t *testing.T, claim string) *spec.Run {
		r := spec.NewRun(reg.MustGet(claim), mode.None, s.Env, out)
		t.Cleanup(func() {
			if err := r.Close(context.Background()); err != nil {
				t.Errorf("undo: %v", err)
			}
		})
		return r
	}
	echo := func(path string) string { return strings.TrimSuffix(scenario.EchoURLOf(mode.None), "/") + path }

	t.Run("grpc", func(t *testing.T) {
		r := run(t, "sidecar.grpc-latency")
		target := fixtures.EchoName + "." + mode.None.Namespace() + ":8079"
		ms, err := steps.GRPCLoad(ctx, r, scenario.InMeshOf(r, mode.None), "grpc-none", target, 100, 4, 3*time.Second)
		if err != nil || ms <= 0 {
			t.Fatalf("gRPC mean %v ms, %v", ms, err)
		}
	})
	t.Run("download", func(t *testing.T) {
		r := run(t, "sidecar.large-download")
		d, err := steps.Download(ctx, r, scenario.InMeshOf(r, mode.None), echo("/bytes?n=104857600"))
		if err != nil || d.Bytes != 100<<20 || d.MBps <= 0 {
			t.Fatalf("download %+v, %v", d, err)
		}
	})
	t.Run("sse", func(t *testing.T) {
		r := run(t, "sidecar.sse-intervals")
		ivs, err := steps.SSEIntervals(ctx, r, scenario.InMeshOf(r, mode.None), echo("/sse?n=50&interval=20ms"))
		if err != nil || len(ivs) != 49 {
			t.Fatalf("%d intervals, %v", len(ivs), err)
		}
		// Streamed, not buffered: events cannot arrive faster than sent.
		if med, _ := stats.Percentile(ivs, 50); med < 15 {
			t.Fatalf("median interval %.1f ms: events arrived bunched", med)
		}
	})
	t.Run("split without an L7 proxy is not honoured", func(t *testing.T) {
		r := run(t, "canary.east-west-needs-l7")
		url := "http://" + fixtures.CanaryName + "." + mode.None.Namespace() + ":8080/debug"
		m, err := steps.Split(ctx, r, scenario.InMeshOf(r, mode.None), url, fixtures.DefaultSplit)
		if err != nil {
			t.Fatal(err)
		}
		if m.Outcome != "not-honoured" {
			t.Fatalf("kube-proxy honoured a route that does not exist: %s", m.Detail)
		}
		t.Log(m.Detail)
	})
	// GUIDE's L7 features with no L7 proxy at all (no route, policy or
	// pool applied: the cluster has no Istio): each detector must read
	// "not-honoured" from real answers, the ambient-l4 outcome.
	t.Run("L7 features without an L7 proxy are not applied", func(t *testing.T) {
		url := "http://" + fixtures.CanaryName + "." + mode.None.Namespace() + ":8080" + fixtures.DebugPath
		hrRun := run(t, "l7.header-routing")
		c := scenario.InMeshOf(hrRun, mode.None) // the no-mesh client
		hr, err := l7.HeaderRouting(ctx, hrRun, c, url)
		if err != nil || hr.Outcome != steps.SplitNotHonoured {
			t.Errorf("header routing: %+v, %v", hr, err)
		}
		pr, err := l7.PathRouting(ctx, run(t, "l7.path-routing"), c, url)
		if err != nil || pr.Outcome != steps.SplitNotHonoured {
			t.Errorf("path routing: %+v, %v", pr, err)
		}
		rp, err := l7.RetryPolicy(ctx, run(t, "l7.retry-policy"), c, echo("/?"+fixtures.FlakyQuery()))
		if err != nil || rp.Outcome != l7.RetryNotApplied {
			t.Errorf("retry policy: %+v, %v", rp, err)
		}
		t.Logf("header %s; path %s; retry %s", hr.Detail, pr.Detail, rp.Detail)
	})
	t.Run("churn", func(t *testing.T) {
		r := run(t, "scale.churn-stability")
		quiet, churned, err := scale.ChurnRuns(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		st := scale.Stability(quiet, churned)
		if st.Value == nil || st.Extra["quiet_qps"] <= 0 || st.Extra["churn_qps"] <= 0 {
			t.Fatalf("stability %+v", st)
		}
		cores, counted, err := scale.NodeCores(ctx, r)
		if err != nil || cores <= 0 || !strings.Contains(counted, "over 1 node(s)") {
			t.Fatalf("cores %v (%s), %v", cores, counted, err)
		}
	})
	t.Run("proxy usage reads the kubelets", func(t *testing.T) {
		r := run(t, "resources.budget-model")
		u, err := resources.ProxyUsage(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if u["sidecar_count"] != 0 || u["ztunnel_count"] != 0 {
			t.Fatalf("proxies found on a cluster without a mesh: %v", u)
		}
	})
	// The footprint's reader on a real kubelet: its summary decodes strictly
	// as stats/v1alpha1, the no-mesh client's container is in it with both
	// counters, FootprintFloor's span holds two of the kubelet's readings,
	// and the client has no istio-proxy to read (negative control).
	t.Run("footprint reads a real kubelet's summary", func(t *testing.T) {
		r := run(t, "resources.proxy-footprint")
		c := scenario.InMeshOf(r, mode.None)
		pod, err := s.Env.Cluster.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
		if err != nil {
			t.Fatal(err)
		}
		ref := kubeletstats.ContainerRef{Namespace: pod.Namespace, Pod: pod.Name, Container: pod.Spec.Containers[0].Name}
		read := func(ctx context.Context) (kubeletstats.Sample, error) {
			sum, err := kubeletstats.Read(ctx, s.Env.Cluster.Kube.Client, pod.Spec.NodeName)
			if err != nil {
				return kubeletstats.Sample{}, err
			}
			return kubeletstats.Find(sum, ref)
		}
		done := make(chan struct{})
		start := time.Now()
		stop := time.AfterFunc(resources.FootprintFloor, func() { close(done) })
		defer stop.Stop()
		samples, err := resources.SampleUntil(ctx, read, s.Env.Config.Timeouts.SummaryPoll, done)
		if err != nil {
			t.Fatal(err)
		}
		u, err := kubeletstats.Window(samples, start, time.Now())
		if err != nil {
			t.Fatalf("%s over %s: %v", ref, resources.FootprintFloor, err)
		}
		if u.WorkingSetMiB <= 0 || u.VCPU < 0 {
			t.Fatalf("%s: %+v", ref, u)
		}
		sum, err := kubeletstats.Read(ctx, s.Env.Cluster.Kube.Client, pod.Spec.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kubeletstats.Find(sum, kubeletstats.ContainerRef{Namespace: pod.Namespace, Pod: pod.Name, Container: "istio-proxy"}); err == nil || !strings.Contains(err.Error(), "has no container") {
			t.Fatalf("an istio-proxy found in a no-mesh pod: %v", err)
		}
	})
	t.Run("orders during rollouts", func(t *testing.T) {
		r := run(t, "retry.no-duplicates")
		m, err := steps.OrdersDuringRollout(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if *m.Total == 0 || m.Extra["cycles"] < 1 {
			t.Fatalf("orders %+v", m)
		}
		// Without retries nothing can run twice: the detector must say 0.
		if *m.Count != 0 {
			t.Fatalf("%d duplicate executions without any retry", *m.Count)
		}
		// And that zero must not be judged: no proxy retried (Unmet).
		if m.Unmet == "" {
			t.Fatal("no proxy applies retries without a mesh, yet the duplicate count would be judged")
		}
		// The load's record counts the orders sent, as the report's loads
		// table shows them against the planned rate x duration.
		if loads := r.Loads(); len(loads) != 1 || loads[0].Requests != *m.Total || loads[0].Cycles != int(m.Extra["cycles"]) {
			t.Fatalf("the load's record %+v; want 1 load of %d requests and %v cycles", loads, *m.Total, m.Extra["cycles"])
		}
		t.Logf("sent %d, failures %v, cycles %v", *m.Total, m.Extra["client_failures"], m.Extra["cycles"])
	})
	// The two scale claims read one fill of extra Services (at scale 1,
	// 10,000 of them, about 12 minutes each time): the first reader makes
	// it with both claims' phases, the second reads it, and no extra
	// Service outlives the fill. new-connection-growth's need (HYBRID's
	// 10,000) is not checked here: its steps run at any count.
	t.Run("one fill of extra Services for both scale claims", func(t *testing.T) {
		first := run(t, kubeproxy.NewConnectionClaim)
		grow, err := kubeproxy.NewConnectionGrowth(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if len(grow.Runs) == 0 || grow.Extra["extra_services"] < 100 {
			t.Fatalf("new-connection growth %+v", grow)
		}
		if left := fillersLeft(t, l); left != 0 {
			t.Fatalf("%d extra Services outlived the fill", left)
		}
		second := run(t, kubeproxy.ServiceScaleClaim)
		ready, err := kubeproxy.ServiceReadiness(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if *ready.Value <= 0 || ready.At == nil || ready.At.Value <= 0 || ready.Extra["extra_services"] != grow.Extra["extra_services"] {
			t.Fatalf("service readiness %+v", ready)
		}
		// The detector of reuse, and its control: the maker says it made
		// the fill, the reader that it read the maker's.
		if !strings.Contains(second.Setup(), "made by "+kubeproxy.NewConnectionClaim) {
			t.Errorf("service-scale made its own fill? setup: %s", second.Setup())
		}
		if strings.Contains(first.Setup(), "made by") || !strings.Contains(first.Setup(), "made once per run") {
			t.Errorf("new-connection-growth's setup: %s", first.Setup())
		}
		t.Logf("with 0 and %v Services: %s; service readiness median %.3fs, %.3fs", grow.Extra["extra_services"], grow.Detail, *ready.Value, ready.At.Value)
	})
	// The negative control of netpol.enforcement-not-retroactive's
	// detector: kube-router enforces from the start, on pods old and new,
	// so the 9999-only policy must close the pod that ran before it as
	// well as the recreated one: "retroactive", judged not reproduced. The
	// spec itself is inconclusive here, and the need must say why.
	t.Run("netpol enforcement on kube-router is retroactive", func(t *testing.T) {
		r := run(t, "netpol.enforcement-not-retroactive")
		if err := netpol.NeedNetPolSwitch.Check(ctx, r); err == nil || !strings.Contains(err.Error(), "kube-router") {
			t.Fatalf("need on the local provider: %v; want unmet, naming kube-router", err)
		}
		m, err := netpol.NetPolRetroWith(ctx, r, netpol.AlreadyEnforcing("the local provider's kube-router"))
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(r.Claim, mode.None, m); m.Outcome != netpol.NetpolRetroactive || v.Result != verdict.NotReproduced {
			t.Fatalf("kube-router left the old pod open? %s (%s): %s", m.Outcome, v.Result, m.Detail)
		}
		t.Log(m.Detail)
	})
}

// fillersLeft counts the extra Services (kubeproxy.FillerPrefix) in the no-mesh
// namespace.
func fillersLeft(t *testing.T, l *setuptest.Local) int {
	t.Helper()
	list, err := l.Suite.Env.Cluster.Kube.Client.CoreV1().Services(mode.None.Namespace()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, kubeproxy.FillerPrefix) {
			n++
		}
	}
	return n
}
