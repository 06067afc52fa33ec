package istiod_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/localk8s"
	"github.com/meshclaims/meshclaims/framework/setup"
)

// hostCNIState is istio-cni's state on the host that the clean-up must
// remove: its host chains (nat ISTIO_POSTRT), its probe ipsets, and its
// plugin in the OS packages' plugin directory (it must go to the node's).
func hostCNIState(t *testing.T, hostBinDir string) []string {
	t.Helper()
	var out []string
	for _, bin := range []string{"iptables-save", "ip6tables-save", "iptables-legacy-save", "ip6tables-legacy-save"} {
		b, err := exec.Command(bin).Output()
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "ISTIO_") {
				out = append(out, bin+": "+l)
			}
		}
	}
	if b, err := exec.Command("ipset", "list", "-n").Output(); err == nil {
		for _, s := range strings.Fields(string(b)) {
			if strings.HasPrefix(s, "istio-") {
				out = append(out, "ipset "+s)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(hostBinDir, "istio-cni")); err == nil {
		out = append(out, filepath.Join(hostBinDir, "istio-cni"))
	}
	return out
}

// TestIstioCNIAmbientOnLocalCluster installs istio-cni in ambient mode
// (with base and istiod; no ztunnel, whose image no registry this project
// builds from ships) from make istio-images' archives on the local
// provider, and shows: its node agent runs and is ready (it reads
// /proc/1/ns/net in the node's namespace and mounts the node's
// /var/run/netns HostToContainer), its plugin is chained into the node's
// CNI configuration and installed in the node's plugin directory, it wrote
// its host rules and probe ipset (positive control for the clean-up check),
// and after teardown none of that is left on the host.
func TestIstioCNIAmbientOnLocalCluster(t *testing.T) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		t.Skip("set MESHCLAIMS_LOCAL=1 (root) to run istio-cni on a local cluster")
	}
	archives, charts := os.Getenv("MESHCLAIMS_ISTIO_IMAGES"), os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if archives == "" || charts == "" {
		t.Fatal("MESHCLAIMS_ISTIO_IMAGES (make istio-images' bin/istio/images) and MESHCLAIMS_ISTIO_CHARTS (the istio.io/istio module directory) must be set; make e2e-local sets them")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	fs := flag.NewFlagSet("istio-cni", flag.ContinueOnError)
	cfg := config.Register(fs)
	if err := fs.Parse([]string{"-mode=none", "-provider=local", "-cluster-name=meshclaims-cni",
		"-results=" + t.TempDir(), "-run-id=istio-cni", "-istio-version=" + istioVersion(t),
		"-istio-hub=localhost/istio", "-istio-tag=" + istioVersion(t), "-image-archives=" + archives, "-istio-charts=" + charts}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(root, time.Now()); err != nil {
		t.Fatal(err)
	}
	reg, err := claims.Load(cfg.ClaimsFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := setup.Up(ctx, cfg, reg, testWriter{t})
	down := func() error { return s.Down(context.Background(), t.Failed()) }
	downed := false
	t.Cleanup(func() {
		if !downed {
			if err := down(); err != nil {
				t.Errorf("tear-down: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("set-up: %v", err)
	}
	lc, ok := s.Provider().(interface{ Config() localk8s.Config })
	if !ok {
		t.Fatalf("provider %T is not the local cluster", s.Provider())
	}
	node := lc.Config()
	before := hostCNIState(t, node.CNIBinDir)
	if len(before) > 0 {
		t.Fatalf("the host has istio-cni state before the run: %q", before)
	}

	t0 := time.Now()
	if err := s.InstallIstioCharts(ctx, istio.ProfileAmbient, istio.ChartBase, istio.ChartIstiod, istio.ChartCNI); err != nil {
		t.Fatalf("installing base, istiod and istio-cni (ambient): %v", err)
	}
	t.Logf("istio-cni (ambient) installed and ready in %s", time.Since(t0).Round(time.Second))
	ds, err := s.Cluster.Kube.Client.AppsV1().DaemonSets(istio.DefaultNamespace).Get(ctx, "istio-cni-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		t.Fatalf("istio-cni-node: %d of %d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	conf, err := os.ReadFile(filepath.Join(node.Layout().CNIConfDir(), "10-meshclaims.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), `"istio-cni"`) || !strings.Contains(string(conf), `"bridge"`) {
		t.Errorf("the node's CNI configuration does not chain istio-cni after the bridge:\n%s", conf)
	}
	if _, err := os.Stat(filepath.Join(node.Layout().CNIBinDir(), "istio-cni")); err != nil {
		t.Errorf("istio-cni's plugin is not in the node's plugin directory: %v", err)
	}
	// Positive control for the clean-up check below: the agent's host
	// state is there for it to find (it appears once the agent is up).
	var during []string
	deadline := time.Now().Add(cfg.Timeouts.IstioReady)
	for {
		during = hostCNIState(t, node.CNIBinDir)
		if strings.Contains(strings.Join(during, "\n"), "ipset istio-inpod-probes") && strings.Contains(strings.Join(during, "\n"), "ISTIO_POSTRT") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("istio-cni's host rules and probe ipset never appeared; host has %q", during)
		}
		time.Sleep(time.Second)
	}
	t.Logf("istio-cni's host state while running: %q", during)

	downed = true
	if err := down(); err != nil {
		t.Fatalf("tear-down: %v", err)
	}
	if left := hostCNIState(t, node.CNIBinDir); len(left) > 0 {
		t.Errorf("istio-cni left on the host: %q", left)
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), "cni-") {
		t.Errorf("pods' network namespaces on the host: %s", out)
	}
}
