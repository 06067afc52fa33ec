package istio

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The local provider's ambient install, as rendered from Istio's charts:
// images exactly as the archives name them (the ambient profile would add
// -distroless), istio-cni chained onto the node's CNI directories with the
// netns hostPath mounted HostToContainer, and ztunnel's /var/run/ztunnel.
func TestRenderAmbientForTheLocalNode(t *testing.T) {
	dir := chartsDir(t)
	o := Options{Profile: ProfileAmbient, Charts: ChartSource{Dir: dir}, Hub: "localhost/istio", Tag: "1.30.3-dev",
		ClusterValues: map[Chart]map[string]any{
			ChartCNI: {"cniBinDir": "/state/cni/bin", "cniConfDir": "/state/cni/net.d", "cniNetnsDir": "/var/run/netns"},
		}}
	// Control: without ExactImages the profile's variant is there, so the
	// check below can fail.
	rs, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	if img := workloadImages(t, rs)["DaemonSet/ztunnel/istio-proxy"]; !strings.HasSuffix(img, "-distroless") {
		t.Fatalf("ambient ztunnel image without ExactImages is %q; expected the profile's -distroless variant", img)
	}

	o.ExactImages = true
	rs, err = Render(o)
	if err != nil {
		t.Fatal(err)
	}
	imgs := workloadImages(t, rs)
	for key, want := range map[string]string{
		"DaemonSet/ztunnel/istio-proxy":        "localhost/istio/ztunnel:1.30.3-dev",
		"DaemonSet/istio-cni-node/install-cni": "localhost/istio/install-cni:1.30.3-dev",
		"Deployment/istiod/discovery":          "localhost/istio/pilot:1.30.3-dev",
	} {
		if imgs[key] != want {
			t.Errorf("%s runs %q, want %q (all: %v)", key, imgs[key], want, imgs)
		}
	}
	k := kinds(all(rs))
	hostPaths := func(kind string) map[string]string {
		out := map[string]string{}
		vols, _, _ := unstructured.NestedSlice(k[kind].Object, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			vm := v.(map[string]any)
			if hp, ok := vm["hostPath"].(map[string]any); ok {
				out[vm["name"].(string)] = hp["path"].(string)
			}
		}
		return out
	}
	cni := hostPaths("DaemonSet/istio-cni-node")
	for name, want := range map[string]string{"cni-bin-dir": "/state/cni/bin", "cni-net-dir": "/state/cni/net.d", "cni-netns-dir": "/var/run/netns", "cni-ztunnel-sock-dir": "/var/run/ztunnel"} {
		if cni[name] != want {
			t.Errorf("istio-cni hostPath %s = %q, want %q (all: %v)", name, cni[name], want, cni)
		}
	}
	if zt := hostPaths("DaemonSet/ztunnel"); zt["cni-ztunnel-sock-dir"] != "/var/run/ztunnel" {
		t.Errorf("ztunnel hostPaths %v, want /var/run/ztunnel", zt)
	}
	cs, _, _ := unstructured.NestedSlice(k["DaemonSet/istio-cni-node"].Object, "spec", "template", "spec", "containers")
	found := false
	for _, c := range cs {
		mounts, _, _ := unstructured.NestedSlice(c.(map[string]any), "volumeMounts")
		for _, m := range mounts {
			mm := m.(map[string]any)
			if mm["name"] == "cni-netns-dir" {
				found = mm["mountPropagation"] == "HostToContainer" && mm["mountPath"] == "/host/var/run/netns"
			}
		}
	}
	if !found {
		t.Error("istio-cni does not mount the netns directory at /host/var/run/netns with HostToContainer propagation")
	}
}
