// Command istioimages packs Istio's binaries (make istio-bin) into image
// archives laid out as Istio's own images, for clusters that get Istio's
// images from no registry (make istio-images; see framework/istioimages):
//
//	go run ./cmd/istioimages -bin bin/istio -out bin/istio/images -hub localhost/istio -tag 1.30.3-dev
//
// It writes <out>/pilot.tar, <out>/install-cni.tar and <out>/images.json
// (references, digests, binaries' sha256, Debian packages). The install-cni
// image's iptables tools are Debian packages fetched with apt-get download
// into <cache>/debs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/meshclaims/meshclaims/framework/istioimages"
)

func main() {
	fs := flag.NewFlagSet("istioimages", flag.ExitOnError)
	o := istioimages.Options{}
	fs.StringVar(&o.BinDir, "bin", "bin/istio", "directory holding "+fmt.Sprint(istioimages.Binaries))
	out := fs.String("out", "bin/istio/images", "directory to write the archives and "+istioimages.ManifestFile+" into")
	cache := fs.String("cache", "bin/istio/debian", "cache of Debian packages and the root filesystem made from them")
	fs.StringVar(&o.Hub, "hub", "localhost/istio", "image repository prefix (Helm global.hub)")
	fs.StringVar(&o.Tag, "tag", "", "image tag (Helm global.tag), e.g. 1.30.3-dev")
	fs.StringVar(&o.Revision, "revision", "", "Istio commit the binaries are built from (image label)")
	fs.StringVar(&o.GOARCH, "arch", runtime.GOARCH, "architecture the binaries are built for")
	noCNI := fs.Bool("no-cni", false, "skip the install-cni image (no Debian packages needed)")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, *out, *cache, *noCNI); err != nil {
		fmt.Fprintln(os.Stderr, "istioimages:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o istioimages.Options, out, cache string, noCNI bool) error {
	if err := istioimages.CheckHubTag(o.Hub, o.Tag); err != nil {
		return err
	}
	t0 := time.Now()
	if !noCNI {
		arch, err := istioimages.DebianArch(o.GOARCH)
		if err != nil {
			return err
		}
		root, pkgs, err := istioimages.DebianRootFS(ctx, cache, arch, istioimages.IptablesPackages)
		if err != nil {
			return err
		}
		o.CNIRootFS, o.CNIPackages = root, pkgs
		fmt.Printf("install-cni root filesystem: %d Debian packages in %s\n", len(pkgs), root)
	}
	imgs, err := istioimages.Pack(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	m, err := istioimages.WriteArchives(out, o, imgs)
	if err != nil {
		return err
	}
	for _, img := range m.Images {
		fmt.Printf("%s  %s  config %s\n", img.Archive, img.Ref, img.ConfigDigest)
	}
	fmt.Printf("packed %d images in %s\n", len(m.Images), time.Since(t0).Round(time.Second))
	return nil
}
