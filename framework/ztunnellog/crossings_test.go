package ztunnellog

import (
	"os"
	"strings"
	"testing"
)

func readLog(t *testing.T, name string) []Access {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A real single-node log (one ztunnel logged both its outbound lines and
// the one inbound HBONE line from 198.18.0.61): where the client's node is
// put decides the count; outbound lines, which both ends' ztunnels would
// log for one request, are never counted.
func TestCountCrossingsOnARealLog(t *testing.T) {
	entries := readLog(t, "ztunnel-1.30-fresh-client.log")
	byNode := map[string][]Access{"node-b": entries}
	const ns = "meshclaims-ambient-l4"
	crossed := CountCrossings(byNode, ns, func(ip string) string { return map[string]string{"198.18.0.61": "node-a"}[ip] })
	if crossed.Crossed[Hop{"node-a", "node-b"}] != 1 || crossed.Local != 0 || crossed.Total() != 1 {
		t.Fatalf("client on node-a, ztunnel on node-b: %+v", crossed)
	}
	s := crossed.String()
	if !strings.HasPrefix(s, "1 of 1 HBONE connection(s) crossed nodes (node-a -> node-b 1), 0 stayed on one node; e.g. on node-b: ") ||
		!strings.Contains(s, `direction="inbound"`) {
		t.Errorf("text: %s", s)
	}
	// Controls: the client on the ztunnel's own node is local; an address
	// no node claims is unplaced; another namespace counts nothing.
	local := CountCrossings(byNode, ns, func(string) string { return "node-b" })
	if len(local.Crossed) != 0 || local.Local != 1 || !strings.HasPrefix(local.String(), "0 of 1 HBONE connection(s) crossed nodes, 1 stayed on one node") {
		t.Errorf("same node: %+v %s", local, local.String())
	}
	if u := CountCrossings(byNode, ns, func(string) string { return "" }); u.Unplaced != 1 || !strings.Contains(u.String(), "1 from an address no node claims") {
		t.Errorf("unplaced: %+v", u)
	}
	if o := CountCrossings(byNode, "meshclaims-sidecar", func(string) string { return "node-a" }); o.Total() != 0 {
		t.Errorf("another namespace: %+v", o)
	}
}

// Real lines of two workers' ztunnels from the 3-node kind run of
// 2026-12-03 (docs/kind-on-podman.md), placed by the nodes'
// real pod CIDRs (meshclaims-worker 10.244.2.0/24, meshclaims-worker2
// 10.244.1.0/24): the worker's ztunnel accepted 3 tunnels from worker2's
// pooled client and 3 from its own node; worker2's accepted 3 from the
// worker's client and 1 from its own node. The outbound lines (the worker's
// client to worker2's echo) are the same requests seen from the other end
// and are not counted again.
func TestCountCrossingsOnKind(t *testing.T) {
	byNode := map[string][]Access{
		"meshclaims-worker":  readLog(t, "ztunnel-1.30-kind-worker.log"),
		"meshclaims-worker2": readLog(t, "ztunnel-1.30-kind-worker2.log"),
	}
	nodeOf := func(ip string) string {
		switch {
		case strings.HasPrefix(ip, "10.244.2."):
			return "meshclaims-worker"
		case strings.HasPrefix(ip, "10.244.1."):
			return "meshclaims-worker2"
		}
		return ""
	}
	c := CountCrossings(byNode, "meshclaims-ambient-l4", nodeOf)
	if c.Crossed[Hop{"meshclaims-worker2", "meshclaims-worker"}] != 3 || c.Crossed[Hop{"meshclaims-worker", "meshclaims-worker2"}] != 3 || c.Local != 4 || c.Unplaced != 0 {
		t.Fatalf("%+v", c)
	}
	if s := c.String(); !strings.HasPrefix(s, "6 of 10 HBONE connection(s) crossed nodes (meshclaims-worker -> meshclaims-worker2 3, meshclaims-worker2 -> meshclaims-worker 3), 4 stayed on one node; e.g. on meshclaims-worker2: ") {
		t.Errorf("text: %s", s)
	}
}
