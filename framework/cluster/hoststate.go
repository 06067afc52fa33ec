package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// HostState is what a kind cluster on a container engine adds to the
// machine, each as a set of names: the engine's containers, networks,
// volumes and images, the iptables rules (the engine's network and the
// nodes' port mappings add some), the mount points (overlay roots, network
// namespaces, shm), and the first-level cgroups of each cgroup v1 controller
// (Podman's cgroupfs manager adds libpod_parent, which outlives the
// containers). Taken before a run and after its tear-down, Since shows
// what the run left behind.
type HostState struct {
	Sets map[string][]string
}

// hostStateProbes are the sets SnapshotHost reads; each returns sorted names.
var hostStateProbes = []struct {
	name string
	read func(ctx context.Context, cli string) ([]string, error)
}{
	{"containers", func(ctx context.Context, cli string) ([]string, error) {
		return lines(ctx, cli, "ps", "-a", "--format", "{{.Names}}")
	}},
	{"networks", func(ctx context.Context, cli string) ([]string, error) {
		return lines(ctx, cli, "network", "ls", "--format", "{{.Name}}")
	}},
	{"volumes", func(ctx context.Context, cli string) ([]string, error) {
		return lines(ctx, cli, "volume", "ls", "--format", "{{.Name}}")
	}},
	{"images", func(ctx context.Context, cli string) ([]string, error) {
		return lines(ctx, cli, "images", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}")
	}},
	{"iptables rules", func(ctx context.Context, _ string) ([]string, error) { return iptablesRules(ctx) }},
	{"mounts", func(context.Context, string) ([]string, error) { return mountPoints() }},
	{"cgroups", func(context.Context, string) ([]string, error) { return topCgroups("/sys/fs/cgroup") }},
}

// SnapshotHost reads the host's state through the engine's CLI (docker or
// podman), iptables-save, /proc/self/mountinfo and /sys/fs/cgroup.
func SnapshotHost(ctx context.Context, cli string) (HostState, error) {
	s := HostState{Sets: map[string][]string{}}
	for _, p := range hostStateProbes {
		v, err := p.read(ctx, cli)
		if err != nil {
			return HostState{}, fmt.Errorf("host state: %s: %w", p.name, err)
		}
		sort.Strings(v)
		s.Sets[p.name] = v
	}
	return s, nil
}

// Since lists, per set, what s has that before had not: what a run left,
// when s is taken after its tear-down. Empty when nothing is left.
func (s HostState) Since(before HostState) map[string][]string {
	out := map[string][]string{}
	for k, now := range s.Sets {
		had := map[string]bool{}
		for _, v := range before.Sets[k] {
			had[v] = true
		}
		for _, v := range now {
			if !had[v] {
				out[k] = append(out[k], v)
			}
		}
	}
	return out
}

// FormatLeftovers renders Since's result for an error message.
func FormatLeftovers(left map[string][]string) string {
	var keys []string
	for k := range left {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s (%d): %s\n", k, len(left[k]), strings.Join(left[k], "; "))
	}
	return b.String()
}

func lines(ctx context.Context, name string, args ...string) ([]string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(ee.Stderr))
		}
		return nil, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	var v []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			v = append(v, l)
		}
	}
	return v, sc.Err()
}

// counters are iptables-save's packet and byte counts, which change with
// traffic and say nothing about which rules exist.
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// iptablesRules are the host's IPv4 and IPv6 rules and chains, one line
// each prefixed by its table ("filter: -A FORWARD ..."), without counters.
func iptablesRules(ctx context.Context) ([]string, error) {
	var v []string
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not installed; the check needs it to see the engine's rules", tool)
		}
		out, err := lines(ctx, tool)
		if err != nil {
			return nil, err
		}
		table := ""
		for _, l := range out {
			switch {
			case strings.HasPrefix(l, "#"), l == "COMMIT":
			case strings.HasPrefix(l, "*"):
				table = tool[:len(tool)-len("-save")] + " " + l[1:]
			default:
				v = append(v, table+": "+strings.TrimSpace(counters.ReplaceAllString(l, "")))
			}
		}
	}
	return v, nil
}

// mountPoints are the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var v []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			v = append(v, f[4])
		}
	}
	return v, nil
}

// topCgroups are the directories directly under each cgroup hierarchy
// under root ("memory/libpod_parent"), or under root itself on a cgroup v2
// host.
func topCgroups(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var v []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
			v = append(v, e.Name()) // v2: the entries are cgroups
			continue
		}
		sub, err := os.ReadDir(filepath.Join(root, e.Name()))
		if err != nil {
			continue // a hierarchy that cannot be read (e.g. not mounted)
		}
		for _, s := range sub {
			if s.IsDir() {
				v = append(v, e.Name()+"/"+s.Name())
			}
		}
	}
	return v, nil
}
