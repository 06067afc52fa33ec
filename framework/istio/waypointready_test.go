package istio_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// cluster is the test API server, with namespace ns created.
type cluster struct {
	t  *testing.T
	k  *kube.Cluster
	c  client.Client
	ns string
}

func newCluster(t *testing.T, ns string) *cluster {
	t.Helper()
	srv := apiserver.ForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := apply.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, k: k, c: a.Client(), ns: ns}
	if err := c.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// deployment creates a Deployment as istiod's gateway templates make it.
func (c *cluster) deployment(name string) {
	labels := map[string]string{"gateway.networking.k8s.io/gateway-name": name}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "auto"}}}}},
	}
	if err := c.c.Create(context.Background(), d); err != nil {
		c.t.Error(err)
	}
}

// available writes the Deployment controller's status for one ready,
// available replica (envtest runs no controllers).
func (c *cluster) available(name string) {
	var d appsv1.Deployment
	ctx := context.Background()
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, &d); err != nil {
		c.t.Error(err)
		return
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := c.c.Status().Update(ctx, &d); err != nil {
		c.t.Error(err)
	}
}

// gatewayStatus writes Gateway status as istiod's reportGatewayStatus does
// (pilot/pkg/config/kube/gateway): Accepted, Programmed with the given
// status and reason, and the addresses (a waypoint reports both its
// Service's IP and hostname once its pod is ready).
func (c *cluster) gatewayStatus(name string, programmed metav1.ConditionStatus, reason, message string, addrs ...gatewayv1.GatewayStatusAddress) {
	var gw gatewayv1.Gateway
	ctx := context.Background()
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, &gw); err != nil {
		c.t.Error(err)
		return
	}
	now := metav1.Now()
	gw.Status.Conditions = []metav1.Condition{
		{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gatewayv1.GatewayReasonAccepted), Message: "Resource accepted", ObservedGeneration: gw.Generation, LastTransitionTime: now},
		{Type: string(gatewayv1.GatewayConditionProgrammed), Status: programmed, Reason: reason, Message: message, ObservedGeneration: gw.Generation, LastTransitionTime: now},
	}
	gw.Status.Addresses = addrs
	if err := c.c.Status().Update(ctx, &gw); err != nil {
		c.t.Error(err)
	}
}

// programmedMsg is istiod's message for a programmed waypoint
// (gatewaycommon.SetProgrammedCondition).
func programmedMsg(ns string) string {
	return "Resource programmed, assigned to service(s) " + fixtures.WaypointName + "." + ns + ".svc.cluster.local:15008"
}

func waypointAddresses(ns string) []gatewayv1.GatewayStatusAddress {
	ip, host := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	return []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "10.96.12.34"}, {Type: &host, Value: fixtures.WaypointName + "." + ns + ".svc.cluster.local"}}
}

func ptr[T any](v T) *T { return &v }

func (c *cluster) waypoint() {
	if err := c.c.Create(context.Background(), fixtures.Waypoint(fixtures.Target{Namespace: c.ns, Run: "waypoint-test"})); err != nil {
		c.t.Fatal(err)
	}
}

