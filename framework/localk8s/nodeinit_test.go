package localk8s

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNodeComponentsRunInTheNode(t *testing.T) {
	c := testConfig(t)
	var inNode []string
	for _, comp := range Components(c) {
		if comp.InNode {
			inNode = append(inNode, comp.Name)
		}
	}
	// The kubelet must share containerd's PID namespace (container PIDs),
	// the control plane needs none of the node's.
	if want := []string{Containerd, Kubelet, KubeProxy, KubeRouter}; !slices.Equal(inNode, want) {
		t.Errorf("node components %v, want %v", inNode, want)
	}
	k := Components(c)[5]
	w := InNode(k, 4242)
	if w.Path != "nsenter" || !w.SignalGroup || w.InNode {
		t.Errorf("wrapped %+v", w)
	}
	want := append([]string{"--target=4242", "--mount", "--pid", "--", k.Path}, k.Args...)
	if !slices.Equal(w.Args, want) {
		t.Errorf("nsenter args %q,\nwant %q", w.Args, want)
	}
	ic, err := NodeInitComponent(c)
	if err != nil {
		t.Fatal(err)
	}
	if ic.Argv0 != NodeInitName || ic.Cloneflags != syscall.CLONE_NEWPID|syscall.CLONE_NEWNS {
		t.Errorf("init %+v", ic)
	}
	// The wipe recognises a leftover init and nsenter by their argv.
	s := HostState{Processes: []HostProcess{
		{PID: 30, Argv: append([]string{NodeInitName}, ic.Args...)},
		{PID: 31, Argv: append([]string{"nsenter"}, w.Args...)},
		{PID: 32, Argv: []string{"nsenter", "--target=1", "--net", "--", "ip", "a"}},
	}}
	var pids []int
	for _, p := range PlanWipe(s, c, 0).Kill {
		pids = append(pids, p.PID)
	}
	if !slices.Equal(pids, []int{30, 31}) {
		t.Errorf("kill %v, want [30 31] (not someone else's nsenter)", pids)
	}
}

func TestPropagationKind(t *testing.T) {
	for _, tc := range []struct {
		opt  []string
		want string
	}{
		{nil, "private"},
		{[]string{"shared:1"}, "shared"},
		{[]string{"master:3"}, "slave"},
		{[]string{"shared:2", "master:3", "propagate_from:3"}, "shared,slave"},
		{[]string{"unbindable"}, "unbindable"},
	} {
		if got := PropagationKind(tc.opt); got != tc.want {
			t.Errorf("PropagationKind(%q) = %s, want %s", tc.opt, got, tc.want)
		}
	}
	in := "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n23 22 0:5 / /run rw shared:7 - tmpfs tmpfs rw\n"
	m, err := ParseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m[0].Propagation != "private" || m[1].Propagation != "shared" {
		t.Errorf("parsed %+v", m)
	}
}

// The wipe's host check fires when the host's / lost its propagation, and
// only then; and it keeps the records when the state directory is gone.
func TestPlanWipeRootPropagation(t *testing.T) {
	c := testConfig(t)
	s := HostState{RootPropagation: "shared", SavedRootPropagation: "private"}
	p := PlanWipe(s, c, 0)
	if p.RestoreRootPropagation != "private" || p.Empty() || !strings.Contains(p.String(), "propagation of /: back to private") {
		t.Errorf("plan %+v: %s", p, p)
	}
	s.RootPropagation = "private"
	if p := PlanWipe(s, c, 0); !p.Empty() {
		t.Errorf("unchanged / gives a plan: %s", p)
	}
	// Not recorded (no Start yet): nothing to compare with.
	if p := PlanWipe(HostState{RootPropagation: "shared"}, c, 0); !p.Empty() {
		t.Errorf("unrecorded / gives a plan: %s", p)
	}
	after := HostState{RootPropagation: "shared", HostPathsNow: []string{"/var/run/ztunnel"}}
	after.KeepRecords(HostState{SavedRootPropagation: "private", HostPathsBefore: []string{}})
	p = PlanWipe(after, c, 0)
	if p.RestoreRootPropagation != "private" || !slices.Equal(p.RemovePaths, []string{"/var/run/ztunnel"}) {
		t.Errorf("after the state directory is gone, plan %s", p)
	}
}

