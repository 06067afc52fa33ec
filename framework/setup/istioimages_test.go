package setup

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// loadRecorder is a provider that records which archives it loaded.
type loadRecorder struct {
	cluster.Provider
	loaded []string
}

func (l *loadRecorder) LoadImage(_ context.Context, tar string) error {
	l.loaded = append(l.loaded, filepath.Base(tar))
	return nil
}
func (l *loadRecorder) RESTConfig() *rest.Config { return &rest.Config{} }

// archiveDir writes archives of tiny images named refs.
func archiveDir(t *testing.T, refs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for file, ref := range refs {
		p, err := images.Pack(images.PackSpec{Name: file,
			Files:       []images.File{{Path: "/x", Mode: 0o755, Data: []byte(file)}},
			ImageConfig: images.ImageConfig{Version: "1", Entrypoint: []string{"/x"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := images.WriteTarball(p.Image, ref, filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadArchivesIntoNodes(t *testing.T) {
	dir := archiveDir(t, map[string]string{"pilot.tar": "localhost/istio/pilot:1.30.3-dev", "extra.tar": "meshclaims/extra:v1"})
	p := &loadRecorder{}
	s := &Suite{Cfg: &config.Config{ImageArchives: dir, IstioHub: "localhost/istio", IstioTag: "1.30.3-dev"}, provider: p, out: io.Discard}
	if err := s.loadArchives(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.loaded, ",") != "extra.tar,pilot.tar" {
		t.Errorf("loaded %v", p.loaded)
	}
	if len(s.envInfo.Images) != 2 || !strings.HasPrefix(s.envInfo.Images[1].ID, "sha256:") || s.envInfo.Images[1].Image != "localhost/istio/pilot:1.30.3-dev" {
		t.Errorf("environment images %+v", s.envInfo.Images)
	}
	// Negative control: the charts would ask for another tag; nothing is
	// loaded after the refusal.
	p.loaded = nil
	s.Cfg.IstioTag = "1.30.2"
	if err := s.loadArchives(context.Background()); err == nil || !strings.Contains(err.Error(), "-istio-tag=1.30.3-dev") {
		t.Errorf("mismatching tag: %v", err)
	}
	if len(p.loaded) != 0 {
		t.Errorf("loaded %v despite the refusal", p.loaded)
	}
}

func TestLoadArchivesPushesToRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	dir := archiveDir(t, map[string]string{"pilot.tar": "localhost/istio/pilot:1.30.3-dev"})
	p := &loadRecorder{}
	// Negative control: a hub other than the registry cannot find them.
	s := &Suite{Cfg: &config.Config{ImageArchives: dir, Registry: reg, IstioHub: "localhost/istio", IstioTag: "1.30.3-dev"}, provider: p, out: io.Discard}
	if err := s.loadArchives(context.Background()); err == nil || !strings.Contains(err.Error(), "leave -istio-hub unset") {
		t.Fatalf("-istio-hub other than the registry: %v", err)
	}
	s.Cfg.IstioHub = ""
	s.envInfo = report.Environment{}
	if err := s.loadArchives(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(p.loaded) != 0 {
		t.Errorf("archives loaded into nodes although pushed: %v", p.loaded)
	}
	if len(s.envInfo.Images) != 1 || !strings.HasPrefix(s.envInfo.Images[0].ID, "sha256:") {
		t.Fatalf("environment %+v", s.envInfo.Images)
	}
	if got := s.istioHub(); got != reg {
		t.Errorf("charts' hub %q, want the registry %q", got, reg)
	}
	ref, err := name.ParseReference(reg + "/pilot:1.30.3-dev")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatalf("pushed image not in the registry: %v", err)
	}
	if desc.Digest.String() != s.envInfo.Images[0].ID {
		t.Errorf("registry has %s, environment says %s", desc.Digest, s.envInfo.Images[0].ID)
	}
}

func TestCheckSidecarImage(t *testing.T) {
	s := &Suite{Cfg: &config.Config{Provider: "local", IstioHub: "localhost/istio", IstioTag: "1.30.3-dev"}}
	if err := s.checkSidecarImage([]mode.Mode{mode.Sidecar}); err == nil || !strings.Contains(err.Error(), "localhost/istio/proxyv2:1.30.3-dev") {
		t.Errorf("sidecar on local without proxyv2: %v", err)
	}
	s.envInfo.Images = []report.ImageRan{{Where: "archive proxyv2.tar", Image: "localhost/istio/proxyv2:1.30.3-dev", ID: "sha256:x"}}
	if err := s.checkSidecarImage([]mode.Mode{mode.Sidecar}); err != nil {
		t.Errorf("with proxyv2 archived: %v", err)
	}
	s.envInfo.Images = nil
	for _, ok := range []struct {
		provider string
		modes    []mode.Mode
	}{{"local", []mode.Mode{mode.None}}, {"kind", []mode.Mode{mode.Sidecar}}} {
		s.Cfg.Provider = ok.provider
		if err := s.checkSidecarImage(ok.modes); err != nil {
			t.Errorf("%s %v: %v", ok.provider, ok.modes, err)
		}
	}
}
