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
