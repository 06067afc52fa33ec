package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

func daemonSet(images ...string) appsv1.DaemonSet {
	var ds appsv1.DaemonSet
	for _, im := range images {
		ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, corev1.Container{Image: im})
	}
	return ds
}

// Only a kube-router before v2.6.1 rewrites other programs' ipsets; the
// node image's v2.1.0 is found wherever its registry is, and kind's own
// kindnetd, a fixed kube-router, or a tag that is not a version are not.
func TestIpsetRewritingKubeRouter(t *testing.T) {
	for _, c := range []struct {
		images []string
		want   string
	}{
		{[]string{"localhost/meshclaims/kube-router:v2.1.0"}, "localhost/meshclaims/kube-router:v2.1.0"},
		{[]string{"localhost:5000/cloudnativelabs/kube-router:v2.5.0@sha256:0123"}, "localhost:5000/cloudnativelabs/kube-router:v2.5.0@sha256:0123"},
		{[]string{"busybox:1.36", "docker.io/cloudnativelabs/kube-router:1.6.0"}, "docker.io/cloudnativelabs/kube-router:1.6.0"},
		// negative controls: nothing found
		{[]string{"docker.io/cloudnativelabs/kube-router:v2.6.1"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router:v2.7.0"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router:latest"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router@sha256:0123"}, ""},
		{[]string{"docker.io/kindest/kindnetd:v20250512-df8de77b"}, ""},
		{[]string{"localhost:5000/not-kube-router:v2.1.0"}, ""},
	} {
		if got := ipsetRewritingKubeRouter([]appsv1.DaemonSet{daemonSet(c.images...)}); got != c.want {
			t.Errorf("%v: got %q, want %q", c.images, got, c.want)
		}
	}
}

// On kind over an ipset-rewriting kube-router, istio-cni runs in native
// nftables mode, rendered by Istio's own chart into istio-cni's ConfigMap,
// and the report says why; on a small cluster the sizing values stay
// beside it. Control: kind without such a kube-router states nothing and
// renders Istio's default.
func TestKindIstioCNIOverIpsetRewritingKubeRouter(t *testing.T) {
	k := NewKind(Options{})
	if k.IstioCNISettings() != "" || k.IstioValues()["cni"] != nil {
		t.Fatalf("control: kind without an ipset-rewriting kube-router states %q and sets %v", k.IstioCNISettings(), k.IstioValues()["cni"])
	}
	k.ipsetKubeRouter = "localhost/meshclaims/kube-router:v2.1.0"
	k.cpuRequest = LocalCPURequest
	if s := k.IstioCNISettings(); !strings.Contains(s, "native nftables") || !strings.Contains(s, k.ipsetKubeRouter) || !strings.Contains(s, "kube-router#1918") {
		t.Errorf("statement %q does not name the mode, the CNI image and the upstream issue", s)
	}
	v := k.IstioValues()
	if res, _ := v["cni"]["resources"].(map[string]any); res == nil {
		t.Errorf("the small cluster's istio-cni requests were lost: %v", v["cni"])
	}
	if g, _ := v["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("cni values %v lack global.nativeNftables=true", v["cni"])
	}
	k.cpuRequest = ""
	if g, _ := k.IstioValues()["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("on a cluster with room the switch is lost: %v", k.IstioValues())
	}

	dir := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if dir == "" {
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory): chart rendering not checked")
	}
	if got := renderedNativeNftables(t, dir, chartValues(k.IstioValues())); got != "true" {
		t.Errorf("NATIVE_NFTABLES = %q on kind over kube-router v2.1.0, want \"true\"", got)
	}
	if got := renderedNativeNftables(t, dir, chartValues(NewKind(Options{}).IstioValues())); got != "false" {
		t.Errorf("control: NATIVE_NFTABLES = %q on kind without it, want \"false\"", got)
	}
}

// -provider=existing reads the DaemonSets at Start as kind does (a real API
// server): a cluster running kube-router v2.1.0 gets istio-cni in native
// nftables mode and says so; before that DaemonSet exists (the control)
// it keeps Istio's defaults.
func TestExistingProviderOverIpsetRewritingKubeRouter(t *testing.T) {
	srv := apiserver.NewForTest(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(path, "envtest"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := NewExisting(KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// (With no nodes the cluster counts as small, so cni carries the
	// sizing's requests; only the nftables switch must be absent.)
	if s := e.IstioCNISettings(); s != "" || e.IstioValues()["cni"]["global"] != nil {
		t.Fatalf("control: no kube-router, yet %q and %v", s, e.IstioValues()["cni"])
	}
	const image = "docker.io/cloudnativelabs/kube-router:v2.1.0"
	labels := map[string]string{"k8s-app": "kube-router"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-router", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-router", Image: image}}},
			},
		},
	}
	if _, err := kubernetes.NewForConfigOrDie(srv.Config).AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e = NewExisting(KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s := e.IstioCNISettings(); !strings.Contains(s, image) || !strings.Contains(s, "native nftables") {
		t.Errorf("statement %q", s)
	}
	if g, _ := e.IstioValues()["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("cni values %v lack global.nativeNftables=true", e.IstioValues()["cni"])
	}
}
