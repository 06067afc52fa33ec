package scale

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// After the churn the canary versions are back at their base replicas and
// the namespace has lost the churn label but kept its mode labels, on a
// real API server with the real fixtures.
func TestRestoreChurnOnServer(t *testing.T) {
	ctx := context.Background()
	srv := apiserver.ForTest(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	m := mode.AmbientL7
	nsObj := fixtures.Namespace(m, "t1")
	nsObj.Name = "meshclaims-churn-restore"
	nsObj.Labels[churnLabel] = "59" // as the churn leaves it
	if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	tgt := fixtures.Target{Namespace: ns, Run: "t1"}
	for v, n := range map[string]int32{fixtures.CanaryV1: 3, fixtures.CanaryV2: 2} {
		d := fixtures.CanaryEcho(tgt, fixtures.Images{Workload: "meshclaims/workload:dev"}, v, n)
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := restoreChurn(ctx, cs, ns, 1); err != nil {
		t.Fatal(err)
	}
	for _, name := range churnedDeployments {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 1 {
			t.Errorf("%s: %d replicas after restore, want 1", name, *d.Spec.Replicas)
		}
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels[churnLabel]; ok {
		t.Errorf("churn label still on the namespace: %v", got.Labels)
	}
	for k, v := range fixtures.ModeLabels(m) {
		if got.Labels[k] != v {
			t.Errorf("mode label %s=%s lost in the restore: %v", k, v, got.Labels)
		}
	}
	// A second restore is a no-op, not an error (the undo may run twice).
	if err := restoreChurn(ctx, cs, ns, 1); err != nil {
		t.Fatalf("second restore: %v", err)
	}
	// Negative control: a namespace without the canary Deployments is
	// reported, naming what could not be restored.
	empty := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meshclaims-churn-empty"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, empty, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := restoreChurn(ctx, cs, empty.Name, 1); err == nil {
		t.Fatal("restoring Deployments that do not exist succeeded")
	}
}

// Nodes that are containers on one host each report the host's cores:
// counted once, where separate machines add up. Without the sharing the
// sum is the control.
func TestCountCores(t *testing.T) {
	kind := []float64{2, 2, 2}
	if c, why, err := countCores(kind, true); err != nil || c != 2 || !strings.Contains(why, "3 nodes are containers on one host") {
		t.Errorf("kind's 3 nodes on a 2-core host: %v %q %v", c, why, err)
	}
	if c, why, err := countCores(kind, false); err != nil || c != 6 || why != "6 cores over 3 node(s)" {
		t.Errorf("3 machines of 2 cores: %v %q %v", c, why, err)
	}
	if c, _, err := countCores([]float64{2}, true); err != nil || c != 2 {
		t.Errorf("one node: %v %v", c, err)
	}
	if _, _, err := countCores([]float64{0, 0}, false); err == nil {
		t.Error("no capacity: no error")
	}
}

// Both churn runs ask fortio for a 10 µs histogram or finer, since their
// P50s are compared (issue 9: they ran at 0.1 ms), and are valid loads.
func TestChurnLoadAsksForFineResolution(t *testing.T) {
	r := spec.NewRun(claimstest.Claim(t, "scale.churn-stability"), mode.AmbientL4, &spec.Env{Config: &config.Config{DurationScale: 1}}, nil)
	s := churnLoad(r)
	if got := s.Normalized().Resolution; got > 1e-5 {
		t.Errorf("churn load: resolution %g s, want <= 1e-5", got)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("churn load: %v", err)
	}
}
