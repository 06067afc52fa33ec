package istio

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshclaims/meshclaims/framework/kube"
)

// WaitWaypoint waits until waypoint Gateway ns/name serves: istiod has
// created its Deployment (named after the Gateway: the istio-waypoint class
// adds no suffix) and that has rolled out, and the Gateway is Programmed
// with an address. Until istiod reports the address, ztunnel sends the
// namespace's traffic straight to the pods, so an L7 spec started earlier
// would measure L4. k reads the Deployment, c the Gateway.
func WaitWaypoint(ctx context.Context, k *kube.Cluster, c client.Client, ns, name string, timeout time.Duration) error {
	start := time.Now()
	if err := k.WaitCreatedAvailable(ctx, ns, timeout, name); err != nil {
		return fmt.Errorf("waypoint %s/%s: %w", ns, name, err)
	}
	if err := WaitGatewayProgrammed(ctx, c, ns, name, timeout-time.Since(start)); err != nil {
		return fmt.Errorf("waypoint %s/%s: %w", ns, name, err)
	}
	return nil
}

// WaitWaypoints runs WaitWaypoint for every waypoint Gateway among objs (the
// objects a set-up applied), one timeout each.
func WaitWaypoints(ctx context.Context, k *kube.Cluster, c client.Client, objs []client.Object, timeout time.Duration, logf func(string, ...any)) error {
	for _, o := range objs {
		gw, ok := o.(*gatewayv1.Gateway)
		if !ok || gw.Spec.GatewayClassName != WaypointClass {
			continue
		}
		logf("waypoint: waiting for %s/%s (Deployment available, Gateway Programmed with an address)", gw.Namespace, gw.Name)
		if err := WaitWaypoint(ctx, k, c, gw.Namespace, gw.Name, timeout); err != nil {
			return err
		}
	}
	return nil
}
