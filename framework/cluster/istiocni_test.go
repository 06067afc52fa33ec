package cluster

import (
	"os"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// The local provider's istio-cni runs in native nftables mode, rendered
// from Istio's own chart into istio-cni's ConfigMap (NATIVE_NFTABLES, which
// the node agent reads), and states it for the report; kind and existing
// clusters keep Istio's defaults (control: the same chart without the
// provider's values renders "false").
func TestLocalIstioCNIIsNativeNftables(t *testing.T) {
	k, err := localk8s.New(localk8s.Config{Name: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	var p Provider = &localProvider{k}
	h, ok := p.(IstioCNIHost)
	if !ok || !strings.Contains(h.IstioCNISettings(), "native nftables") || !strings.Contains(h.IstioCNISettings(), "kube-router#1918") {
		t.Fatalf("local provider's istio-cni statement: %v %q", ok, h.IstioCNISettings())
	}
	for _, other := range []Provider{NewKind(Options{}), NewExisting(KubeconfigSelector{})} {
		// kind sizes down only once Start has seen small nodes
		// (kindsizing_test.go); before that, and on existing, GUIDE's.
		if sz, ok := other.(WorkloadSizer); ok {
			if q, _ := sz.WorkloadCPURequest(); q != "" {
				t.Errorf("%s changes the workloads' CPU requests to %s before seeing its nodes; it keeps GUIDE's", other.Name(), q)
			}
		}
		if _, ok := other.(IstioCNIHost); ok {
			t.Errorf("%s states istio-cni settings of its own; it keeps Istio's defaults", other.Name())
		}
		if v, ok := other.(IstioValuer); ok && v.IstioValues()["cni"] != nil {
			t.Errorf("%s sets istio-cni values", other.Name())
		}
	}

	dir := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if dir == "" {
		if os.Getenv(apiserver.EnvRequire) == "1" {
			t.Fatal("MESHCLAIMS_ISTIO_CHARTS is not set but MESHCLAIMS_REQUIRE_APISERVER=1")
		}
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory): chart rendering not checked")
	}
	cv := chartValues(p.(IstioValuer).IstioValues())
	g, _ := cv[istio.ChartIstiod]["global"].(map[string]any)
	px, _ := g["proxy"].(map[string]any)
	if res, _ := px["resources"].(map[string]any); res == nil || res["requests"].(map[string]any)["cpu"] != LocalCPURequest {
		t.Errorf("local provider's istiod values do not set the sidecar's CPU request %s: %v", LocalCPURequest, cv[istio.ChartIstiod])
	}
	if got := renderedNativeNftables(t, dir, cv); got != "true" {
		t.Errorf("istio-cni-config NATIVE_NFTABLES = %q with the local provider's values, want \"true\"", got)
	}
	if got := renderedNativeNftables(t, dir, nil); got != "false" {
		t.Errorf("control: NATIVE_NFTABLES = %q with Istio's defaults, want \"false\"", got)
	}
}

// chartValues keys a provider's IstioValues by chart, as istio.Render
// takes them.
func chartValues(vals map[string]map[string]any) map[istio.Chart]map[string]any {
	cv := map[istio.Chart]map[string]any{}
	for c, v := range vals {
		cv[istio.Chart(c)] = v
	}
	return cv
}

// renderedNativeNftables renders Istio's ambient charts from dir with the
// values cv and returns what istio-cni's ConfigMap says of native
// nftables mode (NATIVE_NFTABLES, which the node agent reads).
func renderedNativeNftables(t *testing.T, dir string, cv map[istio.Chart]map[string]any) string {
	t.Helper()
	rs, err := istio.Render(istio.Options{Profile: istio.ProfileAmbient, Charts: istio.ChartSource{Dir: dir}, Hub: "localhost/istio", Tag: "1.30.3-dev", ClusterValues: cv})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
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
