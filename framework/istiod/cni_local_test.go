package istiod_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/localk8s"
	"github.com/meshclaims/meshclaims/framework/probeset"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
)

// hostCNIState is istio-cni's state on the host that the clean-up must
// remove: its host chains (nat ISTIO_POSTRT) and probe ipsets (iptables
// mode), its nftables tables with their rules (native nftables mode, the
// local provider's), and its plugin in the OS packages' plugin directory
// (it must go to the node's).
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
	b, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		t.Fatalf("nft list tables on the host (Debian's nftables, make local-deps): %v", err)
	}
	for _, tb := range localk8s.ParseNftTables(string(b)) {
		if !strings.HasPrefix(tb.Name, "istio") {
			continue
		}
		out = append(out, "nft table "+tb.String())
		rules, err := exec.Command("nft", "list", "table", tb.Family, tb.Name).Output()
		if err != nil {
			continue // gone between the two reads
		}
		for _, l := range strings.Split(string(rules), "\n") {
			if l = strings.TrimSpace(l); strings.Contains(l, "snat") || strings.HasPrefix(l, "set ") {
				out = append(out, "nft "+tb.Name+": "+l)
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
// its host rules and probe set (positive control for the clean-up check) in
// native nftables mode (the local provider's: table inet istio-ambient-nat,
// SNAT for the kubelet's UID as read from the node's /proc, no ipset, no
// ISTIO_ chain), the probe-set detector reads that set and fires for an
// ambient pod missing from it, and after teardown none of that is left on
// the host.
func TestIstioCNIAmbientOnLocalCluster(t *testing.T) {
	setuptest.RequireLocal(t, "istio-cni")
	l := setuptest.Up(t, append([]string{"-mode=none", "-cluster-name=meshclaims-cni", "-run-id=istio-cni"}, setuptest.IstioFlags(t)...)...)
	ctx := context.Background()
	s, cfg := l.Suite, l.Config
	// Torn down below to check the host afterwards; the cleanup's Down then
	// returns the same result (Down runs once).
	down := func() error { return s.Down(context.Background(), t.Failed()) }
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
	// state is there for it to find (it appears once the agent is up). In
	// native nftables mode that is its table with the probe set and the
	// SNAT rule matching the kubelet's socket UID: the agent found the
	// process named kubelet in the node's /proc (the chart's /host/proc),
	// the root-run kubelet's UID 0.
	var during []string
	deadline := time.Now().Add(cfg.Timeouts.IstioReady)
	for {
		during = hostCNIState(t, node.CNIBinDir)
		all := strings.Join(during, "\n")
		if strings.Contains(all, "nft table inet "+probeset.NftTable) && strings.Contains(all, "set "+probeset.SetV4) &&
			strings.Contains(all, "skuid 0 ip daddr @"+probeset.SetV4) && strings.Contains(all, "169.254.7.127") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("istio-cni's nftables host table (inet %s: set %s, kubelet SNAT rule) never appeared; host has %q", probeset.NftTable, probeset.SetV4, during)
		}
		time.Sleep(time.Second)
	}
	t.Logf("istio-cni's host state while running: %q", during)
	for _, l := range during {
		// Native nftables mode, not the iptables fallback (the agent falls
		// back when it finds its ipset, or nft without JSON).
		if strings.HasPrefix(l, "ipset ") || strings.Contains(l, "ISTIO_") {
			t.Errorf("istio-cni wrote iptables-mode host state beside its nftables table: %s", l)
		}
	}

	// The probe-set detector on the live set: a redirected pod whose IP is
	// not in it is named (negative control); once istio-cni's set holds
	// it (added here as the agent adds it, with a pod UID comment) the
	// detector is silent (positive control); the entry is then removed.
	set, err := probeset.Read(ctx, probeset.HostRunner)
	if err != nil || set.Backend != probeset.Nftables {
		t.Fatalf("probe set on the host: %+v, %v; want istio-cni's nftables set", set, err)
	}
	const probeIP = "10.244.255.254" // inside no pod of this run
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ambient-l4", Name: "echo-probe-control",
		Annotations: map[string]string{probeset.RedirectionAnnotation: probeset.RedirectionEnabled}},
		Status: corev1.PodStatus{PodIP: probeIP, PodIPs: []corev1.PodIP{{IP: probeIP}}}}
	if m := probeset.Check([]corev1.Pod{pod}, set); len(m) != 1 {
		t.Errorf("a redirected pod absent from the live set: detector found %v", m)
	} else {
		t.Logf("negative control: %v", m[0])
	}
	if out, err := exec.Command("nft", "add", "element", "inet", probeset.NftTable, probeset.SetV4,
		"{ "+probeIP+` comment "00000000-0000-4000-8000-000000000000" }`).CombinedOutput(); err != nil {
		t.Fatalf("adding %s to the live set: %v: %s", probeIP, err, out)
	}
	if set, err = probeset.Read(ctx, probeset.HostRunner); err != nil {
		t.Fatal(err)
	}
	if m := probeset.Check([]corev1.Pod{pod}, set); len(m) != 0 {
		t.Errorf("the pod's IP is in the live set, yet the detector found %v", m)
	}
	if out, err := exec.Command("nft", "delete", "element", "inet", probeset.NftTable, probeset.SetV4, "{ "+probeIP+" }").CombinedOutput(); err != nil {
		t.Errorf("removing %s from the live set: %v: %s", probeIP, err, out)
	}

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
