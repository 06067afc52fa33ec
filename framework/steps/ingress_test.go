package steps_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

// cluster is a spec.Cluster on the test API server, with namespace ns created.
type cluster struct {
	t    *testing.T
	mesh *spec.Cluster
	c    client.Client
	ns   string
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
	c := &cluster{t: t, mesh: &spec.Cluster{Kube: k, Applier: a}, c: a.Client(), ns: ns}
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

// IngressURL waits for the Deployment istiod creates for the ingress
// Gateway instead of failing on its first NotFound.
func TestIngressURLWaitsForIstiodsDeployment(t *testing.T) {
	m := mode.AmbientL4
	c := newCluster(t, m.Namespace())
	cfg := &config.Config{Modes: []mode.Mode{m}, Timeouts: config.DefaultTimeouts()}
	r := spec.NewRun(&claims.Claim{ID: "canary.ingress-with-l4"}, m, &spec.Env{Config: cfg, Cluster: c.mesh}, nil)
	var done atomic.Bool
	go func() {
		time.Sleep(2 * time.Second)
		c.deployment(fixtures.IngressServiceName)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fixtures.IngressServiceName, Namespace: c.ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"gateway.networking.k8s.io/gateway-name": fixtures.IngressName}, Ports: []corev1.ServicePort{{Name: "http", Port: fixtures.IngressPort}}}}
		if err := c.c.Create(context.Background(), svc); err != nil {
			t.Error(err)
		}
		time.Sleep(1500 * time.Millisecond)
		done.Store(true)
		c.available(fixtures.IngressServiceName)
	}()
	url, err := steps.IngressURL(context.Background(), r, "/debug")
	if err != nil {
		t.Fatal(err)
	}
	if !done.Load() {
		t.Fatal("IngressURL returned before the ingress Deployment was available")
	}
	if want := "http://ingress-istio." + c.ns + ":80/debug"; url != want {
		t.Errorf("URL %q, want %q", url, want)
	}
}
