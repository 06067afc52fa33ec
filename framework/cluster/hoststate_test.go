package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestHostStateSince(t *testing.T) {
	before := HostState{Sets: map[string][]string{"containers": {"a"}, "cgroups": {"memory/x"}}}
	after := HostState{Sets: map[string][]string{"containers": {"a"}, "cgroups": {"memory/libpod_parent", "memory/x"}, "volumes": {"v1"}}}
	got := after.Since(before)
	want := map[string][]string{"cgroups": {"memory/libpod_parent"}, "volumes": {"v1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Since = %v, want %v", got, want)
	}
	if left := before.Since(before); len(left) != 0 {
		t.Fatalf("a state has leftovers against itself: %v", left)
	}
	if s := FormatLeftovers(got); !strings.Contains(s, "cgroups (1): memory/libpod_parent") || !strings.Contains(s, "volumes (1): v1") {
		t.Errorf("FormatLeftovers = %q", s)
	}
}

// TestTopCgroups reads a v1-shaped tree (one directory per controller,
// symlinked aliases skipped) and a v2-shaped one (cgroup.controllers at
// the root).
func TestTopCgroups(t *testing.T) {
	v1 := t.TempDir()
	for _, d := range []string{"memory/libpod_parent/conmon", "memory/process_api", "pids/libpod_parent"} {
		if err := os.MkdirAll(filepath.Join(v1, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("memory", filepath.Join(v1, "mem-alias")); err != nil {
		t.Fatal(err)
	}
	got, err := topCgroups(v1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"memory/libpod_parent", "memory/process_api", "pids/libpod_parent"}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1: %v, want %v", got, want)
	}
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(v2, "libpod_parent"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := topCgroups(v2); err != nil || !reflect.DeepEqual(got, []string{"libpod_parent"}) {
		t.Errorf("v2: %v, %v", got, err)
	}
}

func TestSplitRule(t *testing.T) {
	got, err := splitRule(`-A NETAVARK-HOSTPORT-MASQ -m comment --comment "netavark portfw masq mark" -m mark --mark 0x2000/0x2000 -j MASQUERADE`)
	want := []string{"-A", "NETAVARK-HOSTPORT-MASQ", "-m", "comment", "--comment", "netavark portfw masq mark", "-m", "mark", "--mark", "0x2000/0x2000", "-j", "MASQUERADE"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("splitRule = %q, %v; want %q", got, err, want)
	}
	if _, err := splitRule(`-A X -m comment --comment "open`); err == nil {
		t.Error("an unclosed quote was accepted")
	}
}

// What a Ctrl-C during kind's creation left on a host that already had
// netavark's base chains (make kind-interrupt-test, 2026-12-02): the kind
// network's own DNAT chain, empty, in both families. Only it goes; the base
// chains and their rules, there before, stay, whatever their counters say.
func TestNewNetavarkRulesKeepsWhatWasThere(t *testing.T) {
	before := []netavarkRule{
		{"iptables", "nat", ":NETAVARK-HOSTPORT-DNAT - [0:0]"},
		{"iptables", "nat", "-A PREROUTING -m addrtype --dst-type LOCAL -j NETAVARK-HOSTPORT-DNAT"},
		{"ip6tables", "nat", ":NETAVARK-HOSTPORT-DNAT - [0:0]"},
	}
	keep := map[string]bool{}
	for _, r := range before {
		keep[r.key()] = true
	}
	now := []netavarkRule{
		{"iptables", "nat", ":NETAVARK-HOSTPORT-DNAT - [12:720]"},
		{"iptables", "nat", "-A PREROUTING -m addrtype --dst-type LOCAL -j NETAVARK-HOSTPORT-DNAT"},
		{"iptables", "nat", ":NETAVARK-DN-62F930FC96F2B - [0:0]"},
		{"ip6tables", "nat", ":NETAVARK-HOSTPORT-DNAT - [0:0]"},
		{"ip6tables", "nat", ":NETAVARK-DN-62F930FC96F2B - [0:0]"},
	}
	got := newNetavarkRules(now, keep)
	if len(got) != 2 || got[0].rule != ":NETAVARK-DN-62F930FC96F2B - [0:0]" || got[1].tool != "ip6tables" {
		t.Errorf("new rules %v, want the two NETAVARK-DN chains", got)
	}
	// A host with none before: every netavark rule is the run's.
	if got := newNetavarkRules(now, nil); len(got) != len(now) {
		t.Errorf("with nothing before, %d of %d rules are new", len(got), len(now))
	}
}