// The wait returns only once istiod has created the waypoint's Deployment,
// it is available, and the Gateway is Programmed with an address; each of
// those is established later, from a goroutine, in the order istiod's
// controllers would.
func TestWaitWaypointWaitsForDeploymentProgrammedAndAddress(t *testing.T) {
	c := newCluster(t, "waypoint-later")
	c.waypoint()
	var done atomic.Bool
	go func() {
		step := func() { time.Sleep(1500 * time.Millisecond) }
		step()
		c.deployment(fixtures.WaypointName)
		step()
		// Programmed, but istiod reports no address before the pod is ready.
		c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns))
		step()
		c.available(fixtures.WaypointName)
		step()
		done.Store(true)
		c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns), waypointAddresses(c.ns)...)
	}()
	objs, err := fixtures.ForMode(mode.AmbientL7, fixtures.Options{Run: "waypoint-test", Images: fixtures.Images{Workload: "meshclaims/workload:dev", PullPolicy: "IfNotPresent"}})
	if err != nil {
		t.Fatal(err)
	}
	// The set-up's call: it finds the waypoint among the mode's objects.
	// Those live in the mode's namespace; point the waypoint at ours.
	var wp []client.Object
	for _, o := range objs {
		if gw, ok := o.(*gatewayv1.Gateway); ok {
			gw = gw.DeepCopy()
			gw.Namespace = c.ns
			wp = append(wp, gw)
		}
	}
	if len(wp) != 1 {
		t.Fatalf("ambient-l7's objects hold %d Gateways, want its one waypoint", len(wp))
	}
	if err := istio.WaitWaypoints(context.Background(), c.k, c.c, wp, 2*time.Minute, t.Logf); err != nil {
		t.Fatal(err)
	}
	if !done.Load() {
		t.Fatal("the wait returned before the waypoint had an address")
	}
}

// Negative controls: each missing piece keeps the wait from succeeding,
// and the error names it.
func TestWaitWaypointNamesWhatIsMissing(t *testing.T) {
	cases := []struct {
		name  string
		setUp func(c *cluster)
		want  string
	}{
		{"programmed false", func(c *cluster) {
			c.deployment(fixtures.WaypointName)
			c.available(fixtures.WaypointName)
			c.gatewayStatus(fixtures.WaypointName, metav1.ConditionFalse, string(gatewayv1.GatewayReasonAddressNotAssigned), "Failed to assign to any requested addresses: no instances found for hostname \"waypoint."+c.ns+".svc.cluster.local\"",
				// istiod never removes an address once reported: a waypoint
				// whose pods went unready keeps it.
				waypointAddresses(c.ns)...)
		}, "is Programmed=False (reason AddressNotAssigned"},
		{"no address", func(c *cluster) {
			c.deployment(fixtures.WaypointName)
			c.available(fixtures.WaypointName)
			c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns))
		}, "has no address in its status"},
		{"no status yet", func(c *cluster) {
			c.deployment(fixtures.WaypointName)
			c.available(fixtures.WaypointName)
		}, "is Programmed=Unknown (reason Pending"},
		{"programmed for an older generation", func(c *cluster) {
			c.deployment(fixtures.WaypointName)
			c.available(fixtures.WaypointName)
			c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns), waypointAddresses(c.ns)...)
			// A spec change istiod has not reconciled yet.
			var gw gatewayv1.Gateway
			if err := c.c.Get(context.Background(), client.ObjectKey{Namespace: c.ns, Name: fixtures.WaypointName}, &gw); err != nil {
				c.t.Fatal(err)
			}
			gw.Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}}
			if err := c.c.Update(context.Background(), &gw); err != nil {
				c.t.Fatal(err)
			}
		}, "is Programmed=True for generation 1, but is at generation 2"},
		{"deployment never appears", func(c *cluster) {
			c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns), waypointAddresses(c.ns)...)
		}, "never created"},
		{"deployment not available", func(c *cluster) {
			c.deployment(fixtures.WaypointName)
			c.gatewayStatus(fixtures.WaypointName, metav1.ConditionTrue, string(gatewayv1.GatewayReasonProgrammed), programmedMsg(c.ns), waypointAddresses(c.ns)...)
		}, "created but not available"},
	}
	for i, tc := range cases {
		c := newCluster(t, "waypoint-missing-"+string(rune('a'+i)))
		c.waypoint()
		tc.setUp(c)
		err := istio.WaitWaypoint(context.Background(), c.k, c.c, c.ns, fixtures.WaypointName, 3*time.Second)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "waypoint "+c.ns+"/"+fixtures.WaypointName) {
			t.Errorf("%s: error %v, want one naming the waypoint and %q", tc.name, err, tc.want)
		}
	}
}
