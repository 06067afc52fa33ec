package setup

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// The values, statements and sizing notes each provider's nodes get,
// written out literally: what istioValues, istioCNISettings and sizingNote
// must give for the facts each provider states.

// wantLocalValues are the local node's chart values.
func wantLocalValues(cniBinDir, cniConfDir string) map[string]map[string]any {
	return map[string]map[string]any{
		"istiod": {
			"autoscaleEnabled": false,
			"replicaCount":     1,
			"resources":        map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}},
			"global":           map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": cluster.LocalCPURequest, "memory": "128Mi"}}}},
		},
		"cni": {
			"cniBinDir":   cniBinDir,
			"cniConfDir":  cniConfDir,
			"cniNetnsDir": "/var/run/netns",
			"resources":   map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}},
			"global":      map[string]any{"nativeNftables": true},
		},
		"ztunnel": {
			"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}},
		},
	}
}

// wantReadValues are a kind or existing cluster's chart values, from the
// sizing and the ipset-rewriting kube-router read at Start.
func wantReadValues(cpuRequest, ipsetKubeRouter string) map[string]map[string]any {
	var v map[string]map[string]any
	if cpuRequest != "" {
		v = map[string]map[string]any{
			"istiod": {
				"global": map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": cpuRequest, "memory": "128Mi"}}}},
			},
			"cni":     {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
			"ztunnel": {"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
		}
	}
	if ipsetKubeRouter != "" {
		if v == nil {
			v = map[string]map[string]any{}
		}
		if v["cni"] == nil {
			v["cni"] = map[string]any{}
		}
		v["cni"]["global"] = map[string]any{"nativeNftables": true}
	}
	return v
}

const (
	wantLocalCNI    = "native nftables (global.nativeNftables=true; the node's kube-router v2.1.0 rewrites every host ipset each sync, kube-router#1918; Istio's default is iptables mode)"
	wantLocalSizing = "the local node has 2 shared cores: workload CPU requests 10m instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests 10m instead of the chart's 100m"
	// on kind's 3 nodes of 2 cores, the control plane tainted
	wantKindSizing = "kind's 2 schedulable nodes share this host's cores and report 4 allocatable CPU in all (below 8, where one meshed mode's pods at GUIDE's requests do not fit): workload CPU requests 10m instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests 10m instead of the chart's 100m, istio-cni and ztunnel 50m per node"
)

func wantReadCNI(image string) string {
	if image == "" {
		return ""
	}
	return "native nftables (global.nativeNftables=true): the cluster's CNI " + image +
		" rewrites every host ipset each sync (kube-router#1918, fixed in v2.6.1), which drops pods from istio-cni's iptables-mode probe set; Istio's default is iptables mode"
}

// Each provider's facts give Istio exactly the values, the istio-cni
// statement and the sizing note written out above: the local node, and
// kind (and existing, which reads the same facts) with and without a small
// cluster and an ipset-rewriting kube-router. With the charts at hand, the
// rendered manifests are compared too.
func TestIstioValuesPerProvider(t *testing.T) {
	local, err := cluster.New(cluster.LocalName, cluster.Options{ClusterName: "meshclaims-values-test"})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := localk8s.New(localk8s.Config{Name: "meshclaims-values-test"})
	if err != nil {
		t.Fatal(err)
	}
	lf := local.Facts()
	layout := lk.Config().Layout()
	if got, want := istioValues(lf), wantLocalValues(layout.CNIBinDir(), layout.CNIConfDir()); !reflect.DeepEqual(got, want) {
		t.Errorf("local values:\n got %#v\nwant %#v", got, want)
	}
	if got := istioCNISettings(lf); got != wantLocalCNI {
		t.Errorf("local istio-cni statement:\n got %q\nwant %q", got, wantLocalCNI)
	}
	if got := sizingNote(lf); got != wantLocalSizing {
		t.Errorf("local sizing note:\n got %q\nwant %q", got, wantLocalSizing)
	}
	if hostProbeSet(lf) == nil {
		t.Error("local node: the host's probe set is not read")
	}

	const image = "localhost/meshclaims/kube-router:v2.1.0"
	for _, p := range []cluster.Provider{cluster.NewKind(cluster.Options{}), cluster.NewExisting(cluster.KubeconfigSelector{})} {
		for _, c := range []struct{ cpu, rewriter string }{{"", ""}, {cluster.LocalCPURequest, ""}, {"", image}, {cluster.LocalCPURequest, image}} {
			f := p.Facts()
			f.Sizing.CPURequest, f.IpsetRewriter = c.cpu, c.rewriter
			if got, want := istioValues(f), wantReadValues(c.cpu, c.rewriter); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %+v values:\n got %#v\nwant %#v", p.Name(), c, got, want)
			}
			if got, want := istioCNISettings(f), wantReadCNI(c.rewriter); got != want {
				t.Errorf("%s %+v istio-cni statement:\n got %q\nwant %q", p.Name(), c, got, want)
			}
			if hostProbeSet(f) != nil {
				t.Errorf("%s: the host's probe set is read as the nodes'", p.Name())
			}
		}
	}
	kf := cluster.NewKind(cluster.Options{}).Facts()
	kf.Sizing = cluster.Sizing{CPURequest: cluster.LocalCPURequest,
		Why: "kind's 2 schedulable nodes share this host's cores and report 4 allocatable CPU in all (below 8, where one meshed mode's pods at GUIDE's requests do not fit)"}
	if got := sizingNote(kf); got != wantKindSizing {
		t.Errorf("kind sizing note:\n got %q\nwant %q", got, wantKindSizing)
	}

	dir := chartsDir(t)
	if dir == "" {
		return
	}
	kf.IpsetRewriter = image
	for what, c := range map[string]struct{ got, want map[string]map[string]any }{
		"local":                          {istioValues(lf), wantLocalValues(layout.CNIBinDir(), layout.CNIConfDir())},
		"small kind over kube-router":    {istioValues(kf), wantReadValues(cluster.LocalCPURequest, image)},
		"kind with room, no kube-router": {istioValues(cluster.NewKind(cluster.Options{}).Facts()), wantReadValues("", "")},
	} {
		got, want := renderAmbient(t, dir, c.got), renderAmbient(t, dir, c.want)
		if len(got) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the charts render %d objects from the facts' values, %d from the values written out, not the same", what, len(got), len(want))
		}
	}
	// Control: the comparison sees a difference in the values.
	if reflect.DeepEqual(renderAmbient(t, dir, istioValues(lf)), renderAmbient(t, dir, nil)) {
		t.Error("control: the local node's values render as Istio's defaults")
	}
}

