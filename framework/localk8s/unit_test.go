package localk8s

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	c, err := Config{Name: "unit", StateDir: "/var/lib/meshclaims-local/unit", RepoRoot: "/repo"}.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultsAddresses(t *testing.T) {
	c := testConfig(t)
	for what, got := range map[string]string{
		"node subnet": c.NodeSubnet().String(), "node IP": c.NodeIP().String(),
		"API service IP": c.APIServiceIP().String(), "DNS service IP": c.DNSServiceIP().String(),
		"server": c.APIServerURL(),
	} {
		want := map[string]string{
			"node subnet": "198.18.0.0/24", "node IP": "198.18.0.1",
			"API service IP": "198.19.0.1", "DNS service IP": "198.19.0.10",
			"server": "https://198.18.0.1:6443",
		}[what]
		if got != want {
			t.Errorf("%s = %s, want %s", what, got, want)
		}
	}
	if c.K8sBinary != "/repo/bin/k8s/k8s" {
		t.Errorf("K8sBinary = %s", c.K8sBinary)
	}
}

func TestDefaultsRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"upper-case name":      {Config{Name: "Mesh"}, `cluster name "Mesh" is not valid; accepted:`},
		"state dir too high":   {Config{Name: "a", StateDir: "/var"}, `state directory "/var" is too close to /`},
		"private pod range":    {Config{Name: "a", StateDir: "/x/y", PodCIDR: netip.MustParsePrefix("10.0.0.0/25")}, "pod CIDR 10.0.0.0/25 is not accepted"},
		"unmasked pod range":   {Config{Name: "a", StateDir: "/x/y", PodCIDR: netip.MustParsePrefix("198.18.1.0/16")}, "pod CIDR 198.18.1.0/16 is not accepted"},
		"overlapping ranges":   {Config{Name: "a", StateDir: "/x/y", ServiceCIDR: netip.MustParsePrefix("198.18.0.0/16")}, "overlaps"},
		"bridge name too long": {Config{Name: "a", StateDir: "/x/y", Bridge: "a-very-long-bridge"}, `bridge name "a-very-long-bridge"`},
		"log size not a size":  {Config{Name: "a", StateDir: "/x/y", ContainerLogMaxSize: "big"}, `container log size "big" is not accepted; accepted: a size of at least 1Ki`},
		"log size too small":   {Config{Name: "a", StateDir: "/x/y", ContainerLogMaxSize: "10"}, `container log size "10" is not accepted`},
	}
	for name, tc := range cases {
		tc.cfg.RepoRoot = "/repo"
		_, err := tc.cfg.Defaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}

