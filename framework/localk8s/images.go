package localk8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/images"
)

// CoreDNSVersion is the CoreDNS module version cmd/coredns pins.
const CoreDNSVersion = "v1.15.0"

// CoreDNSImage is the reference the DNS Deployment uses.
var CoreDNSImage = images.ImageRef("coredns", CoreDNSVersion)

// systemImage is an image the cluster itself needs, built from a Go main
// package of this repository (or of one of its tool modules).
type systemImage struct {
	Ref  string
	Spec images.Spec
}

func systemImages(c Config) []systemImage {
	return []systemImage{
		{Ref: images.ImageRef("pause", "local"), Spec: images.Spec{
			MainPackage: "./cmd/localk8s/pause", Dir: c.RepoRoot,
			LDFlags: "-s -w", BinaryPath: "/pause",
			ImageConfig: images.ImageConfig{Version: "local"},
		}},
		{Ref: CoreDNSImage, Spec: images.Spec{
			MainPackage: ".", Dir: filepath.Join(c.RepoRoot, "cmd", "coredns"),
			LDFlags: "-s -w", BinaryPath: "/coredns",
			ImageConfig: images.ImageConfig{Version: CoreDNSVersion, Source: "https://github.com/coredns/coredns"},
		}},
	}
}

// BuildSystemImages builds the pause and CoreDNS images into tarballs under
// dir and returns their paths. Go's build cache makes a rebuild a link step.
func BuildSystemImages(ctx context.Context, c Config, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, si := range systemImages(c) {
		img, err := images.Build(ctx, si.Spec)
		if err != nil {
			return nil, fmt.Errorf("localk8s: building %s: %w", si.Ref, err)
		}
		name := strings.NewReplacer("/", "_", ":", "_").Replace(si.Ref) + ".tar"
		path := filepath.Join(dir, name)
		if err := images.WriteTarball(img.Image, si.Ref, path); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

// ImportImage imports a docker or OCI image tarball into containerd's k8s.io
// namespace, the one the CRI plugin (and so the kubelet) sees, unpacked
// into the overlayfs snapshotter so a pod can start from it without a pull.
func ImportImage(ctx context.Context, c Config, tarball string) error {
	if _, err := os.Stat(tarball); err != nil {
		return fmt.Errorf("localk8s: image tarball: %w", err)
	}
	_, err := run(ctx, c.Ctr, "--address", c.Layout().ContainerdSocket(), "--namespace", "k8s.io",
		"images", "import", "--snapshotter", "overlayfs", tarball)
	if err != nil {
		return fmt.Errorf("localk8s: importing %s into containerd: %w", tarball, err)
	}
	return nil
}
