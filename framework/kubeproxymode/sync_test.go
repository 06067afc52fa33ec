package kubeproxymode

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real kube-proxy's metrics: the IPv4 series is read (not the IPv6 one
// beside it), and the mean of the syncs between two readings follows.
func TestParseSyncTotalsOfARealKubeProxy(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "kube-proxy-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseSyncTotals(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join("testdata", "kube-proxy-metrics.txt"))
	if !strings.Contains(string(raw), SyncMetric+`_count{ip_family="IPv4"} `+strconv.FormatInt(got.Count, 10)) || got.Seconds <= 0 {
		t.Errorf("read %+v from:\n%s", got, raw)
	}
	later := SyncTotals{Count: got.Count + 4, Seconds: got.Seconds + 0.4}
	if n, mean := later.Since(got); n != 4 || mean != 100*time.Millisecond {
		t.Errorf("Since: %d syncs, mean %s; want 4, 100ms", n, mean)
	}
	if n, _ := got.Since(got); n != 0 {
		t.Errorf("no sync between equal readings: %d", n)
	}
	if _, err := ParseSyncTotals(strings.NewReader("# HELP other\nother_count 3\n")); err == nil {
		t.Error("a text without the histogram was read")
	}
}

// The IPv4 nat table's count of the real kube-proxy above, not the filter
// table's nor IPv6's beside it.
func TestParseNATRulesOfARealKubeProxy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "kube-proxy-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := ParseNATRules(strings.NewReader(string(raw)))
	if err != nil || !strings.Contains(string(raw), RulesMetric+`{ip_family="IPv4",table="nat"} `+strconv.FormatInt(n, 10)) || n <= 5 {
		t.Errorf("nat rules %d, %v", n, err)
	}
	if _, err := ParseNATRules(strings.NewReader(SyncMetric + "_count{ip_family=\"IPv4\"} 3\n")); err == nil {
		t.Error("a text without the gauge was read")
	}
}
