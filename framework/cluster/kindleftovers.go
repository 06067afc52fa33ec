package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// engineLeftovers is what a kind creation may add to the host that kind's
// own delete keeps: the engine network kind attaches its nodes to, and
// (Podman with the cgroupfs manager) the libpod_parent cgroup in each
// cgroup v1 controller, which stays, empty, after the last container.
type engineLeftovers struct {
	read          bool
	network       string
	networkExists bool
	cgroups       map[string]bool // libpod_parent directories that existed
	// netavarkBefore: netavark's rules and chains the host had before
	// (another Podman network in use, or base chains an earlier delete
	// kept), by netavarkRule.key; netnsMount: /run/netns was a mount point.
	netavarkBefore map[string]bool
	netnsMount     bool
}

// kindNetworkName is the network kind v0.33.0 uses for cli: "kind", or the
// experimental override (KIND_EXPERIMENTAL_DOCKER_NETWORK,
// KIND_EXPERIMENTAL_PODMAN_NETWORK).
func kindNetworkName(cli string) string {
	env := map[string]string{"docker": "KIND_EXPERIMENTAL_DOCKER_NETWORK", "podman": "KIND_EXPERIMENTAL_PODMAN_NETWORK"}[cli]
	if v := os.Getenv(env); env != "" && v != "" {
		return v
	}
	return "kind"
}

// libpodParents are the libpod_parent cgroups under /sys/fs/cgroup.
func libpodParents() []string {
	m, _ := filepath.Glob("/sys/fs/cgroup/*/libpod_parent")
	if v2, err := os.Stat("/sys/fs/cgroup/libpod_parent"); err == nil && v2.IsDir() {
		m = append(m, "/sys/fs/cgroup/libpod_parent")
	}
	sort.Strings(m)
	return m
}

func readEngineLeftovers(ctx context.Context, cli string) engineLeftovers {
	l := engineLeftovers{read: true, network: kindNetworkName(cli), cgroups: map[string]bool{}}
	if cli == "docker" || cli == "podman" {
		err := kindexec.CommandContext(ctx, cli, "network", "inspect", l.network).Run()
		l.networkExists = err == nil
	}
	for _, p := range libpodParents() {
		l.cgroups[p] = true
	}
	l.netavarkBefore = map[string]bool{}
	for _, r := range netavarkRules(ctx) {
		l.netavarkBefore[r.key()] = true
	}
	l.netnsMount = isMountPoint(netnsDir)
	return l
}

