package kubeproxymode

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SyncMetric is the histogram kube-proxy keeps of its rule syncs
// (pkg/proxy/metrics: SyncProxyRulesLatency), one series per IP family.
const SyncMetric = "kubeproxy_sync_proxy_rules_duration_seconds"

// SyncTotals are a kube-proxy's rule syncs so far for one IP family: how
// many and how long they took together. The difference of two readings
// is what the syncs between them cost, which is what a change's time to
// reach the data path waits on.
type SyncTotals struct {
	Count   int64
	Seconds float64
}

// Since is the mean sync duration between an earlier reading and this one
// (0 when no sync ran between them).
func (t SyncTotals) Since(earlier SyncTotals) (syncs int64, mean time.Duration) {
	n := t.Count - earlier.Count
	if n <= 0 {
		return 0, 0
	}
	return n, time.Duration((t.Seconds - earlier.Seconds) / float64(n) * float64(time.Second))
}

// ParseSyncTotals reads the IPv4 series of SyncMetric's _count and _sum
// from kube-proxy's Prometheus text; a text without them is an error.
func ParseSyncTotals(text io.Reader) (SyncTotals, error) {
	var t SyncTotals
	var gotCount, gotSum bool
	sc := bufio.NewScanner(text)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.HasPrefix(name, SyncMetric+"_") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(labels, `ip_family="IPv4"`) {
			continue
		}
		switch name {
		case SyncMetric + "_count":
			n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return t, fmt.Errorf("%s: %q: %w", name, line, err)
			}
			t.Count, gotCount = int64(n), true
		case SyncMetric + "_sum":
			s, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return t, fmt.Errorf("%s: %q: %w", name, line, err)
			}
			t.Seconds, gotSum = s, true
		}
	}
	if err := sc.Err(); err != nil {
		return t, err
	}
	if !gotCount || !gotSum {
		return t, fmt.Errorf("no IPv4 %s_count and _sum in kube-proxy's metrics", SyncMetric)
	}
	return t, nil
}

// ReadSyncTotals reads SyncTotals from a kube-proxy metrics endpoint
// (http://ADDR/metrics, ADDR its metricsBindAddress).
func ReadSyncTotals(ctx context.Context, addr string) (SyncTotals, error) {
	text, err := fetchMetrics(ctx, addr)
	if err != nil {
		return SyncTotals{}, err
	}
	return ParseSyncTotals(strings.NewReader(text))
}

// RulesMetric is the gauge of the iptables rules kube-proxy owns, per
// table (pkg/proxy/metrics: IPTablesRulesTotal); HYBRID counted 110,296
// NAT rules for 10,000 Services.
const RulesMetric = "kubeproxy_sync_proxy_rules_iptables_total"

// ParseNATRules reads how many IPv4 nat-table rules kube-proxy owns.
func ParseNATRules(text io.Reader) (int64, error) {
	sc := bufio.NewScanner(text)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, RulesMetric+"{"), "} ")
		if !ok || !strings.HasPrefix(line, RulesMetric+"{") || !strings.Contains(labels, `ip_family="IPv4"`) || !strings.Contains(labels, `table="nat"`) {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", RulesMetric, line, err)
		}
		return int64(n), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no IPv4 nat %s in kube-proxy's metrics (iptables mode only)", RulesMetric)
}

// ReadNATRules is ParseNATRules of a kube-proxy metrics endpoint.
func ReadNATRules(ctx context.Context, addr string) (int64, error) {
	text, err := fetchMetrics(ctx, addr)
	if err != nil {
		return 0, err
	}
	return ParseNATRules(strings.NewReader(text))
}

func fetchMetrics(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("kube-proxy metrics at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("kube-proxy metrics at %s: %s", addr, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return string(b), err
}