// chartsDir is the istio.io/istio module directory, or "" (the test skips
// what needs it) where it is not given and not required.
func chartsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if dir == "" {
		if os.Getenv(apiserver.EnvRequire) == "1" {
			t.Fatal("MESHCLAIMS_ISTIO_CHARTS is not set but MESHCLAIMS_REQUIRE_APISERVER=1")
		}
		t.Log("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory): chart rendering not checked")
	}
	return dir
}

// chartValues keys values by chart, as istio.Render takes them.
func chartValues(vals map[string]map[string]any) map[istio.Chart]map[string]any {
	cv := map[istio.Chart]map[string]any{}
	for c, v := range vals {
		cv[istio.Chart(c)] = v
	}
	return cv
}

// renderAmbient renders Istio's ambient charts from dir with values vals.
func renderAmbient(t *testing.T, dir string, vals map[string]map[string]any) []istio.Rendered {
	t.Helper()
	rs, err := istio.Render(istio.Options{Profile: istio.ProfileAmbient, Charts: istio.ChartSource{Dir: dir}, Hub: "localhost/istio", Tag: "1.30.3-dev", ClusterValues: chartValues(vals)})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// renderedNativeNftables renders Istio's ambient charts from dir with the
// values vals and returns what istio-cni's ConfigMap says of native
// nftables mode (NATIVE_NFTABLES, which the node agent reads).
func renderedNativeNftables(t *testing.T, dir string, vals map[string]map[string]any) string {
	t.Helper()
	for _, r := range renderAmbient(t, dir, vals) {
		for _, o := range r.Objects {
			if o.GetKind() == "ConfigMap" && o.GetName() == "istio-cni-config" {
				data, _ := o.Object["data"].(map[string]any)
				v, _ := data["NATIVE_NFTABLES"].(string)
				return v
			}
		}
	}
	t.Fatal("no ConfigMap istio-cni-config rendered")
	return ""
}

// The local provider's istio-cni runs in native nftables mode, rendered
// from Istio's own chart into istio-cni's ConfigMap (NATIVE_NFTABLES, which
// the node agent reads), and states it for the report; kind and existing
// clusters keep Istio's defaults (control: the same chart without the
// local node's values renders "false").
func TestLocalIstioCNIIsNativeNftables(t *testing.T) {
	p, err := cluster.New(cluster.LocalName, cluster.Options{ClusterName: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	lf := p.Facts()
	if s := istioCNISettings(lf); hostProbeSet(lf) == nil || !strings.Contains(s, "native nftables") || !strings.Contains(s, "kube-router#1918") {
		t.Fatalf("local provider's istio-cni statement: %v %q", hostProbeSet(lf) != nil, s)
	}
	for _, other := range []cluster.Provider{cluster.NewKind(cluster.Options{}), cluster.NewExisting(cluster.KubeconfigSelector{})} {
		// kind sizes down only once Start has seen small nodes
		// (framework/cluster's kindsizing_test.go); before that, and on
		// existing, GUIDE's.
		f := other.Facts()
		if q := f.Sizing.CPURequest; q != "" {
			t.Errorf("%s changes the workloads' CPU requests to %s before seeing its nodes; it keeps GUIDE's", other.Name(), q)
		}
		if hostProbeSet(f) != nil || istioCNISettings(f) != "" {
			t.Errorf("%s states istio-cni settings of its own; it keeps Istio's defaults", other.Name())
		}
		if istioValues(f)["cni"] != nil {
			t.Errorf("%s sets istio-cni values", other.Name())
		}
	}

	dir := chartsDir(t)
	if dir == "" {
		t.Skip("chart rendering not checked")
	}
	cv := istioValues(lf)
	g, _ := cv[string(istio.ChartIstiod)]["global"].(map[string]any)
	px, _ := g["proxy"].(map[string]any)
	if res, _ := px["resources"].(map[string]any); res == nil || res["requests"].(map[string]any)["cpu"] != cluster.LocalCPURequest {
		t.Errorf("local provider's istiod values do not set the sidecar's CPU request %s: %v", cluster.LocalCPURequest, cv[string(istio.ChartIstiod)])
	}
	if got := renderedNativeNftables(t, dir, cv); got != "true" {
		t.Errorf("istio-cni-config NATIVE_NFTABLES = %q with the local provider's values, want \"true\"", got)
	}
	if got := renderedNativeNftables(t, dir, nil); got != "false" {
		t.Errorf("control: NATIVE_NFTABLES = %q with Istio's defaults, want \"false\"", got)
	}
}

// The Istio values follow kind's sizing: none on a cluster with room, the
// local node's requests on a small one, and never istio-cni's directories
// or iptables mode (those stay Istio's defaults on kind).
func TestKindIstioValuesFollowSizing(t *testing.T) {
	f := cluster.NewKind(cluster.Options{}).Facts()
	if v := istioValues(f); v != nil {
		t.Errorf("before Start / with room: %v, want none", v)
	}
	f.Sizing = cluster.Sizing{CPURequest: cluster.LocalCPURequest, Why: "small"}
	v := istioValues(f)
	px := v["istiod"]["global"].(map[string]any)["proxy"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)
	if px["cpu"] != cluster.LocalCPURequest {
		t.Errorf("sidecar request %v, want %s", px["cpu"], cluster.LocalCPURequest)
	}
	for _, key := range []string{"cniBinDir", "cniConfDir", "cniNetnsDir", "global"} {
		if _, ok := v["cni"][key]; ok {
			t.Errorf("kind sets istio-cni's %s: %v", key, v["cni"])
		}
	}
}

// On kind over an ipset-rewriting kube-router, istio-cni runs in native
// nftables mode, rendered by Istio's own chart into istio-cni's ConfigMap,
// and the report says why; on a small cluster the sizing values stay
// beside it. Control: kind without such a kube-router states nothing and
// renders Istio's default.
func TestKindIstioCNIOverIpsetRewritingKubeRouter(t *testing.T) {
	f := cluster.NewKind(cluster.Options{}).Facts()
	if istioCNISettings(f) != "" || istioValues(f)["cni"] != nil {
		t.Fatalf("control: kind without an ipset-rewriting kube-router states %q and sets %v", istioCNISettings(f), istioValues(f)["cni"])
	}
	f.IpsetRewriter = "localhost/meshclaims/kube-router:v2.1.0"
	f.Sizing.CPURequest = cluster.LocalCPURequest
	if s := istioCNISettings(f); !strings.Contains(s, "native nftables") || !strings.Contains(s, f.IpsetRewriter) || !strings.Contains(s, "kube-router#1918") {
		t.Errorf("statement %q does not name the mode, the CNI image and the upstream issue", s)
	}
	v := istioValues(f)
	if res, _ := v["cni"]["resources"].(map[string]any); res == nil {
		t.Errorf("the small cluster's istio-cni requests were lost: %v", v["cni"])
	}
	if g, _ := v["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("cni values %v lack global.nativeNftables=true", v["cni"])
	}
	f.Sizing.CPURequest = ""
	if g, _ := istioValues(f)["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("on a cluster with room the switch is lost: %v", istioValues(f))
	}

	dir := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if dir == "" {
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory): chart rendering not checked")
	}
	if got := renderedNativeNftables(t, dir, istioValues(f)); got != "true" {
		t.Errorf("NATIVE_NFTABLES = %q on kind over kube-router v2.1.0, want \"true\"", got)
	}
	if got := renderedNativeNftables(t, dir, istioValues(cluster.NewKind(cluster.Options{}).Facts())); got != "false" {
		t.Errorf("control: NATIVE_NFTABLES = %q on kind without it, want \"false\"", got)
	}
}

// -provider=existing reads the DaemonSets at Start as kind does (a real API
// server): a cluster running kube-router v2.1.0 gets istio-cni in native
// nftables mode and says so; before that DaemonSet exists (the control)
// it keeps Istio's defaults. (With no nodes the cluster counts as small,
// so the report states the sizing as on kind.)
func TestExistingProviderOverIpsetRewritingKubeRouter(t *testing.T) {
	srv := apiserver.NewForTest(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(path, "envtest"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := cluster.NewExisting(cluster.KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// (With no nodes the cluster counts as small, so cni carries the
	// sizing's requests; only the nftables switch must be absent.)
	if s := istioCNISettings(e.Facts()); s != "" || istioValues(e.Facts())["cni"]["global"] != nil {
		t.Fatalf("control: no kube-router, yet %q and %v", s, istioValues(e.Facts())["cni"])
	}
	want := "the cluster's 0 schedulable nodes report 0 allocatable CPU in all (below 8, where one meshed mode's pods at GUIDE's requests do not fit): " +
		"workload CPU requests 10m instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests 10m instead of the chart's 100m, istio-cni and ztunnel 50m per node"
	if got := sizingNote(e.Facts()); got != want {
		t.Errorf("sizing note:\n got %q\nwant %q", got, want)
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
	e = cluster.NewExisting(cluster.KubeconfigSelector{Path: path, Context: "envtest"})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s := istioCNISettings(e.Facts()); !strings.Contains(s, image) || !strings.Contains(s, "native nftables") {
		t.Errorf("statement %q", s)
	}
	if g, _ := istioValues(e.Facts())["cni"]["global"].(map[string]any); g["nativeNftables"] != true {
		t.Errorf("cni values %v lack global.nativeNftables=true", istioValues(e.Facts())["cni"])
	}
}