// removeEngineLeftovers removes the kind network if it did not exist
// before the creation, and the libpod_parent cgroups that did not (each
// only when empty: rmdir of a cgroup with tasks or children fails).
func removeEngineLeftovers(ctx context.Context, cli string, before engineLeftovers) error {
	if !before.read {
		return nil
	}
	var errs []error
	if (cli == "docker" || cli == "podman") && !before.networkExists {
		if kindexec.CommandContext(ctx, cli, "network", "inspect", before.network).Run() == nil {
			if out, err := kindexec.CombinedOutputLines(kindexec.CommandContext(ctx, cli, "network", "rm", before.network)); err != nil {
				errs = append(errs, fmt.Errorf("removing the %s network %q this run created: %v: %s", cli, before.network, err, strings.Join(out, " ")))
			}
		}
	}
	if cli == "podman" && noContainersLeft(ctx, cli) {
		// netavark leaves its base chains, and Podman its /run/netns
		// mount, after the last container of the last network is gone;
		// and a Ctrl-C during creation can leave the kind network's own
		// DNAT chain (NETAVARK-DN-<id>, empty). What the host had before
		// stays.
		errs = append(errs, removeNetavarkRules(ctx, before.netavarkBefore)...)
		if !before.netnsMount && isMountPoint(netnsDir) {
			// Podman removes the nodes' namespace files just after the
			// containers: give it a few seconds to empty the directory.
			var ents []os.DirEntry
			for i := 0; i < 20; i++ {
				if ents, _ = os.ReadDir(netnsDir); len(ents) == 0 {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if len(ents) == 0 {
				if err := unix.Unmount(netnsDir, 0); err != nil {
					errs = append(errs, fmt.Errorf("unmounting %s (Podman's, left after the nodes were deleted): %w", netnsDir, err))
				}
			} else {
				errs = append(errs, fmt.Errorf("%s (Podman's mount) still holds %d namespaces after the nodes were deleted; left mounted", netnsDir, len(ents)))
			}
		}
		for _, p := range libpodParents() {
			if before.cgroups[p] {
				continue
			}
			if err := removeCgroupTree(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupTree removes an empty cgroup and its empty children, deepest
// first.
func removeCgroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("removing cgroup %s (Podman's, left after the nodes were deleted): %w", dir, err)
	}
	return nil
}

// netnsDir is where Podman bind-mounts network namespaces.
const netnsDir = "/run/netns"

func isMountPoint(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func noContainersLeft(ctx context.Context, cli string) bool {
	out, err := kindexec.OutputLines(kindexec.CommandContext(ctx, cli, "ps", "-aq"))
	return err == nil && len(out) == 0
}

// netavarkRule is one iptables rule of netavark's: the tool, the table
// and the rule as iptables-save prints it ("-A FORWARD ... -j
// NETAVARK_FORWARD"), or a chain (":NETAVARK_FORWARD - [0:0]").
type netavarkRule struct{ tool, table, rule string }

// key names the rule across two reads: a chain by its name alone (the
// policy and counters iptables-save prints beside it change).
func (r netavarkRule) key() string {
	rule := r.rule
	if strings.HasPrefix(rule, ":") {
		rule = strings.Fields(rule)[0]
	}
	return r.tool + " " + r.table + " " + rule
}

// netavarkRules are the IPv4 and IPv6 rules and chains that name NETAVARK.
func netavarkRules(ctx context.Context) []netavarkRule {
	var out []netavarkRule
	for _, tool := range []string{"iptables", "ip6tables"} {
		lines, err := kindexec.OutputLines(kindexec.CommandContext(ctx, tool+"-save"))
		if err != nil {
			continue
		}
		table := ""
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "*"):
				table = l[1:]
			case strings.Contains(l, "NETAVARK") && (strings.HasPrefix(l, "-A ") || strings.HasPrefix(l, ":")):
				out = append(out, netavarkRule{tool, table, l})
			}
		}
	}
	return out
}

// removeNetavarkRules deletes netavark's rules that are not in keep (by
// key; the jumps into its chains first), then flushes and deletes its
// chains not in keep.
func removeNetavarkRules(ctx context.Context, keep map[string]bool) []error {
	var errs []error
	rules := newNetavarkRules(netavarkRules(ctx), keep)
	run := func(tool string, args ...string) {
		if out, err := kindexec.CombinedOutputLines(kindexec.CommandContext(ctx, tool, args...)); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %v: %s", tool, strings.Join(args, " "), err, strings.Join(out, " ")))
		}
	}
	for _, r := range rules {
		if strings.HasPrefix(r.rule, "-A ") {
			args, err := splitRule(r.rule)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			args[0] = "-D"
			run(r.tool, append([]string{"-t", r.table}, args...)...)
		}
	}
	for _, op := range []string{"-F", "-X"} {
		for _, r := range rules {
			if strings.HasPrefix(r.rule, ":") {
				run(r.tool, "-t", r.table, op, strings.Fields(r.rule[1:])[0])
			}
		}
	}
	return errs
}

// newNetavarkRules are the rules of now that keep does not hold.
func newNetavarkRules(now []netavarkRule, keep map[string]bool) []netavarkRule {
	var out []netavarkRule
	for _, r := range now {
		if !keep[r.key()] {
			out = append(out, r)
		}
	}
	return out
}

// splitRule splits an iptables-save rule into arguments: words, with
// double-quoted strings (comments) as one argument.
func splitRule(rule string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(rule); i++ {
		c := rule[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("iptables rule %q has an unclosed quote", rule)
	}
	if have {
		args = append(args, cur.String())
	}
	return args, nil
}

// KindHostGuard is what a test that runs the suite in another process
// (go test ./e2e -provider=kind) needs to clean up after that process when
// it did not: the engine's state before the run, so that DeleteCluster
// removes the named cluster and only what its creation added.
type KindHostGuard struct {
	cli    string
	before engineLeftovers
}

// GuardKindHost reads the engine's network, netavark chains, /run/netns
// mount and Podman's cgroups now, before the run creates a cluster.
func GuardKindHost(ctx context.Context, cli string) KindHostGuard {
	return KindHostGuard{cli: cli, before: readEngineLeftovers(ctx, cli)}
}

// DeleteCluster deletes the kind cluster name if it exists (through kind's
// API, as the provider does) and removes what its creation added to the
// host; a no-op when the run left nothing.
func (g KindHostGuard) DeleteCluster(ctx context.Context, name string) error {
	var engine *ContainerEngine
	for _, e := range containerEngines {
		if e.CLI == g.cli {
			engine = &e
		}
	}
	if engine == nil {
		return fmt.Errorf("kind host guard: engine %q is not one of kind's (docker, nerdctl, podman)", g.cli)
	}
	p := kindcluster.NewProvider(engine.Option())
	names, err := p.List()
	if err != nil {
		return fmt.Errorf("kind host guard: listing clusters: %w", err)
	}
	for _, n := range names {
		if n == name {
			if err := p.Delete(name, ""); err != nil {
				return fmt.Errorf("kind host guard: deleting cluster %q: %w", name, err)
			}
		}
	}
	return removeEngineLeftovers(ctx, g.cli, g.before)
}
