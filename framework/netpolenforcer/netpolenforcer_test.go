package netpolenforcer

import (
	"context"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// daemonSet is a DaemonSet with the given containers, shaped as the
// projects' own manifests ship them (names, images, args).
func daemonSet(ns, name string, cs ...corev1.Container) appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": name}
	return appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: cs}},
		},
	}
}

// The aws-node DaemonSet of the VPC CNI add-on: the CNI container and the
// node agent, whose --enable-network-policy is false until the add-on's
// enableNetworkPolicy is "true" (the add-on's manifest, v1.19).
func awsNode(enable string) appsv1.DaemonSet {
	return daemonSet("kube-system", "aws-node",
		corev1.Container{Name: "aws-node", Image: "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.6-eksbuild.1"},
		corev1.Container{Name: "aws-eks-nodeagent", Image: "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent:v1.2.2-eksbuild.1",
			Args: []string{"--enable-ipv6=false", "--enable-network-policy=" + enable, "--enable-cloudwatch-logs=false", "--metrics-bind-addr=:8162"}})
}

func TestMatch(t *testing.T) {
	kubeProxy := daemonSet("kube-system", "kube-proxy", corev1.Container{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.36.3"})
	cases := []struct {
		name    string
		dss     []appsv1.DaemonSet
		on, off []string // names found enforcing, and found off
	}{
		{"no CNI DaemonSet at all (negative control)", []appsv1.DaemonSet{kubeProxy}, nil, nil},
		{"VPC CNI as the add-on installs it: agent off", []appsv1.DaemonSet{kubeProxy, awsNode("false")}, nil, []string{"Amazon VPC CNI network policy agent"}},
		{"VPC CNI with enableNetworkPolicy", []appsv1.DaemonSet{kubeProxy, awsNode("true")}, []string{"Amazon VPC CNI network policy agent"}, nil},
		{"Calico by its image under another container name", []appsv1.DaemonSet{daemonSet("calico-system", "calico-node",
			corev1.Container{Name: "node", Image: "quay.io/calico/node:v3.29.1"})}, []string{"Calico"}, nil},
		{"Cilium", []appsv1.DaemonSet{daemonSet("kube-system", "cilium", corev1.Container{Name: "cilium-agent", Image: "quay.io/cilium/cilium:v1.17.0@sha256:" + strings.Repeat("a", 64)})}, []string{"Cilium"}, nil},
		{"kube-router with its firewall", []appsv1.DaemonSet{daemonSet("kube-system", "kube-router", corev1.Container{Name: "kube-router", Image: "docker.io/cloudnativelabs/kube-router:v2.1.0",
			Args: []string{"--run-router=true", "--run-firewall=true", "--run-service-proxy=false"}})}, []string{"kube-router"}, nil},
		{"kube-router as a router only", []appsv1.DaemonSet{daemonSet("kube-system", "kube-router", corev1.Container{Name: "kube-router", Image: "docker.io/cloudnativelabs/kube-router:v2.1.0",
			Args: []string{"--run-router=true", "--run-firewall=false"}})}, nil, []string{"kube-router"}},
		{"an image whose name only ends like one", []appsv1.DaemonSet{daemonSet("default", "x", corev1.Container{Name: "x", Image: "example.com/notcalico/node-exporter:v1"})}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Match(c.dss)
			var on, off []string
			for _, f := range res.Found {
				if f.Off == "" {
					on = append(on, f.Name)
				} else {
					off = append(off, f.Name)
				}
			}
			if strings.Join(on, ",") != strings.Join(c.on, ",") || strings.Join(off, ",") != strings.Join(c.off, ",") {
				t.Errorf("found on %v, off %v; want on %v, off %v (%+v)", on, off, c.on, c.off, res.Found)
			}
			if len(res.Enforcing()) != len(c.on) {
				t.Errorf("Enforcing() = %v, want %d", res.Enforcing(), len(c.on))
			}
		})
	}
}

func TestOffSaysWhy(t *testing.T) {
	res := Match([]appsv1.DaemonSet{awsNode("false")})
	if len(res.Found) != 1 || res.Found[0].String() != "Amazon VPC CNI network policy agent (kube-system/aws-node[aws-eks-nodeagent]) with enforcement off: --enable-network-policy=false" {
		t.Errorf("found %v", res.Found)
	}
	c := corev1.Container{Name: "aws-network-policy-agent", Image: "amazon/aws-network-policy-agent:v1.0.7"}
	res = Match([]appsv1.DaemonSet{daemonSet("kube-system", "aws-node", c)})
	if len(res.Found) != 1 || !strings.Contains(res.Found[0].Off, "not given") {
		t.Errorf("agent without the flag: %v, want off (not given)", res.Found)
	}
}

// Lookup on a real API server: nothing found on a cluster of none, the
// agent found off, then on, as the DaemonSet changes.
func TestLookupOnAPIServer(t *testing.T) {
	srv := apiserver.NewForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	res, err := Lookup(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Found) != 0 || res.Unreadable != "" {
		t.Fatalf("empty cluster: %+v", res)
	}
	ds := awsNode("false")
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(ctx, &ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().DaemonSets(ds.Namespace).Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
	})
	res, err = Lookup(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Found) != 1 || len(res.Enforcing()) != 0 {
		t.Fatalf("agent off: %+v", res)
	}
	got, err := cs.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := got.ResourceVersion
	got.Spec.Template.Spec.Containers[1].Args[1] = "--enable-network-policy=true"
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = Lookup(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Enforcing()) != 1 || res.DaemonSets != 1 {
		t.Fatalf("agent on: %+v", res)
	}
	after, err := cs.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion == rv {
		t.Fatal("the update did not take; the test proves nothing")
	}
}

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }
