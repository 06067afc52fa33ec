package proxydump

import "testing"

func TestEnvoyStatShapes(t *testing.T) {
	const name = "cluster.outbound|8080||order.ns.svc.cluster.local;.upstream_rq_retry"
	// Not counted (stats matcher drops it): absent, not zero.
	if _, found, err := EnvoyStat("cluster.xds-grpc;.upstream_rq_retry: 0\n", name); found || err != nil {
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
