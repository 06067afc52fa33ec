package kube

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

// WaitQuiet against a real API server: a Service whose endpoints match its
// (absent) ready pods is steady; a terminating pod or a terminating endpoint
// is not, and the error says which.
func TestWaitQuiet(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "quiet-test"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	_, err = k.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"}, Ports: []corev1.ServicePort{{Port: 8080}}}}, metav1.CreateOptions{})
	must(err)
	if err := k.WaitQuiet(ctx, ns, "echo", 5*time.Second); err != nil {
		t.Fatalf("empty service not steady: %v", err)
	}

	yes := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "echo-1", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.18.0.9"}, Conditions: discoveryv1.EndpointConditions{Terminating: &yes}}},
	}
	_, err = k.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{})
	must(err)
	if err := k.WaitQuiet(ctx, ns, "echo", 2*time.Second); err == nil || !strings.Contains(err.Error(), "endpoint [198.18.0.9] is terminating") {
		t.Fatalf("terminating endpoint not seen: %v", err)
	}
	must(k.Client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "echo-1", metav1.DeleteOptions{}))

	// A pod kept by a finalizer stays terminating after its delete.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-old", Labels: map[string]string{"app": "echo"}, Finalizers: []string{"meshclaims.io/test"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "x"}}}}
	_, err = k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	must(err)
	must(k.Client.CoreV1().Pods(ns).Delete(ctx, "echo-old", metav1.DeleteOptions{}))
	if err := k.WaitQuiet(ctx, ns, "echo", 2*time.Second); err == nil || !strings.Contains(err.Error(), "pod echo-old is terminating") {
		t.Fatalf("terminating pod not seen: %v", err)
	}
	_, err = k.Client.CoreV1().Pods(ns).Patch(ctx, "echo-old", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	must(err)
}
