package istio

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// What Helm leaves after uninstalling the suite's Istio, as the first
// sidecar run through -provider=existing found it: an Istio CRD the run
// created (kept by the base chart's resource-policy) and a GatewayClass
// istiod created in the cluster's Gateway API. Both go; the CRDs and the
// GatewayClass the cluster had before stay; a refusing guard deletes nothing.
func TestLeftoversOfTheRunAreRemovedAndOnlyThey(t *testing.T) {
	srv := apiserver.NewForTest(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	const ours = "wasmplugins.extensions.istio.io"
	const theirsCRD = "virtualservices.networking.istio.io"
	crd, err := dyn.Resource(crdGVR).Get(ctx, ours, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The cluster before the run: every Istio CRD but ours, and someone's GatewayClass.
	if err := dyn.Resource(crdGVR).Delete(ctx, ours, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dyn, ours)
	gc := func(name, ctrl string) {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"controllerName": ctrl}}}
		if _, err := dyn.Resource(gatewayClassGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gc("theirs", "istio.io/gateway-controller")
	g := &switchGuard{}
	inst, err := NewInstaller(srv.Config, g, Options{Profile: ProfileDefault, Charts: ChartSource{RepoURL: DefaultRepoURL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.recordBefore(ctx); err != nil {
		t.Fatal(err)
	}
	// The run: the base chart creates our CRD, istiod a GatewayClass.
	crd.SetResourceVersion("")
	crd.SetUID("")
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gc("istio", "istio.io/gateway-controller")
	gc("other-vendor", "example.com/gateway")
	if err := inst.markIstioCRDs(ctx, *inst.before); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{ours: true, theirsCRD: false} {
		got, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if (got.GetLabels()[LabelManagedBy] == ManagedBy) != want {
			t.Errorf("CRD %s marked %v, want %v", name, !want, want)
		}
	}

	g.refuse.Store(true)
	if err := inst.uninstallLeftovers(ctx); err == nil {
		t.Fatal("leftovers removed under a refusing guard")
	}
	if _, err := dyn.Resource(crdGVR).Get(ctx, ours, metav1.GetOptions{}); err != nil {
		t.Fatalf("CRD deleted under a refusing guard: %v", err)
	}
	g.refuse.Store(false)
	if err := inst.uninstallLeftovers(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Get(ctx, ours, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run's CRD %s is still there (err %v)", ours, err)
	}
	if _, err := dyn.Resource(crdGVR).Get(ctx, theirsCRD, metav1.GetOptions{}); err != nil {
		t.Errorf("the cluster's CRD %s was deleted: %v", theirsCRD, err)
	}
	for name, want := range map[string]bool{"istio": false, "theirs": true, "other-vendor": true} {
		_, err := dyn.Resource(gatewayClassGVR).Get(ctx, name, metav1.GetOptions{})
		if got := err == nil; got != want {
			t.Errorf("GatewayClass %s present %v, want %v (err %v)", name, got, want, err)
		}
	}
}

func waitGone(t *testing.T, dyn dynamic.Interface, crd string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := dyn.Resource(crdGVR).Get(context.Background(), crd, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		<-time.After(100 * time.Millisecond)
	}
	t.Fatalf("CRD %s not gone", crd)
}