func TestGeneratePKI(t *testing.T) {
	c := testConfig(t)
	p, err := GeneratePKI(PKIParams{ClusterName: "local-unit", NodeName: c.NodeName, ServerURL: c.APIServerURL(),
		NodeIP: net.IP(c.NodeIP().AsSlice()), APIServiceIP: net.IP(c.APIServiceIP().AsSlice())})
	if err != nil {
		t.Fatal(err)
	}
	ca := parseCert(t, p.Files["ca.crt"])
	if !ca.IsCA {
		t.Fatal("ca.crt is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	api := parseCert(t, p.Files["apiserver.crt"])
	for _, host := range []string{"198.18.0.1", "198.19.0.1", "127.0.0.1", "kubernetes.default.svc.cluster.local"} {
		if _, err := api.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("apiserver cert for %s: %v", host, err)
		}
	}
	// Negative control: a name the certificate does not carry fails.
	if _, err := api.Verify(x509.VerifyOptions{Roots: roots, DNSName: "192.0.2.2"}); err == nil {
		t.Error("apiserver cert verified for 192.0.2.2, which it must not name")
	}

	groups := map[string][2]string{
		"admin": {"meshclaims-admin", "system:masters"}, "kubelet": {"system:node:" + c.NodeName, "system:nodes"},
		"kube-proxy": {"system:kube-proxy", ""}, "scheduler": {"system:kube-scheduler", ""},
		"controller-manager": {"system:kube-controller-manager", ""},
	}
	for name, want := range groups {
		cert := parseCert(t, p.Files[name+"-client.crt"])
		if cert.Subject.CommonName != want[0] || (want[1] != "" && !slices.Contains(cert.Subject.Organization, want[1])) {
			t.Errorf("%s: subject %v, want CN %s O %s", name, cert.Subject, want[0], want[1])
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s client cert: %v", name, err)
		}
		kc, err := clientcmd.Load(p.Files[name+".kubeconfig"])
		if err != nil {
			t.Fatalf("%s.kubeconfig: %v", name, err)
		}
		rc, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
		if err != nil {
			t.Fatalf("%s.kubeconfig: %v", name, err)
		}
		if rc.Host != c.APIServerURL() || string(rc.CAData) != string(p.Files["ca.crt"]) || string(rc.CertData) != string(p.Files[name+"-client.crt"]) {
			t.Errorf("%s.kubeconfig: host %s, CA/cert not the generated ones", name, rc.Host)
		}
	}
	if _, ok := p.Files["apiserver-kubelet-client.kubeconfig"]; ok {
		t.Error("the API server's kubelet client needs no kubeconfig")
	}
	for _, f := range []string{"sa.key", "sa.pub", "ca.key", "apiserver.key", "kubelet.crt", "kubelet.key"} {
		if blk, _ := pem.Decode(p.Files[f]); blk == nil {
			t.Errorf("%s is not PEM", f)
		}
	}
	if _, err := GeneratePKI(PKIParams{ClusterName: "x"}); err == nil {
		t.Error("GeneratePKI accepted params without node and server")
	}
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("not PEM: %q", b)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigFiles(t *testing.T) {
	c := testConfig(t)
	c.Registries = []NodeRegistry{{Host: "127.0.0.1:5443", CAFile: "/etc/containerd/certs.d/registry-ca.pem", Username: "u", Password: `p"w`}}
	files, err := ConfigFiles(c)
	if err != nil {
		t.Fatal(err)
	}
	ctrd := string(files["containerd.toml"])
	for _, want := range []string{
		"restrict_oom_score_adj = true", `sandbox_image = "docker.io/meshclaims/pause:local"`,
		"netns_mounts_under_state_dir = false", `root = "/var/lib/meshclaims-local/unit/containerd/root"`,
		"SystemdCgroup = false", `bin_dir = "/var/lib/meshclaims-local/unit/cni/bin"`, `conf_dir = "/var/lib/meshclaims-local/unit/cni/net.d"`,
		`path = "/var/lib/meshclaims-local/unit/containerd/opt"`,
		`[plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5443"]`, `endpoint = ["https://127.0.0.1:5443"]`,
		`[plugins."io.containerd.grpc.v1.cri".registry.configs."127.0.0.1:5443".tls]`, `ca_file = "/etc/containerd/certs.d/registry-ca.pem"`,
		`[plugins."io.containerd.grpc.v1.cri".registry.configs."127.0.0.1:5443".auth]`, `username = "u"`, `password = "p\"w"`,
	} {
		if !strings.Contains(ctrd, want) {
			t.Errorf("containerd.toml lacks %q:\n%s", want, ctrd)
		}
	}
	var kubelet map[string]any
	if err := yaml.Unmarshal(files["kubelet.yaml"], &kubelet); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"failCgroupV1": false, "cgroupDriver": "cgroupfs", "address": "198.18.0.1",
		"podCIDR": "198.18.0.0/24", "clusterDomain": "cluster.local"} {
		if kubelet[k] != want {
			t.Errorf("kubelet %s = %v, want %v", k, kubelet[k], want)
		}
	}
	if dns, _ := kubelet["clusterDNS"].([]any); len(dns) != 1 || dns[0] != "198.19.0.10" {
		t.Errorf("kubelet clusterDNS = %v", kubelet["clusterDNS"])
	}
	var proxy map[string]any
	if err := yaml.Unmarshal(files["kube-proxy.yaml"], &proxy); err != nil {
		t.Fatal(err)
	}
	if proxy["mode"] != "iptables" || proxy["clusterCIDR"] != "198.18.0.0/16" {
		t.Errorf("kube-proxy config %v", proxy)
	}
	// kind's kube-proxy settings: minSyncPeriod 1s and no other sync
	// setting (kube-proxy's default syncPeriod, 30s).
	if ipt, _ := proxy["iptables"].(map[string]any); len(ipt) != 1 || ipt["minSyncPeriod"] != "1s" {
		t.Errorf("kube-proxy iptables settings %v, want kind's {minSyncPeriod: 1s}", proxy["iptables"])
	}
	if m, err := kubeproxymode.Parse(string(files["kube-proxy.yaml"])); err != nil || m != claims.KubeProxyIPTables {
		t.Errorf("kube-proxy.yaml read as kube-proxy mode %q, %v", m, err)
	}
	var cni struct {
		Name    string
		Plugins []struct {
			Type   string
			Bridge string
			IPMasq bool
			IPAM   struct {
				Ranges [][]map[string]string
			}
		}
	}
	if err := json.Unmarshal(files["10-meshclaims.conflist"], &cni); err != nil {
		t.Fatal(err)
	}
	if cni.Name != CNINetworkName || len(cni.Plugins) != 2 || cni.Plugins[0].Type != "bridge" || cni.Plugins[0].Bridge != "mclk-br0" || cni.Plugins[0].IPMasq {
		t.Errorf("CNI config %+v", cni)
	}
	if r := cni.Plugins[0].IPAM.Ranges[0][0]; r["subnet"] != "198.18.0.0/24" || r["gateway"] != "198.18.0.1" || r["rangeStart"] != "198.18.0.2" {
		t.Errorf("CNI range %v", r)
	}
	if got := string(ResolvConf(c)); got != "nameserver 198.19.0.10\n" {
		t.Errorf("resolv.conf %q", got)
	}
}

func TestComponents(t *testing.T) {
	c := testConfig(t)
	var names []string
	for _, comp := range Components(c) {
		names = append(names, comp.Name)
		for _, a := range comp.Args {
			// Nothing binds every interface: listeners are node IP or loopback.
			if strings.Contains(a, "0.0.0.0") {
				t.Errorf("%s binds all interfaces: %s", comp.Name, a)
			}
		}
	}
	want := []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Containerd, Kubelet, KubeProxy, KubeRouter}
	if !slices.Equal(names, want) {
		t.Errorf("components %v, want %v", names, want)
	}
	api := Components(c)[1]
	for _, want := range []string{"--service-cluster-ip-range=198.19.0.0/16", "--advertise-address=198.18.0.1", "--bind-address=198.18.0.1", "--secure-port=6443"} {
		if !slices.Contains(api.Args, want) {
			t.Errorf("kube-apiserver lacks %s: %v", want, api.Args)
		}
	}
	if api.Path != "/repo/bin/k8s/kube-apiserver" {
		t.Errorf("kube-apiserver path %s", api.Path)
	}
	kr := KubeRouterArgs(c)
	for _, want := range []string{"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false"} {
		if !slices.Contains(kr, want) {
			t.Errorf("kube-router lacks %s", want)
		}
	}
	c.DisableNetworkPolicy = true
	if comps := Components(c); comps[len(comps)-1].Name == KubeRouter {
		t.Error("DisableNetworkPolicy still runs kube-router")
	}
}

