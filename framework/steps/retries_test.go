package steps

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// sidecarStats is order-client's sidecar /stats?filter=upstream_rq_retry as
// Envoy's text renderer writes it ("name: value" lines, sorted): the
// per-cluster counter kept by the retry stats override, and Istio's default
// cluster.xds-grpc family with its neighbours of the same prefix.
const sidecarStats = `cluster.outbound|8080||collector.meshclaims-sidecar.svc.cluster.local.upstream_rq_retry: 0
cluster.outbound|8080||order.meshclaims-sidecar.svc.cluster.local.upstream_rq_retry: 17
cluster.xds-grpc.upstream_rq_retry: 0
cluster.xds-grpc.upstream_rq_retry_backoff_exponential: 0
cluster.xds-grpc.upstream_rq_retry_backoff_ratelimited: 0
cluster.xds-grpc.upstream_rq_retry_limit_exceeded: 0
cluster.xds-grpc.upstream_rq_retry_overflow: 0
cluster.xds-grpc.upstream_rq_retry_success: 0
`

// waypointStats: the waypoint's HTTP VIP cluster for order, next to its
// subset and tcp variants that the retry policy does not route through.
const waypointStats = `cluster.inbound-vip|8080|http/v1|order.meshclaims-ambient-l7.svc.cluster.local.upstream_rq_retry: 2
cluster.inbound-vip|8080|http|order.meshclaims-ambient-l7.svc.cluster.local.upstream_rq_retry: 5
cluster.inbound-vip|8080|tcp|order.meshclaims-ambient-l7.svc.cluster.local.upstream_rq_retry: 0
cluster.xds-grpc.upstream_rq_retry: 1
`

func TestRetryCounterOnEachProxy(t *testing.T) {
	cases := []struct {
		m    mode.Mode
		text string
		want uint64
	}{
		{mode.Sidecar, sidecarStats, 17},
		{mode.AmbientL7, waypointStats, 5},
	}
	for _, c := range cases {
		p, err := RetryProxyOf(c.m, c.m.Namespace())
		if err != nil {
			t.Fatal(err)
		}
		n, found, err := EnvoyStat(c.text, p.Counter())
		if err != nil || !found || n != c.want {
			t.Errorf("%s %s: %d found=%v %v, want %d", c.m, p.Counter(), n, found, err, c.want)
		}
	}
	// The sidecar's counter is not the waypoint's, nor another namespace's.
	p, _ := RetryProxyOf(mode.Sidecar, mode.Sidecar.Namespace())
	if _, found, _ := EnvoyStat(waypointStats, p.Counter()); found {
		t.Error("sidecar counter found in the waypoint's stats")
	}
	other, _ := RetryProxyOf(mode.Sidecar, "meshclaims-other")
	if _, found, _ := EnvoyStat(sidecarStats, other.Counter()); found {
		t.Error("another namespace's order counter found")
	}
	if _, err := RetryProxyOf(mode.AmbientL4, mode.AmbientL4.Namespace()); err == nil || !strings.Contains(err.Error(), "accepted: sidecar, ambient-l7") {
		t.Errorf("ambient-l4 has no retrying Envoy: %v", err)
	}
}

func TestEnvoyStatShapes(t *testing.T) {
	const name = "cluster.outbound|8080||order.ns.svc.cluster.local.upstream_rq_retry"
	// Not counted (stats matcher drops it): absent, not zero.
	if _, found, err := EnvoyStat("cluster.xds-grpc.upstream_rq_retry: 0\n", name); found || err != nil {
		t.Errorf("absent counter: found=%v %v", found, err)
	}
	// A prefix of a longer stat is not the stat.
	if _, found, _ := EnvoyStat(name+"_success: 4\n", name); found {
		t.Error("upstream_rq_retry_success taken for upstream_rq_retry")
	}
	// Histogram lines have no single value; one named like the counter is an error, not 0.
	if _, _, err := EnvoyStat(name+": P0(nan,0) P25(nan,0) P50(nan,0)\n", name); err == nil {
		t.Error("a histogram value read as a counter")
	}
	// CRLF line ends still parse.
	if n, found, err := EnvoyStat("x: 1\r\n"+name+": 3\r\n", name); n != 3 || !found || err != nil {
		t.Errorf("CRLF: %d %v %v", n, found, err)
	}
}

func TestRetryDelta(t *testing.T) {
	d, lost, err := RetryDelta(map[string]uint64{"a": 3}, map[string]uint64{"a": 10, "b": 2})
	if err != nil || d != 9 || len(lost) != 0 {
		t.Fatalf("delta %d lost %v %v, want 9", d, lost, err)
	}
	d, lost, err = RetryDelta(map[string]uint64{"a": 3, "gone": 1}, map[string]uint64{"a": 3})
	if err != nil || d != 0 || len(lost) != 1 || lost[0] != "gone" {
		t.Fatalf("delta %d lost %v %v", d, lost, err)
	}
	if _, _, err := RetryDelta(map[string]uint64{"a": 30}, map[string]uint64{"a": 2}); err == nil {
		t.Fatal("a counter that went down (restarted proxy) was accepted")
	}
}

// Zero retries makes the duplicate count inconclusive (Unmet); retries
// leave it to be judged.
func TestNoRetries(t *testing.T) {
	p, _ := RetryProxyOf(mode.AmbientL7, mode.AmbientL7.Namespace())
	if u := NoRetries(p, 0); !strings.Contains(u, "counted 0") || !strings.Contains(u, p.Cluster) {
		t.Errorf("zero retries: %q", u)
	}
	if u := NoRetries(p, 4); u != "" {
		t.Errorf("4 retries unmet: %q", u)
	}
}

// Today's verdict on GUIDE's sidecar numbers is "reproduced" whether or not
// a retry happened. With the counters read around the run, no retry makes it
// inconclusive; retries leave it judged (reproduced with 0 of 9,135); a
// restarted proxy is a broken measurement.
func TestDuplicatesJudgedOnlyWithRetries(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := claims.Load(filepath.Join(root, "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := reg.MustGet("retry.no-duplicates")
	p, _ := RetryProxyOf(mode.Sidecar, mode.Sidecar.Namespace())
	dupes := verdict.Measured{Count: verdict.Int64(0), Total: verdict.Int64(9135)}
	pod := "order-client-6c7d8f9b5-k2m4p"
	if v := verdict.Judge(c, mode.Sidecar, dupes); v.Result != verdict.Reproduced {
		t.Fatalf("baseline: today's judgement %s", v.Result)
	}
	none, err := WithRetries(dupes, p, map[string]uint64{pod: 0}, map[string]uint64{pod: 0})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.Sidecar, none); v.Result != verdict.Inconclusive || !strings.Contains(v.Reason, "counted 0") {
		t.Errorf("no retries: %s (%s)", v.Result, v.Reason)
	}
	some, err := WithRetries(dupes, p, map[string]uint64{pod: 0}, map[string]uint64{pod: 23})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.Sidecar, some); v.Result != verdict.Reproduced || some.Extra["proxy_retries"] != 23 {
		t.Errorf("23 retries: %s (%s), extra %v", v.Result, v.Reason, some.Extra)
	}
	if _, err := WithRetries(dupes, p, map[string]uint64{pod: 23}, map[string]uint64{pod: 1}); err == nil {
		t.Error("a counter that went down was judged")
	}
}
