package setup

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// checkZtunnelImage refuses an ambient run on the local provider that has
// no ztunnel image, before anything touches a cluster: ztunnel is Rust, no
// registry this project builds from ships it, and without it the ztunnel
// DaemonSet would sit in ImagePullBackOff until the Istio timeout. An image
// is provided either in -image-archives (named as the charts will ask for
// it) or by -istio-hub/-istio-tag naming a registry the node pulls from.
// Other providers' nodes pull Istio's own ztunnel image.
func checkZtunnelImage(cfg *config.Config) error {
	if cfg.Provider != cluster.LocalName || !slices.ContainsFunc(cfg.Modes, mode.Mode.Ambient) {
		return nil
	}
	var ambient []string
	for _, m := range cfg.Modes {
		if m.Ambient() {
			ambient = append(ambient, string(m))
		}
	}
	return ztunnelImageError(cfg, "-mode="+strings.Join(ambient, ","))
}

// ztunnelImageError is checkZtunnelImage's verdict for what (the modes or
// the profile that need ztunnel).
func ztunnelImageError(cfg *config.Config, what string) error {
	if cfg.Provider != cluster.LocalName {
		return nil
	}
	hub, tag := cfg.IstioHub, cfg.IstioTag
	if hub == "" {
		hub = istio.DefaultHub
	}
	if tag == "" {
		tag = cfg.IstioVersion
	}
	want := hub + "/ztunnel:" + tag
	how := fmt.Sprintf("provide one: -image-archives=DIR with a docker image archive of %s (e.g. built from the public istio/ztunnel source and packed with framework/images), or -istio-hub/-istio-tag naming a registry the node can pull <hub>/ztunnel:<tag> from", want)
	if cfg.ImageArchives == "" {
		if cfg.IstioHub != "" || cfg.IstioTag != "" {
			return nil // the user names a registry with Istio's images
		}
		return fmt.Errorf("%s on -provider=local needs a ztunnel image, and none is given: the local node cannot pull %s (neither -image-archives nor -istio-hub/-istio-tag is set); %s",
			what, want, how)
	}
	tars, err := filepath.Glob(filepath.Join(cfg.ImageArchives, "*.tar"))
	if err != nil {
		return err
	}
	sort.Strings(tars)
	var found []string
	for _, tar := range tars {
		arch, err := images.ReadArchive(tar)
		if err != nil {
			return fmt.Errorf("-image-archives: %w", err)
		}
		for _, a := range arch {
			for _, r := range a.Refs {
				// Pushed archives keep only their name and tag (the
				// registry becomes the hub).
				if r == want || (cfg.Registry != "" && strings.HasSuffix(r, "/ztunnel:"+tag)) {
					return nil
				}
				found = append(found, r)
			}
		}
	}
	if cfg.IstioHub != "" {
		return nil // not in the archives, but the named registry may have it
	}
	return fmt.Errorf("%s on -provider=local needs a ztunnel image: -image-archives=%q holds no %s (it holds %s); %s",
		what, cfg.ImageArchives, want, strings.Join(found, ", "), how)
}
