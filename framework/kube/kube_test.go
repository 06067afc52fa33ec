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

// Quiet against a real API server: a Service whose endpoints match its
// (absent) ready pods is steady; a terminating pod or a terminating endpoint
// is not, and the reason says which. (Single checks, not timed waits: the
// machine may be slow.)
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
	expect := func(wantQuiet bool, wantWhy string) {
		t.Helper()
		quiet, why, err := k.Quiet(ctx, ns, "echo")
		if err != nil || quiet != wantQuiet || !strings.Contains(why, wantWhy) {
			t.Fatalf("Quiet = %v, %q, %v; want %v, %q", quiet, why, err, wantQuiet, wantWhy)
		}
	}
	expect(true, "steady")
	if err := k.WaitQuiet(ctx, ns, "echo", time.Minute); err != nil {
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
	expect(false, "endpoint [198.18.0.9] is terminating")
	must(k.Client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "echo-1", metav1.DeleteOptions{}))

	// A pod kept by a finalizer stays terminating after its delete.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-old", Labels: map[string]string{"app": "echo"}, Finalizers: []string{"meshclaims.io/test"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "x"}}}}
	_, err = k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	must(err)
	must(k.Client.CoreV1().Pods(ns).Delete(ctx, "echo-old", metav1.DeleteOptions{}))
	expect(false, "pod echo-old is terminating")
	_, err = k.Client.CoreV1().Pods(ns).Patch(ctx, "echo-old", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	must(err)
}
