package istio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GatewayAPIVersion is the Gateway API release Istio 1.30 is built against:
// sigs.k8s.io/gateway-api in istio.io/istio's go.mod on release-1.30
// (v0.0.0-20260826214018-9739e10eb9d7). Its standard channel is what Istio's
// documentation installs for waypoints and the ingress Gateway; istiod
// ignores CRDs older than it needs (pkg/config/schema/gatewayapi).
const GatewayAPIVersion = "v1.5.1"

// gatewayAPISum is that module's hash, as in istio.io/istio's go.sum: the
// CRDs applied are byte for byte the ones Istio was built against.
const gatewayAPISum = "h1:RqVRIlkhLhUO8wOHKTLnTJA6o/1un4po4/6M1nRzdd0="

const gatewayAPIModulePath = "sigs.k8s.io/gateway-api"

// BundleVersionAnnotation is where Gateway API CRDs name their release.
const BundleVersionAnnotation = "gateway.networking.k8s.io/bundle-version"

// LabelManagedBy marks what this package put on a cluster outside any Helm
// release (the Gateway API CRDs), and ManagedBy is its value: only objects
// carrying it are updated or removed; anything else is the cluster's own.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "meshclaims"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// GatewayAPICRDDir is config/crd/standard of sigs.k8s.io/gateway-api at
// GatewayAPIVersion in the Go module cache. When the module is not there it
// is downloaded through the Go module proxy (`go mod download`, which checks
// it against the checksum database), outside any module so no go.mod or
// go.sum changes; its hash must equal the one Istio's go.sum records.
func GatewayAPICRDDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", gatewayAPIModulePath+"@"+GatewayAPIVersion)
	cmd.Dir = os.TempDir()
	// A user's GOFLAGS (-mod=vendor) must not redirect the lookup.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var m struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" || runErr != nil {
		return "", fmt.Errorf("gateway API CRDs: go mod download %s@%s: %v %s %s", gatewayAPIModulePath, GatewayAPIVersion, runErr, m.Error, strings.TrimSpace(stderr.String()))
	}
	if m.Sum != gatewayAPISum {
		return "", fmt.Errorf("gateway API CRDs: %s@%s has hash %s, want %s (istio.io/istio's go.sum)", gatewayAPIModulePath, GatewayAPIVersion, m.Sum, gatewayAPISum)
	}
	return filepath.Join(m.Dir, "config", "crd", "standard"), nil
}

// GatewayCRDs is what InstallGatewayAPICRDs found and did.
type GatewayCRDs struct {
	// Applied are the CRDs this package applied (created, or updated where
	// an earlier run of this suite had put them).
	Applied []string
	// Foreign are CRDs the cluster already had from someone else, with
	// their bundle-version annotation ("" when they carry none); they are
	// left exactly as they are.
	Foreign map[string]string
	// Missing are CRDs of the pinned bundle absent from a cluster whose
	// Gateway API is foreign: not created, so no two bundles are mixed.
	Missing []string
	// Warning says how a foreign Gateway API differs from the pinned one;
	// empty when it matches or when the CRDs are ours.
	Warning string
}

