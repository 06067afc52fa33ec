package istio

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayProgrammed reports whether istiod has programmed Gateway gw: its
// condition Programmed is True for the Gateway's current generation and its
// status lists at least one address. istiod (pilot/pkg/config/kube/gateway,
// reportGatewayStatus) reports addresses, of type IPAddress or Hostname
// (waypoints get both), only once the Gateway's pods are ready ("do not
// report an address until we are ready"); until then ztunnel has no waypoint
// to send a namespace's traffic to and sends it straight to the pods. why
// says what is missing.
func GatewayProgrammed(gw *gatewayv1.Gateway) (ok bool, why string) {
	c := findCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	switch {
	case c == nil:
		return false, fmt.Sprintf("Gateway %s/%s has no %s condition yet (conditions: %s)", gw.Namespace, gw.Name, gatewayv1.GatewayConditionProgrammed, conditionList(gw.Status.Conditions))
	case c.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("Gateway %s/%s is %s=%s (reason %s: %s)", gw.Namespace, gw.Name, c.Type, c.Status, c.Reason, c.Message)
	case c.ObservedGeneration < gw.Generation:
		return false, fmt.Sprintf("Gateway %s/%s is %s=True for generation %d, but is at generation %d", gw.Namespace, gw.Name, c.Type, c.ObservedGeneration, gw.Generation)
	}
	var addrs []string
	for _, a := range gw.Status.Addresses {
		if a.Value != "" {
			addrs = append(addrs, a.Value)
		}
	}
	if len(addrs) == 0 {
		return false, fmt.Sprintf("Gateway %s/%s is Programmed=True but has no address in its status yet", gw.Namespace, gw.Name)
	}
	return true, fmt.Sprintf("Gateway %s/%s Programmed, addresses %v", gw.Namespace, gw.Name, addrs)
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func conditionList(cs []metav1.Condition) string {
	if len(cs) == 0 {
		return "none"
	}
	var s []string
	for _, c := range cs {
		s = append(s, c.Type+"="+string(c.Status))
	}
	return strings.Join(s, ", ")
}

// WaitGatewayProgrammed polls Gateway ns/name until GatewayProgrammed holds,
// for at most timeout. A Gateway not found yet is waited for too. The error
// names the Gateway and what was still missing at the end.
func WaitGatewayProgrammed(ctx context.Context, c client.Reader, ns, name string, timeout time.Duration) error {
	// last is the latest answer of the API server; a failed read (a
	// throttled client near the deadline) does not replace it.
	last := fmt.Sprintf("Gateway %s/%s not read yet", ns, name)
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var gw gatewayv1.Gateway
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &gw); err != nil {
			if apierrors.IsNotFound(err) {
				last = fmt.Sprintf("Gateway %s/%s does not exist", ns, name)
			} else if strings.HasSuffix(last, "not read yet") {
				last = fmt.Sprintf("reading Gateway %s/%s: %v", ns, name, err)
			}
			return false, nil
		}
		ok, why := GatewayProgrammed(&gw)
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("gateway %s/%s not programmed within %s: %s", ns, name, timeout, last)
	}
	return nil
}
