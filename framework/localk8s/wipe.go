package localk8s

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// WipePlan is what must go for the host to be as it was before the cluster:
// each field is one kind of leftover, in the order Execute removes them.
// An empty plan (Empty) means the host is clean.
type WipePlan struct {
	// Kill are processes of the cluster: its components, containerd's
	// shims, and every process in the kubelet's pod cgroups.
	Kill []HostProcess
	// Unmount are mount points under the state directory, deepest first
	// (pod volumes, container root filesystems, network namespaces).
	Unmount []string
	// IPTablesRestore holds, per binary, an `iptables-restore --noflush`
	// script per table that deletes the cluster's rules from the built-in
	// chains and then flushes and deletes its chains.
	IPTablesRestore map[string]map[string]string
	// DestroyIPSets are kube-router's ipsets and istio-cni's (iptables mode).
	DestroyIPSets []string
	// DeleteNftTables are istio-cni's nftables tables on the host (native
	// nftables mode: its probe set and SNAT rule).
	DeleteNftTables []NftTable
	// DeleteLinks are the interfaces attached to the bridge, then the bridge.
	DeleteLinks []string
	// RemoveCgroups are the kubelet's cgroup directories, deepest first.
	RemoveCgroups []string
	// RemovePaths are files and directories outside the state directory:
	// log links and dead shim sockets, then the HostPaths Start created.
	RemovePaths []string
	// RestoreRootPropagation is the propagation kind to give the host's /
	// back ("" leaves it).
	RestoreRootPropagation string
	// RestoreSysctls maps sysctls to the host's original values.
	RestoreSysctls map[string]string
	// RemoveStateDir is the state directory to delete ("" keeps it).
	RemoveStateDir string
}

// Empty reports whether nothing is left to wipe.
func (p WipePlan) Empty() bool {
	return len(p.Kill) == 0 && len(p.Unmount) == 0 && len(p.IPTablesRestore) == 0 &&
		len(p.DestroyIPSets) == 0 && len(p.DeleteNftTables) == 0 && len(p.DeleteLinks) == 0 && len(p.RemoveCgroups) == 0 &&
		len(p.RemovePaths) == 0 && len(p.RestoreSysctls) == 0 && p.RemoveStateDir == "" &&
		p.RestoreRootPropagation == ""
}

