package istio

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// WaypointClass is the GatewayClass of Istio waypoints.
const WaypointClass = "istio-waypoint"

// UseWaypointLabel enrolls a namespace's traffic in a waypoint.
const UseWaypointLabel = "istio.io/use-waypoint"

// ApplyWaypoint does what `istioctl waypoint apply -n NS --enroll-namespace`
// does: server-side applies the waypoint Gateway (built by fixtures) and
// labels its namespace istio.io/use-waypoint=<gateway name>. The Gateway
// must be of class istio-waypoint and name its namespace.
func ApplyWaypoint(ctx context.Context, cfg *rest.Config, guard WriteGuard, gateway runtime.Object) error {
	if guard == nil {
		return errors.New("waypoint: nil write guard")
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gateway)
	if err != nil {
		return fmt.Errorf("waypoint: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	if err := checkWaypoint(u); err != nil {
		return err
	}
	if err := guard.Check(ctx); err != nil {
		return fmt.Errorf("waypoint: before applying %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	// Typed objects marshal an empty status and creationTimestamp: null,
	// which are not ours to apply.
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := a.apply(ctx, u, "", false); err != nil {
		return fmt.Errorf("waypoint: %w", err)
	}
	// A merge patch of the one label, not an apply: applying the Namespace
	// under our field manager would drop the labels the fixtures applied
	// under the same manager.
	nsObj := &unstructured.Unstructured{}
	nsObj.SetAPIVersion("v1")
	nsObj.SetKind("Namespace")
	nsObj.SetName(u.GetNamespace())
	ri, err := a.resource(nsObj, "")
	if err != nil {
		return err
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, UseWaypointLabel, u.GetName())
	if _, err := ri.Patch(ctx, u.GetNamespace(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("waypoint: enrolling namespace %s: %w", u.GetNamespace(), err)
	}
	return nil
}

func checkWaypoint(u *unstructured.Unstructured) error {
	if u.GroupVersionKind().Group != "gateway.networking.k8s.io" || u.GetKind() != "Gateway" {
		return fmt.Errorf("waypoint: got %s, want a gateway.networking.k8s.io Gateway", u.GroupVersionKind())
	}
	if u.GetNamespace() == "" || u.GetName() == "" {
		return fmt.Errorf("waypoint: Gateway %q has no namespace; a waypoint serves the namespace it lives in", u.GetName())
	}
	class, _, _ := unstructured.NestedString(u.Object, "spec", "gatewayClassName")
	if class != WaypointClass {
		return fmt.Errorf("waypoint: Gateway %s/%s has class %q; accepted: %s", u.GetNamespace(), u.GetName(), class, WaypointClass)
	}
	return nil
}
