package istio

import (
	"context"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

const gatewaysCRD = "gateways.gateway.networking.k8s.io"

// The pinned bundle is the one istio.io/istio's release-1.30 go.mod names,
// read from the module cache (downloaded there when absent), hash checked.
func TestGatewayAPICRDDirIsThePinnedRelease(t *testing.T) {
	dir, err := GatewayAPICRDDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dir, "gateway-api@"+GatewayAPIVersion) {
		t.Fatalf("CRD directory %s is not of %s", dir, GatewayAPIVersion)
	}
	crds, err := gatewayCRDsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if v := c.GetAnnotations()[BundleVersionAnnotation]; v != GatewayAPIVersion {
			t.Errorf("%s carries bundle-version %q, want %s", c.GetName(), v, GatewayAPIVersion)
		}
	}
}

// A cluster without Gateway API: the run applies the pinned CRDs, marked as
// its own, and Uninstall removes them; the bundle's admission policy is not
// applied.
func TestGatewayCRDsInstalledByTheRunAreRemoved(t *testing.T) {
	srv := apiserver.NewForTestWith(t, apiserver.Options{NoGatewayCRDs: true})
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the server already has %s (err %v): the test cannot tell installing from finding", gatewaysCRD, err)
	}
	g := &switchGuard{}
	inst, err := NewInstaller(srv.Config, g, Options{Profile: ProfileAmbient, Charts: ChartSource{RepoURL: DefaultRepoURL}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := inst.InstallGatewayAPICRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Foreign) != 0 || rep.Warning != "" || len(rep.Applied) < 5 {
		t.Fatalf("fresh cluster: %+v", rep)
	}
	crd, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.GetLabels()[LabelManagedBy] != ManagedBy || crd.GetAnnotations()[BundleVersionAnnotation] != GatewayAPIVersion {
		t.Fatalf("applied CRD: labels %v, annotations %v", crd.GetLabels(), crd.GetAnnotations())
	}
	vap := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	if _, err := dyn.Resource(vap).Get(ctx, "safe-upgrades.gateway.networking.k8s.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the bundle's admission policy was applied (err %v)", err)
	}
	// A second run finds them marked as ours and applies them again.
	again, err := inst.InstallGatewayAPICRDs(ctx)
	if err != nil || len(again.Foreign) != 0 || len(again.Applied) != len(rep.Applied) {
		t.Fatalf("re-run on our own CRDs: %+v, %v", again, err)
	}

	// A refusing guard deletes nothing.
	g.refuse.Store(true)
	if err := inst.Uninstall(ctx); err == nil {
		t.Fatal("uninstall under a refusing guard succeeded")
	}
	if _, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{}); err != nil {
		t.Fatalf("CRD deleted under a refusing guard: %v", err)
	}
	g.refuse.Store(false)
	if err := inst.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range rep.Applied {
		got, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil && got.GetDeletionTimestamp() == nil {
			t.Errorf("%s survived Uninstall", name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// A cluster that has Gateway API CRDs of its own (the shared server's come
// from the Go types' module, v1.6.x, without our mark): nothing is written,
// their versions are recorded with a warning, and Uninstall leaves them.
func TestForeignGatewayCRDsAreLeftAlone(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	before, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := before.GetAnnotations()[BundleVersionAnnotation]
	if theirs == "" || theirs == GatewayAPIVersion {
		t.Fatalf("the shared server's %s is %q; the test needs a version other than %s", gatewaysCRD, theirs, GatewayAPIVersion)
	}
	inst, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Charts: ChartSource{RepoURL: DefaultRepoURL}, Namespace: "istio-foreign-crds"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := inst.InstallGatewayAPICRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 0 || rep.Foreign[gatewaysCRD] != theirs {
		t.Fatalf("foreign CRDs: %+v", rep)
	}
	if !strings.Contains(rep.Warning, gatewaysCRD+" "+theirs) || !strings.Contains(rep.Warning, GatewayAPIVersion) {
		t.Errorf("warning %q does not name the found and the pinned versions", rep.Warning)
	}
	after, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("a foreign CRD was written (resourceVersion %s -> %s)", before.GetResourceVersion(), after.GetResourceVersion())
	}
	if err := inst.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{}); err != nil || got.GetDeletionTimestamp() != nil {
		t.Fatalf("Uninstall removed a CRD the cluster had before: %v", err)
	}
}

// The warning fires only on a difference (its negative control) and names
// what is missing from a foreign bundle.
func TestForeignWarning(t *testing.T) {
	if w := foreignWarning(GatewayCRDs{Foreign: map[string]string{gatewaysCRD: GatewayAPIVersion}}); w != "" {
		t.Errorf("same version warned: %q", w)
	}
	w := foreignWarning(GatewayCRDs{Foreign: map[string]string{gatewaysCRD: "v1.2.1", "httproutes.gateway.networking.k8s.io": ""},
		Missing: []string{"grpcroutes.gateway.networking.k8s.io"}})
	for _, want := range []string{gatewaysCRD + " v1.2.1", "httproutes.gateway.networking.k8s.io no " + BundleVersionAnnotation, "grpcroutes.gateway.networking.k8s.io"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}