// InstallGatewayAPICRDs brings the Gateway API standard-channel CRDs of
// GatewayAPIVersion (from Options.GatewayCRDDir, else GatewayAPICRDDir) onto
// the cluster, unless the cluster already has Gateway API CRDs of its own:
// then it changes nothing, records their bundle versions and warns when
// they differ from the pinned one. CRDs it applies carry LabelManagedBy, so
// Uninstall removes them and a later run knows them for its own. Only the
// bundle's CRDs are applied: its ValidatingAdmissionPolicy (safe-upgrades)
// governs how anyone may install CRDs later, a choice for the cluster's
// owner that Istio does not need.
func (i *Installer) InstallGatewayAPICRDs(ctx context.Context) (GatewayCRDs, error) {
	var rep GatewayCRDs
	dir := i.opts.GatewayCRDDir
	if dir == "" {
		d, err := GatewayAPICRDDir(ctx)
		if err != nil {
			return rep, fmt.Errorf("istio: %w", err)
		}
		dir = d
	}
	crds, err := gatewayCRDsIn(dir)
	if err != nil {
		return rep, fmt.Errorf("istio: Gateway API CRDs from %s: %w", dir, err)
	}
	a, err := newApplier(i.cfg)
	if err != nil {
		return rep, err
	}
	rep.Foreign = map[string]string{}
	var absent []string
	for _, u := range crds {
		have, err := a.dyn.Resource(crdGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			absent = append(absent, u.GetName())
		case err != nil:
			return rep, fmt.Errorf("istio: reading CRD %s: %w", u.GetName(), err)
		case have.GetLabels()[LabelManagedBy] != ManagedBy:
			rep.Foreign[have.GetName()] = have.GetAnnotations()[BundleVersionAnnotation]
		}
	}
	if len(rep.Foreign) > 0 {
		rep.Missing = absent
		rep.Warning = foreignWarning(rep)
		if rep.Warning != "" {
			i.logf("istio: WARNING: %s", rep.Warning)
		}
		i.logf("istio: Gateway API CRDs belong to the cluster (%d found); left as they are", len(rep.Foreign))
		return rep, nil
	}
	if err := i.guard.Check(ctx); err != nil {
		return rep, fmt.Errorf("istio: before applying Gateway API CRDs: %w", err)
	}
	for _, u := range crds {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelManagedBy] = ManagedBy
		u.SetLabels(labels)
		if err := a.apply(ctx, u, "", false); err != nil {
			return rep, fmt.Errorf("istio: Gateway API CRDs from %s: %w", dir, err)
		}
		rep.Applied = append(rep.Applied, u.GetName())
	}
	i.logf("istio: applied %d Gateway API %s CRDs", len(rep.Applied), GatewayAPIVersion)
	return rep, nil
}

func foreignWarning(rep GatewayCRDs) string {
	var differ []string
	for _, name := range sortedKeys(rep.Foreign) {
		if v := rep.Foreign[name]; v != GatewayAPIVersion {
			if v == "" {
				v = "no " + BundleVersionAnnotation
			}
			differ = append(differ, name+" "+v)
		}
	}
	var parts []string
	if len(differ) > 0 {
		parts = append(parts, fmt.Sprintf("the cluster's Gateway API CRDs are not %s, the version Istio 1.30 is built against: %s", GatewayAPIVersion, strings.Join(differ, ", ")))
	}
	if len(rep.Missing) > 0 {
		parts = append(parts, "absent from the cluster's Gateway API and not added (bundles are not mixed): "+strings.Join(rep.Missing, ", "))
	}
	return strings.Join(parts, "; ")
}

// gatewayCRDsIn reads the CRDs of a Gateway API CRD directory.
func gatewayCRDsIn(dir string) ([]*unstructured.Unstructured, error) {
	objs, err := readYAMLDir(dir)
	if err != nil {
		return nil, err
	}
	var crds []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
	if len(crds) == 0 {
		return nil, errors.New("no CustomResourceDefinition in it")
	}
	return crds, nil
}

// uninstallGatewayAPICRDs deletes the Gateway API CRDs that carry this
// package's mark, and nothing else; deleting a CRD deletes every object of
// its kind, so a CRD the cluster had before is never touched.
func (i *Installer) uninstallGatewayAPICRDs(ctx context.Context) error {
	a, err := newApplier(i.cfg)
	if err != nil {
		return err
	}
	l, err := a.dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		return fmt.Errorf("istio: listing Gateway API CRDs: %w", err)
	}
	var errs []error
	for _, crd := range l.Items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g != "gateway.networking.k8s.io" {
			continue
		}
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before deleting CRD %s: %w: %w", crd.GetName(), errGuard, err)
		}
		if err := a.dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("istio: deleting CRD %s: %w", crd.GetName(), err))
			continue
		}
		i.logf("istio: deleted Gateway API CRD %s", crd.GetName())
	}
	return errors.Join(errs...)
}
