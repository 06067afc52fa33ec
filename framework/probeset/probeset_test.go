package probeset

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Output of Debian bookworm's nft 1.0.6 and ipset 7.17, captured from a
// network namespace holding a set made as istio-cni makes it (a table inet
// istio-ambient-nat with set istio-inpod-probes-v4 of type ipv4_addr, each
// element commented with its pod's UID; hash:ip with comments).
const (
	nftCommented = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"set": {"family": "inet", "name": "istio-inpod-probes-v4", "table": "istio-ambient-nat", "type": "ipv4_addr", "handle": 1, "comment": "UUID of the pods that are part of ambient mesh", "elem": [{"elem": {"val": "10.244.0.12", "comment": "3f0e0a4c-6b7e-4d1b-9a2e-0c1d2e3f4a5b"}}, {"elem": {"val": "10.244.0.13", "comment": "8d1c2b3a-1111-4222-8333-944455556666"}}]}}]}`
	nftPlain     = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"set": {"family": "inet", "name": "empty-v4", "table": "istio-ambient-nat", "type": "ipv4_addr", "handle": 4, "elem": ["10.0.0.1", "10.0.0.2"]}}]}`
	nftEmpty     = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"set": {"family": "inet", "name": "empty-v4", "table": "istio-ambient-nat", "type": "ipv4_addr", "handle": 4}}]}`
	ipsetSave    = `create istio-inpod-probes-v4 hash:ip family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x4dff1d4b