// istio-cni's host rules (cni/pkg/iptables/testdata/hostprobe.golden in
// istio/istio, as iptables-save prints them), its probe ipsets and, in
// native nftables mode, its nftables table go.
func TestWipeRemovesIstioCNIHostState(t *testing.T) {
	save := `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:ISTIO_POSTRT - [0:0]
-A POSTROUTING -j ISTIO_POSTRT
-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE
-A ISTIO_POSTRT -m owner --socket-exists -p tcp -m set --match-set istio-inpod-probes-v4 dst -j SNAT --to-source 169.254.7.127
COMMIT
`
	want := "*nat\n-D POSTROUTING -j ISTIO_POSTRT\n-F ISTIO_POSTRT\n-X ISTIO_POSTRT\nCOMMIT\n"
	if got := IPTablesCleanup(save)["nat"]; got != want {
		t.Errorf("nat script:\n%s\nwant:\n%s", got, want)
	}
	for name, want := range map[string]bool{"istio-inpod-probes-v4": true, "istio-inpod-probes-v6": true, "KUBE-DST-X": true, "istio-other": false, "my-set": false} {
		if IsClusterIPSet(name) != want {
			t.Errorf("IsClusterIPSet(%s) = %v", name, !want)
		}
	}
	// Native nftables mode: its table on the host, as `nft list tables`
	// prints it (Debian's nft 1.0.6), goes; a table of someone else's stays.
	tables := ParseNftTables("table ip filter\ntable inet istio-ambient-nat\ntable inet firewalld\n")
	p := PlanWipe(HostState{NftTables: tables}, testConfig(t), 0)
	if len(p.DeleteNftTables) != 1 || p.DeleteNftTables[0] != (NftTable{"inet", "istio-ambient-nat"}) || p.Empty() ||
		!strings.Contains(p.String(), "nft tables: inet istio-ambient-nat") {
		t.Errorf("nft tables %v parsed into plan %v (%s)", tables, p.DeleteNftTables, p)
	}
	if p := PlanWipe(HostState{NftTables: ParseNftTables("table ip filter\n")}, testConfig(t), 0); !p.Empty() {
		t.Errorf("a host with only its own nft table gives a plan:\n%s", p)
	}
	for _, d := range NodeRunDirs {
		if !slices.Contains(HostPaths, d) {
			t.Errorf("%s (a node tmpfs's mount point) is not a host path the wipe removes", d)
		}
	}
}

// TestNodeInitNamespaces starts the node init for real (root only; no
// cluster): in its namespaces PID 1 is the init, /proc/1/ns/net is
// readable, / is shared and its tmpfs is mounted, while the host's / keeps
// its propagation and never sees the tmpfs; stopping the init ends every
// process of the namespace.
func TestNodeInitNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node init needs root (CLONE_NEWPID, CLONE_NEWNS, mount)")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("nsenter (util-linux) is missing")
	}
	dir := t.TempDir()
	tmpfs := filepath.Join(dir, "netns")
	ready := nodeReadyFile(Config{StateDir: dir})
	hostRoot := rootPropagation(t)
	sup := NewSupervisor(filepath.Join(dir, "logs"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	initProc, err := sup.Start(Component{Name: NodeInit, Path: exe, Argv0: NodeInitName, StopTimeout: 5,
		Args: []string{"--ready=" + ready, "--tmpfs=" + tmpfs}, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.StopAll()
	if err := waitNodeInit(t.Context(), initProc, Config{StateDir: dir}); err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("this host refuses new namespaces: %v", err)
		}
		t.Fatal(err)
	}
	pid := initProc.Cmd.Process.Pid
	in := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("nsenter", append([]string{"--target=" + strconv.Itoa(pid), "--mount", "--pid", "--"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("in the node: %q: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := in("cat", "/proc/1/cmdline"); !strings.HasPrefix(got, NodeInitName) {
		t.Errorf("PID 1 in the node is %q, want the node init", got)
	}
	// Control: outside the node, PID 1 is the host's init.
	if b, _ := os.ReadFile("/proc/1/cmdline"); strings.HasPrefix(string(b), NodeInitName) {
		t.Errorf("the host's PID 1 is %q too: the check above tells nothing", b)
	}
	if got := in("stat", "-L", "-c", "%i", "/proc/1/ns/net"); got == "" {
		t.Error("/proc/1/ns/net not readable in the node")
	}
	if got := in("findmnt", "-no", "PROPAGATION", "/"); !strings.HasPrefix(got, "shared") {
		t.Errorf("/ in the node is %q, want shared", got)
	}
	if got := in("findmnt", "-no", "FSTYPE", tmpfs); got != "tmpfs" {
		t.Errorf("%s in the node is %q, want tmpfs", tmpfs, got)
	}
	if rootPropagation(t) != hostRoot {
		t.Errorf("host / changed from %s to %s while the node runs", hostRoot, rootPropagation(t))
	}
	if out, _ := exec.Command("findmnt", "-no", "FSTYPE", tmpfs).Output(); len(out) != 0 {
		t.Errorf("the host sees the node's tmpfs on %s", tmpfs)
	}
	// Stopping a node component waits for the component itself (nsenter's
	// child), not just nsenter: the shell's TERM handler takes half a
	// second and writes a file, which must exist when Stop returns.
	marker := filepath.Join(dir, "graceful")
	polite, err := sup.Start(InNode(Component{Name: "polite", Path: "/bin/sh", StopTimeout: 5,
		Args: []string{"-c", `trap 'sleep 0.5; echo bye > ` + marker + `; exit 0' TERM; echo up; while :; do sleep 0.1; done`}}, pid))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(polite.LogPath); strings.Contains(string(b), "\nup\n") {
			break
		}
		if i == 100 {
			t.Fatal("the shell in the node never got ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := sup.Stop(polite); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("Stop returned before the component in the node finished its shutdown: %v", err)
	}
	// A process in the node outlives nothing: stopping the init ends it.
	sleeper, err := sup.Start(InNode(Component{Name: "sleeper", Path: "/bin/sleep", Args: []string{"600"}, StopTimeout: 1}, pid))
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Stop(initProc); err != nil {
		t.Fatal(err)
	}
	<-sleeper.done
	if rootPropagation(t) != hostRoot {
		t.Errorf("host / is %s after the node, was %s", rootPropagation(t), hostRoot)
	}
}

func rootPropagation(t *testing.T) string {
	t.Helper()
	m, err := listMounts()
	if err != nil {
		t.Fatal(err)
	}
	kind := ""
	for _, x := range m {
		if x.Target == "/" {
			kind = x.Propagation
		}
	}
	return kind
}
