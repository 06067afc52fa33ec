package kube

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// gatewayDeployment is a Deployment as istiod's gateway templates make it
// (one replica, selected by gateway.networking.k8s.io/gateway-name).
func gatewayDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"gateway.networking.k8s.io/gateway-name": name}
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "auto"}}}}},
	}
}

// setRollout writes the status the Deployment controller would (envtest runs
// no controllers): ready says whether its one replica is ready and available.
func setRollout(t *testing.T, k *Cluster, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	d, err := k.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1}
	if ready {
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
	}
	if _, err := k.Client.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}

// A Deployment that a controller creates after the wait began: the first
// NotFound is waited through, and the wait ends only once the Deployment
// has rolled out. WaitAvailable, which expects the Deployment to exist,
// fails at once on the same situation.
func TestWaitCreatedAvailable(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "created-later"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitAvailable(ctx, ns, time.Minute, "ingress-istio"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("WaitAvailable on a Deployment not created yet: %v (want its NotFound)", err)
	}

	var available atomic.Bool
	go func() {
		time.Sleep(2 * time.Second)
		if _, err := k.Client.AppsV1().Deployments(ns).Create(ctx, gatewayDeployment("ingress-istio"), metav1.CreateOptions{}); err != nil {
			t.Error(err)
			return
		}
		setRollout(t, k, ns, "ingress-istio", false)
		time.Sleep(2 * time.Second)
		available.Store(true)
		setRollout(t, k, ns, "ingress-istio", true)
	}()
	if err := k.WaitCreatedAvailable(ctx, ns, 2*time.Minute, "ingress-istio"); err != nil {
		t.Fatal(err)
	}
	if !available.Load() {
		t.Fatal("WaitCreatedAvailable returned before the Deployment was available")
	}

	// Negative controls: never created; created but never ready.
	err = k.WaitCreatedAvailable(ctx, ns, 3*time.Second, "never-istio")
	if err == nil || !strings.Contains(err.Error(), "deployment created-later/never-istio") || !strings.Contains(err.Error(), "never created") {
		t.Errorf("missing Deployment: %v", err)
	}
	if _, err := k.Client.AppsV1().Deployments(ns).Create(ctx, gatewayDeployment("stuck-istio"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setRollout(t, k, ns, "stuck-istio", false)
	err = k.WaitCreatedAvailable(ctx, ns, 3*time.Second, "stuck-istio")
	if err == nil || !strings.Contains(err.Error(), "created but not available") || !strings.Contains(err.Error(), "0 of 1 updated replicas are ready") {
		t.Errorf("Deployment never ready: %v", err)
	}
}
