package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// The window Helm 3's wait leaves open: istio-cni's chart sets
// maxUnavailable 1, so on one node Helm expects 1-1 = 0 ready pods.
func TestDaemonSetRolledOutIsStricterThanHelm(t *testing.T) {
	one := intstr.FromInt32(1)
	ds := func(st appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-cni-node", Generation: 1},
			Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}},
			Status: st,
		}
	}
	for _, c := range []struct {
		name string
		st   appsv1.DaemonSetStatus
		want string // "" = rolled out
	}{
		{"not observed", appsv1.DaemonSetStatus{}, "has not observed generation 1"},
		{"no node yet", appsv1.DaemonSetStatus{ObservedGeneration: 1}, "desired 0"},
		{"old template", appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1}, "0 of 1 pods run the current template"},
		// Helm 3 calls this one ready (NumberReady 0 >= 1 - maxUnavailable 1).
		{"scheduled, none ready", appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, "0 of 1 pods ready"},
		{"ready, not available", appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1}, "0 of 1 pods available"},
		{"rolled out", appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1}, ""},
	} {
		ok, why := DaemonSetRolledOut(ds(c.st))
		if ok != (c.want == "") || !strings.Contains(why, c.want) {
			t.Errorf("%s: DaemonSetRolledOut = %v, %q; want rolled out %v with %q", c.name, ok, why, c.want == "", c.want)
		}
	}
}

// WaitDaemonSets against a real API server (no DaemonSet controller runs in
// it, so the test writes the status subresource as the controller would):
// a missing DaemonSet and one with no ready pod time out naming what was
// missing; once the status says every pod is ready and available the wait
// returns.
func TestWaitDaemonSets(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "ds-test"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitDaemonSets(ctx, k.Client, ns, 2*time.Second, "istio-cni-node"); err == nil || !strings.Contains(err.Error(), "never created") {
		t.Fatalf("missing DaemonSet: err = %v, want never created", err)
	}
	labels := map[string]string{"k8s-app": "istio-cni-node"}
	ds, err := k.Client.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-cni-node"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "install-cni", Image: "localhost/istio/install-cni:test"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, UpdatedNumberScheduled: 1}
	if ds, err = k.Client.AppsV1().DaemonSets(ns).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitDaemonSets(ctx, k.Client, ns, 2*time.Second, "istio-cni-node"); err == nil || !strings.Contains(err.Error(), "0 of 1 pods ready") {
		t.Fatalf("no pod ready: err = %v, want 0 of 1 pods ready", err)
	}
	ds.Status.NumberReady, ds.Status.NumberAvailable = 1, 1
	if _, err = k.Client.AppsV1().DaemonSets(ns).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitDaemonSets(ctx, k.Client, ns, 30*time.Second, "istio-cni-node"); err != nil {
		t.Fatalf("rolled out: %v", err)
	}
}

// The message names what the API server said, not how the last read was
// cut off: NotFound and then a read refused at the deadline (client-go's
// rate limiter: "would exceed context deadline") is "never created"; only
// reads that all failed say "reading it failed". The real API server's
// version of this raced (TestWaitDaemonSets failed about half its runs).
func TestWaitDaemonSetsReadErrorsDoNotHideNotFound(t *testing.T) {
	refused := func() error {
		return fmt.Errorf("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	}
	for _, c := range []struct {
		name  string
		reads []error
		want  string
	}{
		{"NotFound, then refused at the deadline", []error{apierrors.NewNotFound(appsv1.Resource("daemonsets"), "istio-cni-node"), refused()}, "it was never created"},
		{"every read failed", []error{refused()}, "reading it failed: client rate limiter"},
	} {
		cs := fake.NewClientset()
		i := 0
		cs.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			err := c.reads[min(i, len(c.reads)-1)]
			i++
			return true, nil, err
		})
		err := WaitDaemonSets(context.Background(), cs, "ds-test", 1500*time.Millisecond, "istio-cni-node")
		if err == nil || !strings.Contains(err.Error(), c.want) || i < 2 {
			t.Errorf("%s: err = %v after %d reads, want %q", c.name, err, i, c.want)
		}
	}
}