// String lists the leftovers, one kind a line (error messages, logs).
func (p WipePlan) String() string {
	var b strings.Builder
	if len(p.Kill) > 0 {
		var ps []string
		for _, k := range p.Kill {
			ps = append(ps, fmt.Sprintf("%d(%s)", k.PID, filepath.Base(k.Argv[0])))
		}
		fmt.Fprintf(&b, "processes: %s\n", strings.Join(ps, " "))
	}
	line := func(what string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", what, strings.Join(items, " "))
		}
	}
	line("mounts", p.Unmount)
	for _, bin := range sortedKeys(p.IPTablesRestore) {
		line(bin+" tables", sortedKeys(p.IPTablesRestore[bin]))
	}
	line("ipsets", p.DestroyIPSets)
	var tables []string
	for _, t := range p.DeleteNftTables {
		tables = append(tables, t.String())
	}
	line("nft tables", tables)
	line("interfaces", p.DeleteLinks)
	line("cgroups", p.RemoveCgroups)
	line("paths", p.RemovePaths)
	line("sysctls", sortedKeys(p.RestoreSysctls))
	if p.RestoreRootPropagation != "" {
		line("propagation of /", []string{"back to " + p.RestoreRootPropagation})
	}
	if p.RemoveStateDir != "" {
		line("state directory", []string{p.RemoveStateDir})
	}
	return strings.TrimSpace(b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// componentPrograms are argv[0] base names the cluster runs on the host.
// A process is the cluster's only if it is one of these AND names the state
// directory, so a shell or `go run` whose command line mentions the state
// directory is never killed.
var componentPrograms = []string{"nsenter", NodeInitName, "k8s", Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubelet, KubeProxy, KubeRouter, "containerd", "containerd-shim-runc-v2", "containerd-shim-runc-v1", "containerd-shim"}

// PlanWipe computes what to remove from a host in state s so that nothing
// of cluster c is left. It is pure: Execute carries it out.
func PlanWipe(s HostState, c Config, selfPID int) WipePlan {
	p := WipePlan{IPTablesRestore: map[string]map[string]string{}, RestoreSysctls: map[string]string{}}
	state := filepath.Clean(c.StateDir) + "/"

	for _, proc := range s.Processes {
		if proc.PID == selfPID || proc.PID == 1 || len(proc.Argv) == 0 {
			continue
		}
		inPod := slices.ContainsFunc(proc.Cgroups, isKubeCgroup)
		ours := slices.Contains(componentPrograms, filepath.Base(proc.Argv[0])) &&
			slices.ContainsFunc(proc.Argv, func(a string) bool { return strings.Contains(a, state) })
		if inPod || ours {
			p.Kill = append(p.Kill, proc)
		}
	}

	for _, m := range s.Mounts {
		if strings.HasPrefix(m.Target+"/", state) {
			p.Unmount = append(p.Unmount, m.Target)
		}
	}
	// Deepest first; among equal paths (stacked mounts) each is listed once
	// per layer, and every layer needs its own umount.
	sort.SliceStable(p.Unmount, func(i, j int) bool {
		return strings.Count(p.Unmount[i], "/") > strings.Count(p.Unmount[j], "/")
	})

	for bin, save := range s.IPTables {
		if scripts := IPTablesCleanup(save); len(scripts) > 0 {
			p.IPTablesRestore[bin] = scripts
		}
	}
	if len(p.IPTablesRestore) == 0 {
		p.IPTablesRestore = nil
	}

	for _, set := range s.IPSets {
		if IsClusterIPSet(set) {
			p.DestroyIPSets = append(p.DestroyIPSets, set)
		}
	}

	for _, t := range s.NftTables {
		if IsClusterNftTable(t) {
			p.DeleteNftTables = append(p.DeleteNftTables, t)
		}
	}

	bridgeExists := false
	for _, l := range s.Links {
		if l.Master == c.Bridge {
			p.DeleteLinks = append(p.DeleteLinks, l.Name)
		}
		bridgeExists = bridgeExists || l.Name == c.Bridge
	}
	if bridgeExists {
		p.DeleteLinks = append(p.DeleteLinks, c.Bridge)
	}

	p.RemoveCgroups = append(p.RemoveCgroups, s.CgroupDirs...)
	sort.SliceStable(p.RemoveCgroups, func(i, j int) bool {
		return strings.Count(p.RemoveCgroups[i], "/") > strings.Count(p.RemoveCgroups[j], "/")
	})

	p.RemovePaths = append(append(p.RemovePaths, s.LogLinks...), s.DeadShimSockets...)
	if s.HostPathsBefore != nil {
		for _, hp := range s.HostPathsNow {
			if !slices.Contains(s.HostPathsBefore, hp) {
				p.RemovePaths = append(p.RemovePaths, hp)
			}
		}
	}

	for k, v := range s.SavedSysctls {
		if cur, ok := s.Sysctls[k]; ok && cur != v {
			p.RestoreSysctls[k] = v
		}
	}
	if len(p.RestoreSysctls) == 0 {
		p.RestoreSysctls = nil
	}
	if s.SavedRootPropagation != "" && s.RootPropagation != s.SavedRootPropagation {
		p.RestoreRootPropagation = s.SavedRootPropagation
	}
	if s.StateDirExists && !c.KeepState {
		p.RemoveStateDir = c.StateDir
	}
	return p
}

func isKubeCgroup(path string) bool {
	for _, root := range kubeCgroupRoots {
		if path == "/"+root || strings.HasPrefix(path, "/"+root+"/") {
			return true
		}
	}
	return false
}

// ourChainPrefixes name the chains a local cluster creates: kube-proxy's and
// the kubelet's (KUBE-), kube-router's (KUBE-ROUTER-, KUBE-POD-FW-,
// KUBE-NWPLCY-, all under KUBE-), the CNI plugins' (CNI-) and istio-cni's
// in the node's network namespace (ISTIO_POSTRT in nat, for the kubelet's
// probes of ambient pods; cni/pkg/iptables in istio/istio).
var ourChainPrefixes = []string{"KUBE-", "CNI-", "ISTIO_"}

func isOurChain(name string) bool {
	for _, p := range ourChainPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// IPTablesCleanup turns `iptables-save` output into one
// `iptables-restore --noflush` script per table that removes the cluster's
// rules and chains and nothing else: rules in other chains that jump to one
// of ours or carry a kube-router or CNI-network comment are deleted, then
// every chain of ours is flushed (dropping references between them) and
// deleted.
func IPTablesCleanup(save string) map[string]string {
	out := map[string]string{}
	var table string
	var dels, chains []string
	flush := func() {
		if table == "" || (len(dels) == 0 && len(chains) == 0) {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "*%s\n", table)
		for _, d := range dels {
			b.WriteString(d + "\n")
		}
		for _, c := range chains {
			fmt.Fprintf(&b, "-F %s\n", c)
		}
		for _, c := range chains {
			fmt.Fprintf(&b, "-X %s\n", c)
		}
		b.WriteString("COMMIT\n")
		out[table] = b.String()
	}
	for _, line := range strings.Split(save, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table, dels, chains = strings.TrimPrefix(line, "*"), nil, nil
		case strings.HasPrefix(line, ":"):
			name := strings.Fields(strings.TrimPrefix(line, ":"))[0]
			if isOurChain(name) {
				chains = append(chains, name)
			}
		case strings.HasPrefix(line, "-A "):
			fields := strings.Fields(line)
			if len(fields) < 2 || isOurChain(fields[1]) {
				continue // flushed with its chain
			}
			if ruleIsOurs(line) {
				dels = append(dels, "-D"+strings.TrimPrefix(line, "-A"))
			}
		}
	}
	flush()
	return out
}

func ruleIsOurs(rule string) bool {
	fields := strings.Fields(rule)
	for i, f := range fields {
		if (f == "-j" || f == "-g" || f == "--jump" || f == "--goto") && i+1 < len(fields) && isOurChain(fields[i+1]) {
			return true
		}
	}
	return strings.Contains(rule, "kube-router") || strings.Contains(rule, `name: \"`+CNINetworkName+`\"`)
}

// IsClusterIPSet reports whether an ipset is one the cluster creates:
// kube-router's firewall's (its IPv6 twins carry an "inet6:" prefix) and
// istio-cni's ambient node agent's probe sets (istio-inpod-probes-v4 and
// -v6, cni/pkg/config and cni/pkg/ipset in istio/istio).
func IsClusterIPSet(name string) bool {
	name = strings.TrimPrefix(name, "inet6:")
	for _, p := range []string{"KUBE-SRC-", "KUBE-DST-", "kube-router-", "istio-inpod-probes-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// IsClusterNftTable reports whether an nftables table on the host is one
// the cluster creates: istio-cni's in native nftables mode (table inet
// istio-ambient-nat, with its probe set and the kubelet's SNAT rule;
// cni/pkg/nftables in istio/istio names all its tables istio-*). The
// cluster's other programs use iptables (kube-proxy's iptables mode,
// kube-router v2.1.0), whose tables iptables-save covers.
func IsClusterNftTable(t NftTable) bool { return strings.HasPrefix(t.Name, "istio-") }

// Wipe removes everything of cluster c from the host and then checks that
// nothing is left, returning the leftovers in the error if something is.
func Wipe(ctx context.Context, c Config) error {
	var errs []error
	// Processes first, until none is left: containers may fork while dying,
	// and shims outlive their containerd.
	for attempt := 0; ; attempt++ {
		s, err := Observe(ctx, c)
		if err != nil {
			return err
		}
		plan := PlanWipe(s, c, os.Getpid())
		if len(plan.Kill) == 0 {
			break
		}
		if attempt == 20 {
			return fmt.Errorf("localk8s: processes survive SIGKILL: %s", plan.String())
		}
		for _, p := range plan.Kill {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s, err := Observe(ctx, c)
	if err != nil {
		return err
	}
	plan := PlanWipe(s, c, os.Getpid())
	errs = append(errs, Execute(ctx, plan))
	after, err := Observe(ctx, c)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	// The records of the host as it was live in the state directory, which
	// the wipe may just have removed: check against the ones read before.
	after.KeepRecords(s)
	if left := PlanWipe(after, c, os.Getpid()); !left.Empty() {
		errs = append(errs, fmt.Errorf("localk8s: after the wipe the host still has:\n%s", left))
	}
	return errors.Join(errs...)
}

// Execute carries out plan in order, continuing past failures so that one
// stuck item does not leave everything else behind; it returns them all.
func Execute(ctx context.Context, plan WipePlan) error {
	var errs []error
	for _, p := range plan.Kill {
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", p.PID, err))
		}
	}
	for _, m := range plan.Unmount {
		if err := syscall.Unmount(m, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			// Busy: detach it now; the kernel frees it when the last user goes.
			if err2 := syscall.Unmount(m, syscall.MNT_DETACH); err2 != nil && !errors.Is(err2, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("umount %s: %w (lazy: %v)", m, err, err2))
			}
		}
	}
	for _, bin := range sortedKeys(plan.IPTablesRestore) {
		for _, table := range sortedKeys(plan.IPTablesRestore[bin]) {
			if err := runStdin(ctx, plan.IPTablesRestore[bin][table], bin+"-restore", "--noflush"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, set := range plan.DestroyIPSets {
		if _, err := run(ctx, "ipset", "destroy", set); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range plan.DeleteNftTables {
		if _, err := run(ctx, "nft", "delete", "table", t.Family, t.Name); err != nil && !strings.Contains(err.Error(), "No such file or directory") {
			errs = append(errs, err)
		}
	}
	for _, l := range plan.DeleteLinks {
		if _, err := run(ctx, "ip", "link", "delete", l); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			errs = append(errs, err)
		}
	}
	for _, d := range plan.RemoveCgroups {
		// cgroup directories are removed with rmdir (their files are virtual).
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	for _, path := range plan.RemovePaths {
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
	}
	if plan.RestoreRootPropagation != "" {
		if err := setRootPropagation(plan.RestoreRootPropagation); err != nil {
			errs = append(errs, fmt.Errorf("restoring the propagation of /: %w", err))
		}
	}
	for _, k := range sortedKeys(plan.RestoreSysctls) {
		if err := setSysctl(k, plan.RestoreSysctls[k]); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", k, plan.RestoreSysctls[k], err))
		}
	}
	if plan.RemoveStateDir != "" {
		if err := os.RemoveAll(plan.RemoveStateDir); err != nil {
			errs = append(errs, err)
		}
		// The default parent was created by Start; leave no empty directory.
		if parent := filepath.Dir(plan.RemoveStateDir); parent == DefaultStateRoot {
			_ = os.Remove(parent) // fails, as it should, while other clusters' state is there
		}
	}
	return errors.Join(errs...)
}
