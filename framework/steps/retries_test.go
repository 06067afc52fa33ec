package steps

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxydump"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// sidecarStats is order-client's sidecar /stats?filter=upstream_rq_retry as
// Envoy's text renderer writes it ("name: value" lines, sorted): the
// per-cluster counter kept by the retry stats override, and Istio's default
// cluster.xds-grpc family with its neighbours of the same prefix. Every
// cluster's stat name ends in pilot's ";" delimiter (its alt_stat_name), as
// the local cluster's sidecars print it ("cluster.xds-grpc;.upstream_rq_retry: 0").
const sidecarStats = `cluster.outbound|8080||collector.meshclaims-sidecar.svc.cluster.local;.upstream_rq_retry: 0
cluster.outbound|8080||order.meshclaims-sidecar.svc.cluster.local;.upstream_rq_retry: 17
cluster.xds-grpc;.upstream_rq_retry: 0
cluster.xds-grpc;.upstream_rq_retry_backoff_exponential: 0
cluster.xds-grpc;.upstream_rq_retry_backoff_ratelimited: 0
cluster.xds-grpc;.upstream_rq_retry_limit_exceeded: 0
cluster.xds-grpc;.upstream_rq_retry_overflow: 0
cluster.xds-grpc;.upstream_rq_retry_success: 0
`

// waypointStats: the waypoint's HTTP VIP cluster for order, next to its
// subset and tcp variants that the retry policy does not route through
// (cluster_waypoint.go delimits their stat names the same way).
const waypointStats = `cluster.inbound-vip|8080|http/v1|order.meshclaims-ambient-l7.svc.cluster.local;.upstream_rq_retry: 2
cluster.inbound-vip|8080|http|order.meshclaims-ambient-l7.svc.cluster.local;.upstream_rq_retry: 5
cluster.inbound-vip|8080|tcp|order.meshclaims-ambient-l7.svc.cluster.local;.upstream_rq_retry: 0
cluster.xds-grpc;.upstream_rq_retry: 1
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
		n, found, err := proxydump.EnvoyStat(c.text, p.Counter())
		if err != nil || !found || n != c.want {
			t.Errorf("%s %s: %d found=%v %v, want %d", c.m, p.Counter(), n, found, err, c.want)
		}
	}
	// Negative control: the name without pilot's delimiter, which a
	// reader of Envoy's own docs would expect, is absent from a real dump.
	if _, found, _ := proxydump.EnvoyStat(sidecarStats, "cluster.outbound|8080||order.meshclaims-sidecar.svc.cluster.local.upstream_rq_retry"); found {
		t.Error("an undelimited cluster stat name matched Istio's delimited names")
	}
	// The sidecar's counter is not the waypoint's, nor another namespace's.
	p, _ := RetryProxyOf(mode.Sidecar, mode.Sidecar.Namespace())
	if _, found, _ := proxydump.EnvoyStat(waypointStats, p.Counter()); found {
		t.Error("sidecar counter found in the waypoint's stats")
	}
	other, _ := RetryProxyOf(mode.Sidecar, "meshclaims-other")
	if _, found, _ := proxydump.EnvoyStat(sidecarStats, other.Counter()); found {
		t.Error("another namespace's order counter found")
	}
	if _, err := RetryProxyOf(mode.AmbientL4, mode.AmbientL4.Namespace()); err == nil || !strings.Contains(err.Error(), "accepted: sidecar, ambient-l7") {
		t.Errorf("ambient-l4 has no retrying Envoy: %v", err)
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
	c := claimstest.Claim(t, "retry.no-duplicates")
	p, _ := RetryProxyOf(mode.Sidecar, mode.Sidecar.Namespace())
	dupes := verdict.Measurement{Count: verdict.Int64(0), Total: verdict.Int64(9135)}
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

// retry.fired on T2's measurement as OrdersDuringRollout records it (the
// duplicate count, Extra sent / client_failures / failures_<cause> and,
// through WithRetries, proxy_retries): failures of sent become the judged
// rate; zero retries contradicts the claim (not reproduced even at GUIDE's
// own failure count: the negative control); a mode whose proxy was not read
// stays unmet.
func TestRetriesFired(t *testing.T) {
	c := claimstest.Claim(t, "retry.fired")
	p, _ := RetryProxyOf(mode.AmbientL7, mode.AmbientL7.Namespace())
	// A fresh reading each time: WithRetries adds to the Extra it is given.
	t2 := func() verdict.Measurement {
		return verdict.Measurement{Count: verdict.Int64(0), Total: verdict.Int64(7229),
			Extra: map[string]float64{"cycles": 12, "sent": 7229, "client_failures": 21, "failures_timeout": 14, "failures_http-503": 7, "collector_ids": 7208}}
	}
	pod := "waypoint-7d9c6b8f4-x2q7r"
	some, err := WithRetries(t2(), p, map[string]uint64{pod: 2}, map[string]uint64{pod: 311})
	if err != nil {
		t.Fatal(err)
	}
	got := RetriesFired(some)
	if *got.Count != 21 || *got.Total != 7229 || got.Extra["proxy_retries"] != 309 || got.Extra["duplicates"] != 0 || got.Contradicts != "" || got.Unmet != "" {
		t.Fatalf("309 retries: %+v", got)
	}
	if v := verdict.Judge(c, mode.AmbientL7, got); v.Result != verdict.Reproduced {
		t.Errorf("GUIDE's 21 of 7,229 with 309 retries: %s (%s)", v.Result, v.Reason)
	}
	none, err := WithRetries(t2(), p, map[string]uint64{pod: 5}, map[string]uint64{pod: 5})
	if err != nil {
		t.Fatal(err)
	}
	got = RetriesFired(none)
	if got.Unmet != "" || !strings.Contains(got.Contradicts, "counted 0") || !strings.Contains(got.Contradicts, p.Cluster) {
		t.Fatalf("zero retries: %+v", got)
	}
	if v := verdict.Judge(c, mode.AmbientL7, got); v.Result != verdict.NotReproduced {
		t.Errorf("zero retries judged %s (%s)", v.Result, v.Reason)
	}
	// The duplicate claim is only inconclusive on the same reading.
	if v := verdict.Judge(claimstest.Claim(t, "retry.no-duplicates"), mode.AmbientL7, none); v.Result != verdict.Inconclusive {
		t.Errorf("duplicates with zero retries: %s", v.Result)
	}
	// No retrying proxy (OrdersDuringRollout in a mode without one).
	_, noProxy := RetryProxyOf(mode.AmbientL4, mode.AmbientL4.Namespace())
	unread := t2()
	unread.Unmet = "retries: " + noProxy.Error()
	if got := RetriesFired(unread); got.Unmet != unread.Unmet || got.Contradicts != "" {
		t.Errorf("no proxy: %+v", got)
	}
}
