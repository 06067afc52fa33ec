package ztunnellog

import (
	"os"
	"strings"
	"testing"
	"time"
)

// lines in the shape ztunnel 1.30 writes them (src/telemetry.rs and the real
// lines in testdata/: time, tab,
// level, tab, target, tab, message and fields): a latency load's two
// connections over tunnel :48438 before the policy, the measurement over
// the same tunnel after it, and a fresh client's tunnel :51000.
const sample = "2026-12-02T03:25:14.100000Z\tinfo\taccess\tconnection complete\tsrc.addr=198.18.0.32:48438 src.workload=\"fortio-client-6d5\" src.namespace=\"mc-ambient-l4\" src.identity=\"spiffe://cluster.local/ns/mc-ambient-l4/sa/default\" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.service=\"echo.mc-ambient-l4.svc.cluster.local\" dst.workload=\"echo-7f9\" dst.namespace=\"mc-ambient-l4\" dst.identity=\"spiffe://cluster.local/ns/mc-ambient-l4/sa/default\" direction=\"inbound\" bytes_sent=120 bytes_recv=98 duration=\"1200ms\"\n" +
	"2026-12-02T03:25:15.000000Z\tinfo\txds::client:xds{id=2}\treceived response type_url=\"type.googleapis.com/istio.workload.Address\" size=3\n" +
	"2026-12-02T03:25:20.500000Z\tinfo\taccess\tconnection complete\tsrc.addr=198.18.0.32:48438 src.workload=\"fortio-client-6d5\" src.namespace=\"mc-ambient-l4\" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.workload=\"echo-7f9\" dst.namespace=\"mc-ambient-l4\" direction=\"inbound\" bytes_sent=120 bytes_recv=98 duration=\"2ms\"\n" +
	"2026-12-02T03:25:31.010000Z\tinfo\taccess\tconnection complete\tsrc.addr=198.18.0.32:48438 src.workload=\"fortio-client-6d5\" src.namespace=\"mc-ambient-l4\" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.workload=\"echo-7f9\" dst.namespace=\"mc-ambient-l4\" direction=\"inbound\" bytes_sent=120 bytes_recv=98 duration=\"3ms\"\n" +
	"2026-12-02T03:25:40.000000Z\tinfo\taccess\tconnection complete\tsrc.addr=198.18.0.40:51000 src.workload=\"fortio-client-fresh\" src.namespace=\"mc-ambient-l4\" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.workload=\"echo-7f9\" dst.namespace=\"mc-ambient-l4\" direction=\"inbound\" bytes_sent=120 bytes_recv=98 duration=\"4ms\"\n" +
	"2026-12-02T03:25:41.000000Z\terror\taccess\tconnection complete\tsrc.addr=198.18.0.41:40100 src.workload=\"fortio-client-fresh2\" src.namespace=\"mc-ambient-l4\" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.workload=\"echo-7f9\" dst.namespace=\"mc-ambient-l4\" direction=\"outbound\" bytes_sent=0 bytes_recv=0 duration=\"1001ms\" error=\"io error: Connection refused (os error 111)\"\n"

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, "2026-12-02T"+s+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	got, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("got %d access lines, want 5 (the xds line is not one)", len(got))
	}
	a := got[0]
	if a.Src != "198.18.0.32:48438" || a.Dst != "198.18.0.26:15008" || a.HBONE != "198.18.0.26:8080" || a.Direction != "inbound" ||
		a.SrcWorkload != "fortio-client-6d5" || a.DstNamespace != "mc-ambient-l4" || a.Duration != 1200*time.Millisecond {
		t.Errorf("first line read as %+v", a)
	}
	if !a.Start().Equal(at("03:25:12.9")) {
		t.Errorf("start %s, want end less duration", a.Start())
	}
	if e := got[4]; e.Level != "error" || e.Error != "io error: Connection refused (os error 111)" || e.Direction != "outbound" {
		t.Errorf("error line read as %+v", e)
	}
}

func TestParseRefusesAnAccessLineItCannotRead(t *testing.T) {
	_, err := Parse("2026-12-02T03:25:14Z\tinfo\taccess\tconnection complete dst.addr=1.2.3.4:15008\n")
	if err == nil || !strings.Contains(err.Error(), "src.addr") {
		t.Fatalf("err = %v, want one naming the missing src.addr", err)
	}
	if _, err := Parse("yesterday\tinfo\taccess\tconnection complete\tsrc.addr=a:1 dst.addr=b:2 direction=\"inbound\"\n"); err == nil {
		t.Fatal("a line without a time was read")
	}
}

