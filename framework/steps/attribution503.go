package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/envoylog"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// NoUpstream is the category of a 503 the proxy answered without choosing
// an upstream host (UH no healthy upstream, NR no route).
const NoUpstream = "no-upstream"

// Attribute503s places each 503 the client's sidecar logged for echo's
// cluster (upstream cluster outbound|<port>||<echoHost>) during the load
// [from, to] on the pod timeline: the upstream host's pod was terminating,
// gone, or live when the 503 came back (the request's start plus its
// duration); a 503 without an upstream host is no-upstream, one whose host
// no pod of the timeline had is unattributed, and so are the 503s fortio
// counted (fortio503) that the log lacks (lines lost). Response flags and
// code details are counted beside them (Extra flag_<F>, details_<d>).
func Attribute503s(entries []envoylog.Entry, tl podtimeline.Timeline, echoHost string, from, to time.Time, fortio503 int64) verdict.Measurement {
	m := verdict.Measurement{Attribution: map[string]int64{}, Extra: map[string]float64{}}
	var logged int64
	for _, e := range entries {
		if e.Code != http.StatusServiceUnavailable || !strings.HasSuffix(e.UpstreamCluster, "||"+echoHost) ||
			e.Start.Before(from) || e.Start.After(to) {
			continue
		}
		logged++
		for _, f := range e.Flags {
			m.Extra["flag_"+f]++
		}
		if len(e.Flags) == 0 {
			m.Extra["flag_none"]++ // answered 503 by the upstream itself (via_upstream)
		}
		m.Extra["details_"+e.Details]++
		cat := NoUpstream
		if e.UpstreamHost != "" {
			ip, _, err := net.SplitHostPort(e.UpstreamHost)
			if err != nil {
				ip = e.UpstreamHost
			}
			cat = tl.At(ip, e.Start.Add(e.Duration))
			if cat == podtimeline.Unknown {
				cat = claims.Unattributed
			}
		}
		m.Attribution[cat]++
	}
	m.Extra["access_log_503"] = float64(logged)
	m.Extra["fortio_503"] = float64(fortio503)
	if missing := fortio503 - logged; missing > 0 {
		m.Attribution[claims.Unattributed] += missing
	}
	for k, v := range m.Attribution {
		if v == 0 {
			delete(m.Attribution, k)
		}
	}
	m.Detail = fmt.Sprintf("%d 503s in the client's access log (fortio counted %d); upstream host's pod: %s; flags %s",
		logged, fortio503, countsText(m.Attribution), flagsText(m.Extra))
	return m
}