add istio-inpod-probes-v4 10.244.0.13 comment "8d1c2b3a-1111-4222-8333-944455556666"
add istio-inpod-probes-v4 10.244.0.12 comment "3f0e0a4c-6b7e-4d1b-9a2e-0c1d2e3f4a5b"
`
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func equal(a, b []netip.Addr) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestParseNftSet(t *testing.T) {
	for name, c := range map[string]struct {
		out  string
		want []netip.Addr
	}{
		"commented": {nftCommented, addrs("10.244.0.12", "10.244.0.13")},
		"plain":     {nftPlain, addrs("10.0.0.1", "10.0.0.2")},
		"empty":     {nftEmpty, nil},
	} {
		got, err := ParseNftSet([]byte(c.out))
		if err != nil || !equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, c.want)
		}
	}
	// Bad input is named: an interval element, a non-address, no set.
	for _, bad := range []string{
		strings.Replace(nftPlain, `"10.0.0.2"`, `{"prefix": {"addr": "10.0.0.0", "len": 24}}`, 1),
		strings.Replace(nftPlain, `"10.0.0.2"`, `"pod-b"`, 1),
		`{"nftables": [{"metainfo": {"version": "1.0.6"}}]}`,
		`Error: No such file or directory`,
	} {
		if _, err := ParseNftSet([]byte(bad)); err == nil {
			t.Errorf("ParseNftSet(%q) accepted", bad)
		}
	}
}

func TestParseIPSetSave(t *testing.T) {
	got, err := ParseIPSetSave(SetV4, ipsetSave)
	if err != nil || !equal(got, addrs("10.244.0.13", "10.244.0.12")) {
		t.Fatalf("%v, %v", got, err)
	}
	if got, err := ParseIPSetSave(SetV4, strings.SplitN(ipsetSave, "\n", 2)[0]+"\n"); err != nil || len(got) != 0 {
		t.Errorf("empty set: %v, %v", got, err)
	}
	if _, err := ParseIPSetSave(SetV6, ipsetSave); err == nil {
		t.Error("another set's output accepted")
	}
	if _, err := ParseIPSetSave(SetV4, strings.Replace(ipsetSave, "10.244.0.12", "pod-a", 1)); err == nil {
		t.Error("a non-address entry accepted")
	}
}

func ambientPod(ns, name, ip string, annotated bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	if annotated {
		p.Annotations = map[string]string{RedirectionAnnotation: RedirectionEnabled}
	}
	return p
}

// Positive control: every redirected pod's IP in the set, silence.
// Negative control: one entry removed, its pod named. Pods istio-cni did
// not redirect are not its business.
func TestCheck(t *testing.T) {
	s := Set{Backend: Nftables, IPs: map[netip.Addr]bool{}}
	ips, _ := ParseNftSet([]byte(nftCommented))
	for _, ip := range ips {
		s.IPs[ip] = true
	}
	pods := []corev1.Pod{
		ambientPod("ambient-l4", "echo-a", "10.244.0.12", true),
		ambientPod("ambient-l4", "echo-b", "10.244.0.13", true),
		ambientPod("none", "outside", "10.244.0.40", false),
	}
	if m := Check(pods, s); len(m) != 0 {
		t.Fatalf("all present, yet missing %v", m)
	}
	delete(s.IPs, netip.MustParseAddr("10.244.0.13"))
	m := Check(pods, s)
	if len(m) != 1 || m[0].Pod != "ambient-l4/echo-b" {
		t.Fatalf("one removed: %v", m)
	}
	err := Errors(m)
	for _, want := range []string{"pod ambient-l4/echo-b's IP 10.244.0.13 is not in istio-cni's host probe set", "nftables set inet istio-ambient-nat istio-inpod-probes-v4", "STRICT denies them"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// An IPv6 address is checked only when the set has its IPv6 half.
	v6 := ambientPod("ambient-l4", "echo-c", "fd00::12", true)
	if m := Check([]corev1.Pod{v6}, s); len(m) != 0 {
		t.Errorf("IPv6 without a v6 set: %v", m)
	}
	s.V6 = true
	if m := Check([]corev1.Pod{v6}, s); len(m) != 1 {
		t.Errorf("IPv6 with a v6 set: %v", m)
	}
}

// netnsRunner runs the tools in network namespace ns.
func netnsRunner(ns string) Runner {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return HostRunner(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
	}
}

// Read on the real tools, in a network namespace of the test's own (the
// host's tables are never touched): no set, then istio-cni's nftables set,
// then its ipset (iptables mode), then both.
func TestReadWithTheRealTools(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace of its own)")
	}
	for _, tool := range []string{"ip", "nft", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make local-deps)", tool)
		}
	}
	ctx := context.Background()
	ns := fmt.Sprintf("meshclaims-probeset-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	run := netnsRunner(ns)
	do := func(name string, args ...string) {
		t.Helper()
		if _, err := run(ctx, name, args...); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := Read(ctx, run); !errors.Is(err, ErrNoSet) {
		t.Fatalf("empty namespace: %v, want ErrNoSet", err)
	}

	do("nft", "add", "table", "inet", NftTable)
	if _, err := Read(ctx, run); !errors.Is(err, ErrNoSet) {
		t.Fatalf("table without the set: %v, want ErrNoSet", err)
	}
	do("nft", "add", "set", "inet", NftTable, SetV4, `{ type ipv4_addr ; comment "UUID of the pods that are part of ambient mesh" ; }`)
	do("nft", "add", "element", "inet", NftTable, SetV4, `{ 10.244.0.12 comment "3f0e0a4c-6b7e-4d1b-9a2e-0c1d2e3f4a5b" }`)
	do("nft", "add", "element", "inet", NftTable, SetV4, `{ 10.244.0.13 comment "8d1c2b3a-1111-4222-8333-944455556666" }`)
	s, err := Read(ctx, run)
	if err != nil || s.Backend != Nftables || s.V6 || len(s.IPs) != 2 || !s.IPs[netip.MustParseAddr("10.244.0.13")] {
		t.Fatalf("nftables set: %+v, %v", s, err)
	}
	pods := []corev1.Pod{ambientPod("ambient-l4", "echo-a", "10.244.0.12", true), ambientPod("ambient-l4", "echo-b", "10.244.0.13", true)}
	if m := Check(pods, s); len(m) != 0 {
		t.Fatalf("all present: %v", m)
	}
	// Negative control on the live set: remove one entry, the detector fires.
	do("nft", "delete", "element", "inet", NftTable, SetV4, "{ 10.244.0.13 }")
	if s, err = Read(ctx, run); err != nil {
		t.Fatal(err)
	}
	if m := Check(pods, s); len(m) != 1 || m[0].Pod != "ambient-l4/echo-b" {
		t.Fatalf("one removed from the nftables set: %v", m)
	}

	do("ipset", "create", SetV4, "hash:ip", "comment", "family", "inet")
	if _, err := Read(ctx, run); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("both sets: %v, want an error naming both", err)
	}
	do("nft", "delete", "table", "inet", NftTable)
	do("ipset", "add", SetV4, "10.244.0.12", "comment", "3f0e0a4c-6b7e-4d1b-9a2e-0c1d2e3f4a5b")
	s, err = Read(ctx, run)
	if err != nil || s.Backend != IPSet || len(s.IPs) != 1 {
		t.Fatalf("ipset: %+v, %v", s, err)
	}
	if m := Check(pods, s); len(m) != 1 || m[0].Pod != "ambient-l4/echo-b" || !strings.Contains(m[0].Error(), "ipset "+SetV4) {
		t.Fatalf("ipset lacking echo-b: %v", m)
	}
}

// Diagnose on a namespace's pods: silent when every redirected pod is in
// the set, the missing pod named when one is not, silent for a namespace
// istio-cni redirected nothing in (its set is not even read), and a set
// that cannot be read is reported as such.
func TestDiagnose(t *testing.T) {
	ctx := context.Background()
	a, b := ambientPod("ambient-l4", "echo-a", "10.244.0.12", true), ambientPod("ambient-l4", "echo-b", "10.244.0.13", true)
	plain := ambientPod("none", "echo", "10.244.0.20", false)
	cs := fake.NewClientset(&a, &b, &plain)
	full := func(context.Context) (Set, error) {
		ips, err := ParseNftSet([]byte(nftCommented))
		s := Set{Backend: Nftables, IPs: map[netip.Addr]bool{}}
		for _, ip := range ips {
			s.IPs[ip] = true
		}
		return s, err
	}
	if err := Diagnose(ctx, cs, "ambient-l4", full); err != nil {
		t.Errorf("all present: %v", err)
	}
	lacking := func(ctx context.Context) (Set, error) {
		s, err := full(ctx)
		delete(s.IPs, netip.MustParseAddr("10.244.0.12"))
		return s, err
	}
	if err := Diagnose(ctx, cs, "ambient-l4", lacking); err == nil || !strings.Contains(err.Error(), "pod ambient-l4/echo-a's IP 10.244.0.12 is not in istio-cni's host probe set") {
		t.Errorf("one missing: %v", err)
	}
	unreadable := func(context.Context) (Set, error) { return Set{}, ErrNoSet }
	if err := Diagnose(ctx, cs, "none", unreadable); err != nil {
		t.Errorf("namespace without redirected pods: %v", err)
	}
	if err := Diagnose(ctx, cs, "ambient-l4", unreadable); !errors.Is(err, ErrNoSet) || !strings.Contains(err.Error(), "2 pods of ambient-l4") {
		t.Errorf("unreadable set: %v", err)
	}
}
