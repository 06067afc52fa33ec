package istio

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestWaypointAdaptations(t *testing.T) {
	if a := ProxyIstio.WaypointAdaptations(); a != nil {
		t.Errorf("istio-proxy's waypoint gets adaptations %v; Istio's release images keep istiod's defaults", a)
	}
	got := strings.Join(ProxyUpstreamEnvoy.WaypointAdaptations(), "\n")
	for _, want := range []string{"metadata_discovery", "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false", "waypoint_downstream_peer_metadata", "envoy.hashable_string", "istio_requests_total", "peer workload metadata"} {
		if !strings.Contains(got, want) {
			t.Errorf("upstream Envoy's waypoint adaptations do not name %s:\n%s", want, got)
		}
	}
	// istiod's side of them is in IstiodSettings, which the report shows.
	if s := strings.Join(ProxyUpstreamEnvoy.IstiodSettings(), ", "); !strings.Contains(s, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false") {
		t.Errorf("IstiodSettings lacks the waypoint setting: %s", s)
	}
}

func TestParseProxyKind(t *testing.T) {
	for in, want := range map[string]ProxyKind{"": ProxyIstio, "istio-proxy": ProxyIstio, "upstream-envoy": ProxyUpstreamEnvoy} {
		if got, err := ParseProxyKind(in); err != nil || got != want {
			t.Errorf("ParseProxyKind(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseProxyKind("envoy"); err == nil || !strings.Contains(err.Error(), "accepted: istio-proxy") {
		t.Errorf("ParseProxyKind(envoy): %v", err)
	}
	if err := (Options{Profile: ProfileDefault, Proxy: "envoy"}).Validate(); err == nil || !strings.Contains(err.Error(), `"envoy"`) {
		t.Errorf("Validate with proxy kind envoy: %v", err)
	}
}

// meshConfig is istiod's rendered mesh configuration (ConfigMap istio,
// data.mesh).
func meshConfig(t *testing.T, k map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	cm := k["ConfigMap/istio"]
	if cm == nil {
		t.Fatal("no ConfigMap istio rendered")
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "mesh")
	var m map[string]any
	if err := yaml.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("mesh config: %v\n%s", err, raw)
	}
	return m
}

// Upstream Envoy's istiod settings appear in the rendered charts only with
// ProxyUpstreamEnvoy, in either profile, and win over a user's values;
// with Istio's own proxy the chart's defaults stay (the negative control:
// the same checks see ALPN, metadata exchange and a metrics provider on).
func TestRenderUpstreamEnvoySettings(t *testing.T) {
	dir := chartsDir(t)
	// A user's values that would turn telemetry back on.
	user := writeTemp(t, "istiod:\n  telemetry:\n    enabled: true\n  env:\n    PILOT_ENABLE_ALPN_FILTER: \"true\"\n")
	for _, p := range []Profile{ProfileDefault, ProfileAmbient} {
		for _, kind := range []ProxyKind{ProxyIstio, ProxyUpstreamEnvoy} {
			t.Run(string(p)+"/"+string(kind), func(t *testing.T) {
				rs, err := Render(Options{Profile: p, Charts: ChartSource{Dir: dir}, Proxy: kind, ValuesFile: user})
				if err != nil {
					t.Fatal(err)
				}
				k := kinds(all(rs))
				istiod := k["Deployment/istiod"]
				mesh := meshConfig(t, k)
				metrics, _, _ := unstructured.NestedSlice(mesh, "defaultProviders", "metrics")
				hbone, _, _ := unstructured.NestedString(mesh, "defaultConfig", "proxyMetadata", "ISTIO_META_ENABLE_HBONE")
				got := map[string]string{
					"PILOT_ENABLE_ALPN_FILTER":              envOf(t, istiod, "PILOT_ENABLE_ALPN_FILTER"),
					"PILOT_ENABLE_METADATA_EXCHANGE":        envOf(t, istiod, "PILOT_ENABLE_METADATA_EXCHANGE"),
					"PILOT_ENABLE_SIDECAR_LISTENING_HBONE":  envOf(t, istiod, "PILOT_ENABLE_SIDECAR_LISTENING_HBONE"),
					"AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT": envOf(t, istiod, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT"),
				}
				if kind == ProxyUpstreamEnvoy {
					for name, v := range got {
						if v != "false" {
							t.Errorf("istiod %s = %q, want false", name, v)
						}
					}
					if len(metrics) != 0 {
						t.Errorf("mesh config's defaultProviders.metrics = %v, want none", metrics)
					}
					if hbone != "false" {
						t.Errorf("mesh config's proxyMetadata.ISTIO_META_ENABLE_HBONE = %q, want false", hbone)
					}
					return
				}
				// Istio's proxy: the user's ALPN value stands, metadata
				// exchange is not touched, Prometheus is the metrics provider.
				if got["PILOT_ENABLE_ALPN_FILTER"] != "true" || got["PILOT_ENABLE_METADATA_EXCHANGE"] != "" || got["PILOT_ENABLE_SIDECAR_LISTENING_HBONE"] != "" || got["AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT"] != "" {
					t.Errorf("istio-proxy's istiod env: %v", got)
				}
				if len(metrics) != 1 || metrics[0] != "prometheus" {
					t.Errorf("istio-proxy's mesh config defaultProviders.metrics = %v, want [prometheus]", metrics)
				}
				if want := map[Profile]string{ProfileDefault: "", ProfileAmbient: "true"}[p]; hbone != want {
					t.Errorf("istio-proxy's ISTIO_META_ENABLE_HBONE = %q, want %q (the profile's)", hbone, want)
				}
			})
		}
	}
}

func TestIstiodSettings(t *testing.T) {
	s := strings.Join(ProxyUpstreamEnvoy.IstiodSettings(), "\n")
	for _, want := range []string{"PILOT_ENABLE_ALPN_FILTER=false", "PILOT_ENABLE_METADATA_EXCHANGE=false", "telemetry.enabled=false", "ISTIO_META_ENABLE_HBONE=false"} {
		if !strings.Contains(s, want) {
			t.Errorf("upstream-envoy settings lack %s:\n%s", want, s)
		}
	}
	if s := strings.Join(ProxyIstio.IstiodSettings(), "\n"); strings.Contains(s, "=false") {
		t.Errorf("istio-proxy settings say %s", s)
	}
}
