package kindnode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istioimages"
)

// The images a kubeadm v1.36.3 cluster made by kind runs, under the names
// kubeadm and kind ask for (kubeadm config images list --kubernetes-version
// v1.36.3; kind's containerd config names pause 3.10), so that nothing is
// pulled. Each is built here from the same sources as the rest of the node.
const (
	KubernetesVersion = "v1.36.3"
	EtcdTag           = "3.6.8-0" // etcd 3.6.8 is what cmd/k8s embeds
	CoreDNSVersion    = "v1.14.2" // cmd/kindcoredns pins it
	PauseTag          = "3.10"
	// KubeRouterVersion is cmd/kube-router's pin; its image name is this
	// project's, as no registry is meant to serve it.
	KubeRouterVersion = "v2.1.0"
)

// KubeRouterImage is the CNI's image in the node (see CNIManifest).
var KubeRouterImage = "localhost/meshclaims/kube-router:" + KubeRouterVersion

// controlPlaneComponents are the images holding only the multi-call
// binary, run as root (kubeadm's static pods read root-owned keys and
// write /var/lib/etcd), each with its component's name on PATH.
var controlPlaneComponents = []struct{ ref, name string }{
	{"registry.k8s.io/kube-apiserver:" + KubernetesVersion, "kube-apiserver"},
	{"registry.k8s.io/kube-controller-manager:" + KubernetesVersion, "kube-controller-manager"},
	{"registry.k8s.io/kube-scheduler:" + KubernetesVersion, "kube-scheduler"},
	{"registry.k8s.io/etcd:" + EtcdTag, "etcd"},
}

// NetworkPackages are the Debian packages under kube-proxy and kube-router:
// iptables and nft (kube-proxy's iptables and nftables modes, kube-router's
// firewall), conntrack (kube-proxy clears stale UDP entries with it),
// ipset (kube-router's NetworkPolicy sets), each with its libraries, and
// busybox-static, whose sh and cp kube-router's init container uses to
// install the CNI config. (No iproute2: kube-router runs `ip` only for
// overlays and policy routing, which this CNI set-up does not use; its
// start-up clean-up of policy routing logs an error without it.)
var NetworkPackages = append(istioimages.BasePackages(),
	"conntrack", "libnetfilter-cthelper0", "libnetfilter-cttimeout1", "libnetfilter-queue1",
	"ipset", "libipset13", "busybox-static")

// SystemImageInputs are the binaries and caches the system images come from.
type SystemImageInputs struct {
	RepoRoot   string // for cmd/localk8s/pause
	K8sBinary  string
	CoreDNS    string // cmd/kindcoredns built
	KubeRouter string // cmd/kube-router built
	DebianDir  string // cache for istioimages.DebianRootFS
	GOARCH     string
}

