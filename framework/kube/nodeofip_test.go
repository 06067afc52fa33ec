package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// NodeOfIP on a real API server: a live pod's IP names its node even
// outside every pod CIDR; a deleted pod's IP is placed by its node's pod
// CIDR; a host-network pod's address (its node's) does not place a pod
// IP; an address in no CIDR, or not an address, is "".
func TestNodeOfIP(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, cidr := range map[string]string{"w1": "10.244.1.0/24", "w2": "10.244.2.0/24"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}}}
		if _, err := k.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "nodeofip-test"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, node, ip string
		host           bool
	}{{"echo", "w2", "192.168.9.9", false}, {"router", "w1", "172.18.0.3", true}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: corev1.PodSpec{NodeName: p.node, HostNetwork: p.host, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		created, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.PodIP, created.Status.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
		if _, err := k.Client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodeOf, err := k.NodeOfIP(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{"192.168.9.9": "w2", "10.244.1.7": "w1", "10.244.2.200": "w2", "172.18.0.3": "", "10.9.0.1": "", "not-an-ip": ""} {
		if got := nodeOf(ip); got != want {
			t.Errorf("NodeOfIP(%q) = %q, want %q", ip, got, want)
		}
	}
}