const sampleSave = `# Generated by iptables-nft-save v1.8.9
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:DOCKER - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:CNI-abc123 - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A POSTROUTING -s 198.18.0.5/32 -m comment --comment "name: \"meshclaims-local\" id: \"x\"" -j CNI-abc123
-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE
-A DOCKER -j RETURN
-A KUBE-POSTROUTING -j MASQUERADE
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-ROUTER-INPUT - [0:0]
:KUBE-POD-FW-XYZ - [0:0]
-A INPUT -m comment --comment "kube-router netpol - 4IA2OSFRMVNDXBVV" -j KUBE-ROUTER-INPUT
-A INPUT -p tcp --dport 22 -j ACCEPT
-A KUBE-ROUTER-INPUT -j KUBE-POD-FW-XYZ
COMMIT
*raw
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A PREROUTING -p udp -j NOTRACK
COMMIT
`

func TestIPTablesCleanup(t *testing.T) {
	got := IPTablesCleanup(sampleSave)
	if _, ok := got["raw"]; ok {
		t.Errorf("raw table has nothing of ours, got a script:\n%s", got["raw"])
	}
	nat := got["nat"]
	for _, want := range []string{
		`-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
		`-D POSTROUTING -s 198.18.0.5/32 -m comment --comment "name: \"meshclaims-local\" id: \"x\"" -j CNI-abc123`,
		"-F KUBE-SERVICES", "-X KUBE-POSTROUTING", "-X CNI-abc123",
	} {
		if !strings.Contains(nat, want+"\n") {
			t.Errorf("nat script lacks %q:\n%s", want, nat)
		}
	}
	// Negative controls: other software's rules and chains stay.
	for _, keep := range []string{"172.17.0.0/16", "DOCKER", "--dport 22"} {
		for table, script := range got {
			if strings.Contains(script, keep) {
				t.Errorf("%s script touches %q:\n%s", table, keep, script)
			}
		}
	}
	// Every flush comes before every delete (chains reference each other).
	f := got["filter"]
	if strings.LastIndex(f, "-F ") > strings.Index(f, "-X ") {
		t.Errorf("filter script deletes before flushing:\n%s", f)
	}
	if !strings.HasPrefix(f, "*filter\n") || !strings.HasSuffix(f, "COMMIT\n") {
		t.Errorf("filter script is not an iptables-restore table:\n%s", f)
	}
	if len(IPTablesCleanup("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n")) != 0 {
		t.Error("a clean host got a cleanup script")
	}
}

func TestPlanWipe(t *testing.T) {
	c := testConfig(t)
	state := c.StateDir
	s := HostState{
		Processes: []HostProcess{
			{PID: 10, Argv: []string{"/repo/bin/k8s/kubelet", "--root-dir=" + state + "/kubelet"}},
			{PID: 11, Argv: []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-address", state + "/containerd/containerd.sock"}},
			{PID: 12, Argv: []string{"/fortio", "server"}, Cgroups: []string{"/kubepods/besteffort/podx/abc"}},
			// Not ours: a shell mentioning the state dir, a host containerd, ourselves.
			{PID: 20, Argv: []string{"bash", "-c", "ls " + state + "/logs"}},
			{PID: 21, Argv: []string{"/usr/bin/containerd"}, Cgroups: []string{"/system.slice/containerd.service"}},
			{PID: 22, Argv: []string{"/repo/bin/k8s/kubelet", "--root-dir=" + state + "/kubelet"}},
		},
		Mounts: []Mount{
			{"/", "ext4", "private"}, {state + "/kubelet", "ext4", "shared"},
			{state + "/kubelet/pods/u/volumes/kubernetes.io~projected/token", "tmpfs", "private"},
			{state + "/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1", "nsfs", "private"},
			{"/var/lib/meshclaims-local/unit2/kubelet", "ext4", "private"}, // another cluster's state dir sharing the prefix
		},
		IPTables:        map[string]string{"iptables": sampleSave, "ip6tables": "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"},
		IPSets:          []string{"KUBE-DST-ABC", "inet6:KUBE-SRC-DEF", "kube-router-local-ips", "my-own-set"},
		Links:           []Link{{Name: "lo"}, {Name: "eth0"}, {Name: "veth1", Master: "mclk-br0"}, {Name: "mclk-br0"}, {Name: "vethX", Master: "docker0"}},
		CgroupDirs:      []string{"/sys/fs/cgroup/pids/kubepods", "/sys/fs/cgroup/pids/kubepods/besteffort"},
		Sysctls:         map[string]string{"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1"},
		SavedSysctls:    map[string]string{"net/ipv4/ip_forward": "0", "net/bridge/bridge-nf-call-iptables": "1"},
		StateDirExists:  true,
		HostPathsNow:    []string{"/run/containerd", "/var/lib/cni", "/var/log/containers"},
		HostPathsBefore: []string{"/var/log/containers"},
		LogLinks:        []string{"/var/log/containers/x.log"},
	}
	p := PlanWipe(s, c, 22)
	var pids []int
	for _, k := range p.Kill {
		pids = append(pids, k.PID)
	}
	if !slices.Equal(pids, []int{10, 11, 12}) {
		t.Errorf("kill %v, want [10 11 12] (not the shell, the host containerd or ourselves)", pids)
	}
	wantMounts := []string{
		state + "/kubelet/pods/u/volumes/kubernetes.io~projected/token",
		state + "/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1",
		state + "/kubelet",
	}
	if !slices.Equal(p.Unmount, wantMounts) {
		t.Errorf("unmount %v,\nwant %v (deepest first, not unit2's)", p.Unmount, wantMounts)
	}
	if _, ok := p.IPTablesRestore["ip6tables"]; ok || p.IPTablesRestore["iptables"]["nat"] == "" {
		t.Errorf("iptables plan %v", p.IPTablesRestore)
	}
	if !slices.Equal(p.DestroyIPSets, []string{"KUBE-DST-ABC", "inet6:KUBE-SRC-DEF", "kube-router-local-ips"}) {
		t.Errorf("ipsets %v", p.DestroyIPSets)
	}
	if !slices.Equal(p.DeleteLinks, []string{"veth1", "mclk-br0"}) {
		t.Errorf("links %v", p.DeleteLinks)
	}
	if !slices.Equal(p.RemoveCgroups, []string{"/sys/fs/cgroup/pids/kubepods/besteffort", "/sys/fs/cgroup/pids/kubepods"}) {
		t.Errorf("cgroups %v", p.RemoveCgroups)
	}
	if len(p.RestoreSysctls) != 1 || p.RestoreSysctls["net/ipv4/ip_forward"] != "0" {
		t.Errorf("sysctls %v", p.RestoreSysctls)
	}
	if !slices.Equal(p.RemovePaths, []string{"/var/log/containers/x.log", "/run/containerd", "/var/lib/cni"}) {
		t.Errorf("paths %v", p.RemovePaths)
	}
	if p.RemoveStateDir != state || p.Empty() {
		t.Errorf("state dir %q, empty %v", p.RemoveStateDir, p.Empty())
	}
	if !strings.Contains(p.String(), "interfaces: veth1 mclk-br0") {
		t.Errorf("String():\n%s", p)
	}

	c.KeepState = true
	if PlanWipe(s, c, 22).RemoveStateDir != "" {
		t.Error("KeepState still removes the state directory")
	}
	clean := HostState{Links: []Link{{Name: "lo"}}, Sysctls: map[string]string{"net/ipv4/ip_forward": "0"}}
	if p := PlanWipe(clean, testConfig(t), 1); !p.Empty() {
		t.Errorf("clean host gives a plan:\n%s", p)
	}
}

func TestParseMountinfo(t *testing.T) {
	in := `22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw
645 22 0:55 / /var/lib/x/kubelet/pods/a/volumes/with\040space rw,relatime shared:300 - tmpfs tmpfs rw
`
	m, err := ParseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[1].Target != "/var/lib/x/kubelet/pods/a/volumes/with space" || m[1].FSType != "tmpfs" {
		t.Errorf("parsed %+v", m)
	}
	if _, err := ParseMountinfo(strings.NewReader("garbage\n")); err == nil {
		t.Error("malformed line accepted")
	}
}

// ExportLogs records the host's packet filtering (the node's, which shares
// the host's network namespace): iptables rules, ipsets, nftables ruleset,
// each under its command, a failing command's error beside it.
func TestExportLogsRecordsHostNetfilter(t *testing.T) {
	k, err := New(Config{Name: "unit-export"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := k.ExportLogs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "host-netfilter.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### iptables-save\n", "### ipset save\n", "### nft list ruleset\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("host-netfilter.txt lacks %q:\n%s", want, b)
		}
	}
}

// The kubelet rotates container logs at the size asked for, checking every
// 3 s; without one it keeps its own defaults (10Mi, 10 s).
func TestKubeletContainerLogMaxSize(t *testing.T) {
	c, err := Config{Name: "a", StateDir: "/x/y", RepoRoot: "/repo", ContainerLogMaxSize: "1Mi"}.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	if k := KubeletConfig(c); k["containerLogMaxSize"] != "1Mi" || k["containerLogMonitorInterval"] != "3s" {
		t.Errorf("kubelet config with a 1Mi log size: %v, %v", k["containerLogMaxSize"], k["containerLogMonitorInterval"])
	}
	c.ContainerLogMaxSize = ""
	if k := KubeletConfig(c); k["containerLogMaxSize"] != nil || k["containerLogMonitorInterval"] != nil {
		t.Errorf("kubelet config without a log size sets %v, %v", k["containerLogMaxSize"], k["containerLogMonitorInterval"])
	}
}
