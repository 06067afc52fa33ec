package istio

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// What Helm's uninstall leaves of an Istio the suite installed, found on
// the first sidecar run through -provider=existing (2026-12-02): Istio's
// CRDs, which the base chart marks helm.sh/resource-policy: keep so that
// uninstalling never deletes everyone's VirtualServices, and the
// GatewayClasses istiod's controller creates (istio, istio-remote) in a
// Gateway API that was the cluster's. The suite removes both when, and only
// when, this run brought them: CRDs it marks with LabelManagedBy right
// after creating them, GatewayClasses absent before its istiod started.

var gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}

// istioCRDGroup says whether a CRD belongs to Istio's API groups.
func istioCRDGroup(group string) bool {
	return group == "istio.io" || strings.HasSuffix(group, ".istio.io")
}

// istioState is what the cluster held before the charts: Istio's CRDs and
// the GatewayClasses, by name.
type istioState struct {
	crds, gatewayClasses map[string]bool
}

func (i *Installer) readIstioState(ctx context.Context) (istioState, error) {
	st := istioState{crds: map[string]bool{}, gatewayClasses: map[string]bool{}}
	dyn, err := dynamic.NewForConfig(i.cfg)
	if err != nil {
		return st, err
	}
	crds, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("istio: listing CRDs: %w", err)
	}
	for _, c := range crds.Items {
		if g, _, _ := unstructured.NestedString(c.Object, "spec", "group"); istioCRDGroup(g) {
			st.crds[c.GetName()] = true
		}
	}
	gcs, err := dyn.Resource(gatewayClassGVR).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	case err != nil:
		return st, fmt.Errorf("istio: listing GatewayClasses: %w", err)
	default:
		for _, g := range gcs.Items {
			st.gatewayClasses[g.GetName()] = true
		}
	}
	return st, nil
}

// markIstioCRDs labels the Istio CRDs absent before the charts as this
// package's, so Uninstall (of this run, or of a later one on a kept
// cluster) deletes them.
func (i *Installer) markIstioCRDs(ctx context.Context, before istioState) error {
	now, err := i.readIstioState(ctx)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	var marked []string
	for _, name := range sortedKeys(now.crds) {
		if before.crds[name] {
			continue
		}
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before marking CRD %s: %w", name, err)
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, LabelManagedBy, ManagedBy)
		if _, err := dyn.Resource(crdGVR).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("istio: marking CRD %s: %w", name, err)
		}
		marked = append(marked, name)
	}
	if len(marked) > 0 {
		i.logf("istio: %d Istio CRDs created by this run, marked for removal after it", len(marked))
	}
	return nil
}

// uninstallLeftovers deletes, once istiod is gone, the GatewayClasses of
// Istio's controllers that were not there before Install, and the Istio
// CRDs carrying this package's mark, waiting for the CRDs to go.
func (i *Installer) uninstallLeftovers(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	if i.before != nil {
		gcs, err := dyn.Resource(gatewayClassGVR).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		case err != nil:
			return fmt.Errorf("istio: listing GatewayClasses: %w", err)
		default:
			for _, g := range gcs.Items {
				ctrl, _, _ := unstructured.NestedString(g.Object, "spec", "controllerName")
				if i.before.gatewayClasses[g.GetName()] || !strings.HasPrefix(ctrl, "istio.io/") {
					continue
				}
				if err := i.guard.Check(ctx); err != nil {
					return fmt.Errorf("istio: before deleting GatewayClass %s: %w: %w", g.GetName(), errGuard, err)
				}
				if err := dyn.Resource(gatewayClassGVR).Delete(ctx, g.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("istio: deleting GatewayClass %s: %w", g.GetName(), err)
				}
				i.logf("istio: deleted GatewayClass %s (%s), created by this run's istiod", g.GetName(), ctrl)
			}
		}
	}
	l, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		return fmt.Errorf("istio: listing marked CRDs: %w", err)
	}
	var names []string
	for _, c := range l.Items {
		if g, _, _ := unstructured.NestedString(c.Object, "spec", "group"); istioCRDGroup(g) {
			names = append(names, c.GetName())
		}
	}
	for _, name := range names {
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before deleting CRD %s: %w: %w", name, errGuard, err)
		}
		if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("istio: deleting CRD %s: %w", name, err)
		}
	}
	if len(names) == 0 {
		return nil
	}
	deadline := time.Now().Add(i.opts.Timeout)
	for {
		var left []string
		for _, name := range names {
			if _, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{}); err == nil {
				left = append(left, name)
			}
		}
		if len(left) == 0 {
			i.logf("istio: deleted %d Istio CRDs this run created", len(names))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("istio: Istio CRDs still there %v after their deletion: %v", i.opts.Timeout, left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