// SystemImages builds every image the node preloads and writes each as a
// docker archive under dir; it returns their paths, in a fixed order.
// Archives, one image each, because a multi-image archive's order
// follows a Go map (go-containerregistry's MultiRefWrite) and the node
// image must not.
func SystemImages(ctx context.Context, in SystemImageInputs, dir string, log func(string)) ([]string, error) {
	arch := in.GOARCH
	darch, err := istioimages.DebianArch(arch)
	if err != nil {
		return nil, err
	}
	ver := images.ImageConfig{GOARCH: arch, Version: KubernetesVersion, Source: "https://github.com/kubernetes/kubernetes"}
	type out struct {
		ref string
		img v1.Image
	}
	var all []out

	log("packing the Kubernetes binary layer (" + in.K8sBinary + ")")
	k8s, err := images.Pack(images.PackSpec{
		Name:  "Kubernetes " + KubernetesVersion + " multi-call binary (cmd/k8s)",
		Files: []images.File{{Path: "/usr/local/bin/k8s", SourcePath: in.K8sBinary, Mode: 0o755}},
		Symlinks: []images.Symlink{
			{Path: "/usr/local/bin/etcd", Target: "k8s"}, {Path: "/usr/local/bin/kube-apiserver", Target: "k8s"},
			{Path: "/usr/local/bin/kube-controller-manager", Target: "k8s"}, {Path: "/usr/local/bin/kube-scheduler", Target: "k8s"},
			{Path: "/usr/local/bin/kube-proxy", Target: "k8s"},
		},
		ImageConfig: withEntrypoint(ver, "/usr/local/bin/k8s"),
	})
	if err != nil {
		return nil, err
	}
	for _, c := range controlPlaneComponents {
		img, err := withConfig(k8s.Image, []string{"/usr/local/bin/" + c.name}, []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
		if err != nil {
			return nil, err
		}
		all = append(all, out{c.ref, img})
	}

	log("unpacking Debian's " + strings.Join(NetworkPackages, " "))
	deb, pkgs, err := istioimages.DebianRootFS(ctx, in.DebianDir, darch, NetworkPackages)
	if err != nil {
		return nil, err
	}
	var debList []string
	for _, p := range pkgs {
		debList = append(debList, p.Name+"="+p.Version)
	}
	netBase, err := images.Pack(images.PackSpec{
		Name:   "Debian " + Suite + " network tools",
		RootFS: deb,
		Symlinks: []images.Symlink{
			{Path: "/bin/sh", Target: "busybox"}, {Path: "/bin/cp", Target: "busybox"}, {Path: "/bin/mv", Target: "busybox"},
		},
		ImageConfig: withEntrypoint(images.ImageConfig{GOARCH: arch, Version: Suite, Labels: map[string]string{"io.meshclaims.debian-packages": strings.Join(debList, " ")}}, "/bin/sh"),
	})
	if err != nil {
		return nil, fmt.Errorf("kindnode: Debian network tools: %w", err)
	}
	k8sLayers, err := k8s.Image.Layers()
	if err != nil {
		return nil, err
	}
	kubeProxy, err := mutate.AppendLayers(netBase.Image, k8sLayers...)
	if err != nil {
		return nil, err
	}
	if kubeProxy, err = withConfig(kubeProxy, []string{"/usr/local/bin/kube-proxy"}, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}); err != nil {
		return nil, err
	}
	all = append(all, out{"registry.k8s.io/kube-proxy:" + KubernetesVersion, kubeProxy})

	log("packing kube-router (" + in.KubeRouter + ")")
	kr, err := images.Pack(images.PackSpec{
		Name:        "kube-router " + KubeRouterVersion + " (cmd/kube-router)",
		Files:       []images.File{{Path: "/usr/local/bin/kube-router", SourcePath: in.KubeRouter, Mode: 0o755}},
		ImageConfig: withEntrypoint(images.ImageConfig{GOARCH: arch, Version: KubeRouterVersion, Source: "https://github.com/cloudnativelabs/kube-router"}, "/usr/local/bin/kube-router"),
	})
	if err != nil {
		return nil, err
	}
	krLayers, err := kr.Image.Layers()
	if err != nil {
		return nil, err
	}
	kubeRouter, err := mutate.AppendLayers(netBase.Image, krLayers...)
	if err != nil {
		return nil, err
	}
	if kubeRouter, err = withConfig(kubeRouter, []string{"/usr/local/bin/kube-router"}, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}); err != nil {
		return nil, err
	}
	all = append(all, out{KubeRouterImage, kubeRouter})

	// CoreDNS as root: kubeadm's Deployment adds NET_BIND_SERVICE for
	// port 53, which a non-root process gets only from file capabilities
	// (upstream's image sets them; images.Pack writes none).
	log("packing CoreDNS (" + in.CoreDNS + ")")
	dns, err := images.Pack(images.PackSpec{
		Name:        "CoreDNS " + CoreDNSVersion + " (cmd/kindcoredns)",
		Files:       []images.File{{Path: "/coredns", SourcePath: in.CoreDNS, Mode: 0o755}},
		ImageConfig: withEntrypoint(images.ImageConfig{GOARCH: arch, Version: CoreDNSVersion, Source: "https://github.com/coredns/coredns"}, "/coredns"),
	})
	if err != nil {
		return nil, err
	}
	all = append(all, out{"registry.k8s.io/coredns/coredns:" + CoreDNSVersion, dns.Image})

	log("building pause (cmd/localk8s/pause)")
	pause, err := images.Build(ctx, images.Spec{
		MainPackage: "./cmd/localk8s/pause", Dir: in.RepoRoot, LDFlags: "-s -w", BinaryPath: "/pause",
		ImageConfig: images.ImageConfig{GOARCH: arch, Version: PauseTag},
	})
	if err != nil {
		return nil, err
	}
	all = append(all, out{"registry.k8s.io/pause:" + PauseTag, pause.Image})

	var paths []string
	for _, o := range all {
		p := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(o.ref)+".tar")
		log("writing " + o.ref + " to " + p)
		if err := images.WriteTarball(o.img, o.ref, p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func withEntrypoint(c images.ImageConfig, ep string) images.ImageConfig {
	c.Entrypoint = []string{ep}
	return c
}

// withConfig is img with another entrypoint and environment, root as user.
func withConfig(img v1.Image, entrypoint, env []string) (v1.Image, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = env
	cfg.Config.User = "0:0"
	return mutate.ConfigFile(img, cfg)
}