// RolloutAccessLog is rollout.503-attribution's run: GUIDE T1 (the claim's
// setup, as rollout.baseline's) in a run of its own, since the access log
// it needs is on only here: the client's sidecar logs its outbound requests
// (fixtures.ClientAccessLog, deleted when the spec ends; its config dump
// read until the file access log is there, and after the delete until it is
// gone), shown working by probe requests that must appear in the log
// before the load; echo's pods
// are watched throughout; afterwards each 503 the sidecar logged for echo
// is placed on the pod timeline (Attribute503s).
func RolloutAccessLog(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	mesh, err := ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	m, ns := r.Mode, r.Namespace()
	s, err := rolloutSpec(r, m)
	if err != nil {
		return verdict.Measurement{}, err
	}
	tel := fixtures.ClientAccessLog(Target(r))
	// Registered before Apply's own undo, so it runs after the delete: the
	// next spec starts only once the client's sidecar has dropped the log
	// (a listener update under its load would be measured).
	r.Defer(func(ctx context.Context) error { return AwaitRemoved(ctx, r, tel) })
	if err := ApplyAndAwait(ctx, r, tel); err != nil {
		return verdict.Measurement{}, err
	}
	c := InMesh(r)
	pod, err := mesh.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return verdict.Measurement{}, err
	}
	proxyLog := load.PodLogs{Client: mesh.Kube.Client, Namespace: ns, Pod: pod.Name, Container: ProxyContainer}
	echoHost := fmt.Sprintf("%s.%s.svc.cluster.local", fixtures.EchoName, ns)
	// The positive control: requests made now appear in the sidecar's
	// access log, in Istio's format, for echo's cluster.
	probes := 0
	w, err := converge.Until(ctx, pushPolicy(r), "the client's sidecar to log its requests to echo (access log probes)", func(ctx context.Context) (bool, string, error) {
		probes++
		marker := fmt.Sprintf("meshclaims-accesslog-probe=%d", probes)
		start := time.Now()
		// A probe is part of this wait (recorded with AddWait below), not a
		// measurement load: how many it takes is what the wait finds out,
		// so the plan (spec.Def.Loads) cannot list them and they are not
		// recorded among the spec's loads.
		if _, err := runLoad(ctx, r, c, fmt.Sprintf("accesslog-probe-%d", probes), load.Spec{URL: EchoURLOf(m) + "?" + marker, QPS: 4, Connections: 1, Duration: time.Second, AllowInitialErrors: true}, nil); err != nil {
			return false, "", err
		}
		lw, err := converge.Until(ctx, converge.Policy{Poll: r.Env.Config.Timeouts.ConvergePoll, Times: 1, Limit: r.Env.Config.Timeouts.LogFlush}, "probe "+marker+" in the access log", func(ctx context.Context) (bool, string, error) {
			entries, err := accessLog(ctx, proxyLog, start, time.Now())
			if err != nil {
				return false, "", err
			}
			for _, e := range entries {
				if strings.Contains(e.Path, marker) && strings.HasSuffix(e.UpstreamCluster, "||"+echoHost) {
					return true, fmt.Sprintf("%s %s -> %s (%d)", e.Method, e.Path, e.UpstreamHost, e.Code), nil
				}
			}
			return false, fmt.Sprintf("%d access log lines, none for %s", len(entries), marker), nil
		})
		return err == nil, lw.Seen, nil
	})
	r.AddWait(w)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("the access log Telemetry did not take effect on %s/%s: %w", ns, pod.Name, err)
	}
	if err := Quiesce(ctx, r, m); err != nil {
		return verdict.Measurement{}, err
	}
	if err := mesh.Kube.CheckWrite(ctx); err != nil {
		return verdict.Measurement{}, err
	}
	rec, err := podtimeline.Watch(ctx, mesh.Kube.Client, ns, fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return verdict.Measurement{}, err
	}
	driver, err := NewDeploymentDriver(mesh, ns, fixtures.EchoName)
	if err != nil {
		_, _ = rec.Stop()
		return verdict.Measurement{}, err
	}
	r.SetSetup("%s, restart loop with %s limit; the client's sidecar logging its outbound requests (Telemetry %s, provider %s), echo's pods watched",
		DescribeLoad(r, s), r.Env.Config.Timeouts.RolloutComplete, fixtures.ClientAccessLogName, fixtures.AccessLogProvider)
	res, err := underLoad(ctx, r, c, accessLogName(m), s, driver)
	tl, werr := rec.Stop()
	if err != nil {
		return verdict.Measurement{}, err
	}
	if werr != nil {
		return verdict.Measurement{}, fmt.Errorf("the pod timeline is incomplete: %w", werr)
	}
	from, to := res.Load.Start, res.Load.End
	// The load's last requests reach the log within Envoy's flush interval
	// (pilot-agent starts it with --file-flush-interval-msec 1000, istio
	// pkg/envoy/proxy.go) and the kubelet's: wait for a line stamped at the
	// end of the load.
	var entries []envoylog.Entry
	lw, err := converge.Until(ctx, converge.Policy{Poll: r.Env.Config.Timeouts.ConvergePoll, Times: 1, Limit: r.Env.Config.Timeouts.LogFlush}, "the load's last requests in the access log", func(ctx context.Context) (bool, string, error) {
		es, err := accessLog(ctx, proxyLog, from, time.Now())
		if err != nil {
			return false, "", err
		}
		entries = es
		var last time.Time
		for _, e := range es {
			if e.Start.After(last) {
				last = e.Start
			}
		}
		return !last.Before(to.Add(-2 * time.Second)), fmt.Sprintf("%d lines, last at %s", len(es), last.Format(time.RFC3339Nano)), nil
	})
	r.AddWait(lw)
	if err != nil {
		r.Logf("access log: %v (the 503s it lacks are counted unattributed)", err)
	}
	got := Attribute503s(entries, tl, echoHost, from.Add(-time.Second), to.Add(time.Second), res.Count503())
	got.Total, got.Count, got.NoResponse = verdict.Int64(res.Requests()), verdict.Int64(res.Count503()), verdict.Int64(res.Load.SocketErrors())
	got.Extra["cycles"] = float64(len(res.Cycles))
	got.Extra["pods_seen"] = float64(len(tl.Pods))
	if b, err := json.Marshal(struct {
		Pods []podtimeline.Pod
		Only []envoylog.Entry `json:"503s"`
	}{tl.Pods, only503(entries, echoHost)}); err == nil {
		if err := r.SaveRaw("rollout-"+string(m)+"-503-attribution", b, nil); err != nil {
			return verdict.Measurement{}, err
		}
	}
	r.Logf("503 attribution: %s", got.Detail)
	return got, nil
}

// accessLog reads and parses the proxy's access log lines in [since, until];
// a line in the format but broken is an error.
func accessLog(ctx context.Context, src load.PodLogs, since, until time.Time) ([]envoylog.Entry, error) {
	text, err := src.Logs(ctx, since, until)
	if err != nil {
		return nil, err
	}
	var out []envoylog.Entry
	for line := range strings.SplitSeq(text, "\n") {
		e, ok, err := envoylog.Parse(line)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func only503(es []envoylog.Entry, echoHost string) []envoylog.Entry {
	var out []envoylog.Entry
	for _, e := range es {
		if e.Code == http.StatusServiceUnavailable && strings.HasSuffix(e.UpstreamCluster, "||"+echoHost) {
			out = append(out, e)
		}
	}
	return out
}

func countsText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func flagsText(extra map[string]float64) string {
	var parts []string
	for k, v := range extra {
		if f, ok := strings.CutPrefix(k, "flag_"); ok {
			parts = append(parts, fmt.Sprintf("%s %g", f, v))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func accessLogName(m mode.Mode) string { return "rollout-" + string(m) + "-accesslog" }

// AccessLogLoads declares RolloutAccessLog's T1 run: its own, since the
// client's access log is on for it alone.
func AccessLogLoads(r *spec.Run) ([]loadplan.Load, error) {
	s, err := rolloutSpec(r, r.Mode)
	if err != nil {
		return nil, err
	}
	l := Declared(r.Mode, accessLogName(r.Mode), s)
	l.Restarts = true
	return []loadplan.Load{l}, nil
}
