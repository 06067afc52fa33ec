// Package kindnode builds a kind node image for Kubernetes v1.36.3 from
// Debian packages and Go modules alone, for hosts that reach no container
// registry: `kind build node-image` always fetches its base image and the
// control plane's images from registries.
//
// The image is kind v0.33.0's base image recipe (images/base of kind's
// module: its entrypoint, systemd units and containerd config) applied to
// a Debian bookworm tree made by debootstrap, with the multi-call
// Kubernetes binary of cmd/k8s (kubeadm, kubelet, kubectl) and every image
// kubeadm and the CNI run preloaded. What differs from kind's published
// kindest/node:v1.36.4 is listed in docs/kind-on-podman.md: Debian's
// containerd 1.6 and runc 1.1 instead of containerd 2.3 and runc 1.4,
// kube-router instead of kindnetd as the default CNI, no local-path
// storage provisioner, restrict_oom_score_adj on.
//
// The same inputs give the same image: the layer is written with sorted
// entries and fixed timestamps (WriteLayer), and the preloaded images are
// imported when a node boots rather than committed as a containerd store.
package kindnode

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultRef is the node image's name: localhost/ because Podman would
// make a bare kindest/node:... into docker.io/kindest/node:..., and this
// image must never be mistaken for (or pulled as) kind's published one.
const DefaultRef = "localhost/kindest/node:" + KubernetesVersion + "-meshclaims"

// Result is what PackImage made.
type Result struct {
	Archive      string  // docker archive of the image (podman load -i)
	Ref          string  // its tag
	Digest       v1.Hash // manifest digest
	ConfigDigest v1.Hash // image ID, what `podman images` shows
	LayerDigest  v1.Hash
}

// PackImage packs the staged tree at root as the node image tagged ref,
// into the docker archive out (the layer is written next to it first, as
// out+".layer"). The image's digests depend only on the tree's contents,
// created and labels.
func PackImage(root, ref, out string, created time.Time, labels map[string]string, goarch string) (Result, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return Result{}, fmt.Errorf("kindnode: image name %q: %w; accepted: repository:tag, e.g. %q", ref, err, DefaultRef)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Result{}, err
	}
	layerPath := out + ".layer"
	f, err := os.Create(layerPath)
	if err != nil {
		return Result{}, err
	}
	sum, err := WriteLayer(root, created, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(layerPath)
		return Result{}, err
	}
	img, err := NodeImage(layerPath, sum, NodeConfig{Created: created, Labels: labels, GOARCH: goarch})
	if err != nil {
		return Result{}, err
	}
	if err := tarball.WriteToFile(out+".tmp", tag, img); err != nil {
		return Result{}, fmt.Errorf("kindnode: writing %s: %w", out, err)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return Result{}, err
	}
	// The archive holds its own copy of the layer.
	if err := os.Remove(layerPath); err != nil {
		return Result{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return Result{}, err
	}
	return Result{Archive: out, Ref: ref, Digest: d, ConfigDigest: cd, LayerDigest: sum}, nil
}

// Created is the image's timestamp: $SOURCE_DATE_EPOCH if set, else the
// Unix epoch, as framework/images does.
func Created() (time.Time, error) {
	v, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok || v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	var secs int64
	if _, err := fmt.Sscan(v, &secs); err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("kindnode: SOURCE_DATE_EPOCH=%q is not a non-negative integer number of seconds since 1970-01-01 UTC", v)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// Labels are the node image's labels: what it is and what it is built from.
func Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.version":     KubernetesVersion,
		"org.opencontainers.image.description": "kind node image built by meshclaims (make kind-node-image) from Debian " + Suite + " and Go modules",
		"io.meshclaims.kind-base":              "sigs.k8s.io/kind@v0.33.0 images/base/files",
		"io.meshclaims.cni":                    "kube-router " + KubeRouterVersion,
	}
}