// The detector fires on the case: the measured connection rode a
// tunnel whose first use precedes the policy.
func TestCarryingFlagsATunnelOpenedBeforeThePolicy(t *testing.T) {
	all, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	c := Carrying(all, "198.18.0.32", at("03:25:30"), at("03:25:25"))
	if len(c.Used) != 1 || len(c.Stale) != 1 || c.Stale[0].Src != "198.18.0.32:48438" || c.Stale[0].Streams != 3 {
		t.Fatalf("Carrying = %+v, want the one pooled tunnel, stale, with its 3 connections", c)
	}
	if !c.Stale[0].FirstStart.Equal(at("03:25:12.9")) {
		t.Errorf("first use %s", c.Stale[0].FirstStart)
	}
}

// ... and stays quiet for a fresh client's tunnel, first used after it.
func TestCarryingAcceptsATunnelOpenedAfterThePolicy(t *testing.T) {
	all, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	c := Carrying(all, "198.18.0.40", at("03:25:35"), at("03:25:25"))
	if len(c.Used) != 1 || len(c.Stale) != 0 {
		t.Fatalf("Carrying = %+v, want one fresh tunnel and nothing stale", c)
	}
	// Outbound lines (the client's own ztunnel) are not the tunnel's view.
	if c := Carrying(all, "198.18.0.41", at("03:25:35"), at("03:25:25")); len(c.Used) != 0 {
		t.Fatalf("an outbound line was counted as a tunnel: %+v", c)
	}
}

// Lines of a real run (ztunnel of istio/ztunnel release-1.30, read through
// the kubelet's log API with timestamps): a fresh client's probe, logged by
// its ztunnel as outbound (src.addr the app's socket) and by echo's as
// inbound (src.addr the tunnel's own port).
func TestParseRealLines(t *testing.T) {
	raw, err := os.ReadFile("testdata/ztunnel-1.30-fresh-client.log")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d access lines, want 2", len(got))
	}
	out, in := got[0], got[1]
	if out.Direction != "outbound" || out.Src != "198.18.0.61:40100" || out.Duration != 7*time.Millisecond {
		t.Errorf("outbound line read as %+v", out)
	}
	if in.Direction != "inbound" || in.Src != "198.18.0.61:37426" || in.Dst != "198.18.0.45:15008" || in.HBONE != "198.18.0.45:8080" ||
		in.SrcWorkload != "fortio-client-control-1-85f59b84b4-76q67" || !in.End.Equal(time.Date(2026, 12, 2, 8, 16, 23, 866647000, time.UTC)) {
		t.Errorf("inbound line read as %+v", in)
	}
	c := Carrying(got, "198.18.0.61", time.Date(2026, 12, 2, 8, 16, 23, 0, time.UTC), time.Date(2026, 12, 2, 8, 16, 20, 0, time.UTC))
	if len(c.Used) != 1 || c.Used[0].Src != "198.18.0.61:37426" || len(c.Stale) != 0 {
		t.Errorf("Carrying = %+v, want the one tunnel, first used after the client was made", c)
	}
	// The same tunnel, had the policy come after its first use: stale.
	if c := Carrying(got, "198.18.0.61", time.Date(2026, 12, 2, 8, 16, 23, 0, time.UTC), time.Date(2026, 12, 2, 8, 16, 24, 0, time.UTC)); len(c.Stale) != 1 {
		t.Errorf("a tunnel first used before the policy is not stale: %+v", c)
	}
}

// ztunnel's own lines from the ambient-l4 attempt on the 3-node kind
// cluster (2026-12-02): the kubelet's probes from the node's bridge
// address, not SNATed, denied by the mesh's STRICT policy. The negative
// control is the local provider's log, whose inbound connections passed.
func TestDeniedInbound(t *testing.T) {
	raw, err := os.ReadFile("testdata/ztunnel-1.30-kind-probe-denied.log")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := DeniedInbound(entries, "10.244.2.13")
	if len(got) != 1 || got[0].SrcIP() != "10.244.2.1" || !strings.Contains(got[0].Error, "istio_converted_static_strict") {
		t.Fatalf("denied inbound to 10.244.2.13: %+v", got)
	}
	if n := len(DeniedInbound(entries, "10.244.2.99")); n != 0 {
		t.Errorf("%d denials for a pod with none", n)
	}
	raw, err = os.ReadFile("testdata/ztunnel-1.30-fresh-client.log")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, a := range ok {
		if a.Direction == "inbound" {
			checked++
			if d := DeniedInbound(ok, a.Dst[:strings.LastIndex(a.Dst, ":")]); len(d) != 0 {
				t.Errorf("a passed connection read as denied: %s", d[0].Line)
			}
		}
	}
	if checked == 0 {
		t.Fatal("the negative control's log has no inbound connection: it proves nothing")
	}
}
