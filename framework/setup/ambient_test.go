package setup

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Ambient on the local provider without a ztunnel image fails before the
// cluster, saying what is missing and how to provide it; with one (or with
// a registry named), or for modes and providers that need none, it passes.
func TestCheckZtunnelImage(t *testing.T) {
	archives := func(refs ...string) string {
		dir := t.TempDir()
		for i, r := range refs {
			if err := images.WriteTarball(empty.Image, r, filepath.Join(dir, string(rune('a'+i))+".tar")); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	local := func(modes ...mode.Mode) *config.Config {
		return &config.Config{Provider: "local", Modes: modes, IstioVersion: "1.30.3"}
	}

	c := local(mode.None, mode.AmbientL4)
	err := checkZtunnelImage(c)
	for _, want := range []string{"-mode=ambient-l4", "-provider=local", "ztunnel image", "docker.io/istio/ztunnel:1.30.3", "-image-archives", "-istio-hub"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no image at all: error %v, want it to say %q", err, want)
		}
	}

	c = local(mode.AmbientL4, mode.AmbientL7)
	c.IstioTag = "1.30.3-dev"
	c.ImageArchives = archives("localhost/istio/pilot:1.30.3-dev", "localhost/istio/install-cni:1.30.3-dev")
	err = checkZtunnelImage(c)
	for _, want := range []string{"-mode=ambient-l4,ambient-l7", "holds no docker.io/istio/ztunnel:1.30.3-dev", "localhost/istio/pilot:1.30.3-dev"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("archives without ztunnel: error %v, want it to say %q", err, want)
		}
	}

	c.IstioHub = "localhost/istio"
	c.ImageArchives = archives("localhost/istio/pilot:1.30.3-dev", "localhost/istio/ztunnel:1.30.3-dev")
	if err := checkZtunnelImage(c); err != nil {
		t.Errorf("archive with ztunnel: %v", err)
	}
	// Control for the case above: the same archive under another tag is not
	// the image the charts ask for.
	c.IstioHub = ""
	c.IstioTag = "1.30.3-dev"
	c.ImageArchives = archives("localhost/istio/ztunnel:1.30.3-dev")
	if err := checkZtunnelImage(c); err == nil {
		t.Error("an archive of localhost/istio/ztunnel passed for docker.io/istio/ztunnel")
	}

	// Pushed to -image-registry, the archive's own hub does not matter.
	c.Registry = "registry.example.com:5000"
	if err := checkZtunnelImage(c); err != nil {
		t.Errorf("archive of ztunnel pushed to a registry: %v", err)
	}

	c = local(mode.AmbientL4)
	c.IstioHub = "registry.example.com/istio"
	if err := checkZtunnelImage(c); err != nil {
		t.Errorf("registry named: %v", err)
	}
	if err := checkZtunnelImage(local(mode.None, mode.Sidecar)); err != nil {
		t.Errorf("sidecar needs no ztunnel: %v", err)
	}
	kind := local(mode.AmbientL4)
	kind.Provider = "kind"
	if err := checkZtunnelImage(kind); err != nil {
		t.Errorf("kind pulls Istio's ztunnel: %v", err)
	}
}
