package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// Spread on a real API server: pods bound to two nodes (and one not yet
// scheduled) are counted per node; another app's pods are not.
func TestSpread(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "spread-test"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []struct{ app, node string }{{"echo", "w1"}, {"echo", "w2"}, {"echo", "w1"}, {"echo", ""}, {"client", "w2"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('a'+i)), Labels: map[string]string{"app": p.app}},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if _, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := k.Spread(ctx, ns, "app=echo")
	if want := "4 pods on 3 nodes: (unscheduled) 1, w1 2, w2 1"; err != nil || got != want {
		t.Fatalf("Spread = %q, %v; want %q", got, err, want)
	}
	if got, err := k.Spread(ctx, ns, "app=client"); err != nil || got != "1 pod on 1 node: w2 1" {
		t.Fatalf("Spread of one pod = %q, %v", got, err)
	}
}
