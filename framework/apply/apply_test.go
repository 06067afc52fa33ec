package apply_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

var img = fixtures.Images{Workload: "meshclaims/workload:dev"}

func TestToUnstructured(t *testing.T) {
	tgt := fixtures.Target{Namespace: "n", Run: "r"}
	u, err := apply.ToUnstructured(fixtures.OrderClient(tgt, img), apply.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "apps/v1" || u.GetKind() != "Deployment" {
		t.Errorf("gvk %s %s", u.GetAPIVersion(), u.GetKind())
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("status kept")
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); ok {
		t.Error("creationTimestamp kept")
	}
	// An explicit zero is intent: order-client starts with 0 replicas.
	if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); !ok || r != 0 {
		t.Errorf("replicas: 0 dropped (ok=%v r=%d)", ok, r)
	}
	pa, err := apply.ToUnstructured(fixtures.PeerAuthStrict(tgt), apply.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _ := unstructured.NestedString(pa.Object, "spec", "mtls", "mode"); m != "STRICT" {
		t.Errorf("Istio enum encoded as %q, want STRICT", m)
	}
	type notRegistered struct{ corev1.ConfigMap }
	if _, err := apply.ToUnstructured(&notRegistered{}, apply.Scheme()); err == nil || !strings.Contains(err.Error(), "not in the apply scheme") {
		t.Errorf("unregistered type: %v", err)
	}
}

// countingGuard allows the first `allow` checks and refuses the rest.
type countingGuard struct {
	calls atomic.Int32
	allow int32
}

var errDrift = errors.New("cluster changed (test)")

func (g *countingGuard) Check(context.Context) error {
	if g.calls.Add(1) > g.allow {
		return errDrift
	}
	return nil
}

func TestGuardIsAskedBeforeEveryWrite(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	g := &countingGuard{allow: 3}
	a, err := apply.New(srv.Config, g)
	if err != nil {
		t.Fatal(err)
	}
	tgt, _ := fixtures.NewTarget("guarded", "guard")
	ns := &corev1.Namespace{}
	ns.Name, ns.Labels = tgt.Namespace, fixtures.SuiteLabels(tgt.Run)
	objs := []client.Object{ns, fixtures.ServiceAccount(tgt, "one"), fixtures.ServiceAccount(tgt, "two"),
		fixtures.ServiceAccount(tgt, "three"), fixtures.ServiceAccount(tgt, "four")}
	err = a.Apply(ctx, objs...)
	if !errors.Is(err, errDrift) || !strings.Contains(err.Error(), "ServiceAccount guarded/three") {
		t.Fatalf("want the guard's refusal naming the 4th object, got %v", err)
	}
	if n := g.calls.Load(); n != 4 {
		t.Errorf("guard asked %d times for 4 attempted writes", n)
	}
	c := a.Client()
	for _, name := range []string{"one", "two"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: name}, &corev1.ServiceAccount{}); err != nil {
			t.Errorf("%s written before the refusal is missing: %v", name, err)
		}
	}
	for _, name := range []string{"three", "four"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: name}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s was written after the guard refused (get: %v)", name, err)
		}
	}
	// Phase: the guard runs first and a refusal keeps fn from running.
	ran := false
	err = a.Phase(ctx, "rollout restart", func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, errDrift) || ran || !strings.Contains(err.Error(), "rollout restart") {
		t.Errorf("Phase with a refusing guard: err=%v ran=%v", err, ran)
	}
	g.allow = 100
	if err := a.Phase(ctx, "ok", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Phase with a passing guard: err=%v ran=%v", err, ran)
	}
}

func TestApplyOwnsFieldsAsMeshclaims(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	a, err := apply.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	tgt, _ := fixtures.NewTarget("owned", "owned")
	ns := &corev1.Namespace{}
	ns.Name, ns.Labels = tgt.Namespace, fixtures.SuiteLabels(tgt.Run)
	if err := a.Apply(ctx, ns, fixtures.EchoService(tgt)); err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := a.Client().Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: fixtures.EchoName}, &svc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range svc.ManagedFields {
		if mf.Manager == apply.FieldManager && mf.Operation == "Apply" {
			found = true
		}
	}
	if !found {
		t.Errorf("no Apply entry by %q in managedFields: %+v", apply.FieldManager, svc.ManagedFields)
	}
	// Another manager changes a field the suite owns (targetPort: not a list
	// key, so the entry stays the same); the next apply takes it back.
	svc.Spec.Ports[0].TargetPort = intstr.FromInt32(9999)
	if err := a.Client().Update(ctx, &svc, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, fixtures.EchoService(tgt)); err != nil {
		t.Fatalf("apply after a conflicting update: %v", err)
	}
	if err := a.Client().Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: fixtures.EchoName}, &svc); err != nil {
		t.Fatal(err)
	}
	if tp := svc.Spec.Ports[0].TargetPort.IntValue(); tp != 8080 {
		t.Errorf("targetPort %d after re-apply, want 8080", tp)
	}
}
