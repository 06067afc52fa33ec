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
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// AccessLogOn says whether the T1 run in mode m with hardening h has the
// client sidecar's access log on: the sidecar baseline run, the one run
// rollout.503-attribution reads with rollout.baseline,
// rollout.no-response-cause and rollout.l7-vs-sidecar (RolloutLoad), so
// that it is never run twice. Only sidecar mode has a client sidecar (and
// 503-attribution only that mode); no hardened run has the log on.
func AccessLogOn(m mode.Mode, h fixtures.Hardening) bool {
	return m == mode.Sidecar && !h.Any()
}

// AccessLogCapture is what the T1 run with the access log on
// (AccessLogOn) kept for rollout.503-attribution before the log was turned
// off again: the 503s the client's sidecar logged for echo's cluster
// during the load, echo's pod timeline over it, and the load's window.
type AccessLogCapture struct {
	EchoHost string
	From, To time.Time // the load's, on the engine's clock
	// Echo503s are the access log's 503 lines for echo's cluster (only503)
	// from the load's start on; Lines counts every line read.
	Echo503s []envoylog.Entry
	Lines    int
	Timeline podtimeline.Timeline
	// Incomplete says why the log may lack the load's last lines (the
	// flush wait's error): the 503s it lacks are counted unattributed.
	Incomplete string
	// Err says why there is no attribution (the log's probes never
	// appeared, the pod watch failed): rollout.503-attribution fails with
	// it, while the run's other readers keep their measurement, which the
	// log's state does not touch.
	Err error
}

// accessLogRun is the client's access log on for one T1 run in mode m:
// the Telemetry, the sidecar's log and echo's pod watch.
type accessLogRun struct {
	r        *spec.Run
	proxyLog load.PodLogs
	// followed is the sidecar's log followed from the load's start: at
	// GUIDE's scale the log passes the kubelet's rotation size, and a read
	// after the load would see only the last file (load.FollowedLog).
	followed *load.FollowedLog
	watch    *podtimeline.Recorder
	capture  *AccessLogCapture
	// remove deletes the Telemetry and waits until the sidecar has
	// dropped the log; removed says it did.
	remove  func(context.Context) error
	removed bool
}

// startAccessLog turns on the client's access log in mode m for one T1
// run (fixtures.ClientAccessLog) and waits until the sidecar's config dump
// has the file access log; then the positive control: probe requests made
// now must appear in the log, in Istio's format, for echo's cluster. An
// error applying or awaiting the Telemetry fails the run (the log could
// otherwise arrive under the load, a listener update measured as part of
// it); a probe that never appears is the capture's Err. The Telemetry is
// removed by off, when the run has read the log; off is also deferred to
// the end of the spec that runs the load, for a run that fails before.
func startAccessLog(ctx context.Context, r *spec.Run, mesh *spec.Cluster, m mode.Mode) (*accessLogRun, error) {
	ns := m.Namespace()
	tel := fixtures.ClientAccessLog(fixtures.Target{Namespace: ns, Run: r.Env.Config.RunID})
	a := &accessLogRun{r: r, capture: &AccessLogCapture{EchoHost: fmt.Sprintf("%s.%s.svc.cluster.local", fixtures.EchoName, ns)},
		remove: func(ctx context.Context) error {
			if err := mesh.Applier.Phase(ctx, "delete Telemetry "+ns+"/"+tel.Name, func(ctx context.Context) error {
				return client.IgnoreNotFound(mesh.Applier.Client().Delete(ctx, tel))
			}); err != nil {
				return err
			}
			return AwaitRemoved(ctx, r, tel)
		}}
	if err := mesh.Applier.Apply(ctx, tel); err != nil {
		return nil, err
	}
	r.Defer(a.off)
	if err := AwaitApplied(ctx, r, tel); err != nil {
		return nil, err
	}
	c := InMeshOf(r, m)
	pod, err := mesh.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return nil, err
	}
	a.proxyLog = load.PodLogs{Client: mesh.Kube.Client, Namespace: ns, Pod: pod.Name, Container: ProxyContainer}
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
			entries, err := accessLog(ctx, a.proxyLog, start, time.Now())
			if err != nil {
				return false, "", err
			}
			for _, e := range entries {
				if strings.Contains(e.Path, marker) && strings.HasSuffix(e.UpstreamCluster, "||"+a.capture.EchoHost) {
					return true, fmt.Sprintf("%s %s -> %s (%d)", e.Method, e.Path, e.UpstreamHost, e.Code), nil
				}
			}
			return false, fmt.Sprintf("%d access log lines, none for %s", len(entries), marker), nil
		})
		return err == nil, lw.Seen, nil
	})
	r.AddWait(w)
	if err != nil {
		a.capture.Err = fmt.Errorf("the access log Telemetry did not take effect on %s/%s: %w", ns, pod.Name, err)
		r.Logf("%v; the run goes on without the 503 attribution", a.capture.Err)
	}
	return a, nil
}

// startWatch watches echo's pods and follows the sidecar's log from now
// until finish; a watch or a follow that cannot start is the capture's Err.
func (a *accessLogRun) startWatch(ctx context.Context, mesh *spec.Cluster, ns string) {
	if a.capture.Err != nil {
		return
	}
	followed, err := a.proxyLog.Follow(ctx, time.Now())
	if err != nil {
		a.capture.Err = fmt.Errorf("the client's access log: %w", err)
		return
	}
	a.followed = followed
	rec, err := podtimeline.Watch(ctx, mesh.Kube.Client, ns, fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		a.capture.Err = fmt.Errorf("echo's pod timeline: %w", err)
		return
	}
	a.watch = rec
}

// stopFollow ends following the sidecar's log (if it is followed); what
// was read stays readable.
func (a *accessLogRun) stopFollow() {
	if a.followed != nil {
		a.followed.Stop()
	}
}

// stopWatch ends the pod watch (if one runs) and keeps its timeline.
func (a *accessLogRun) stopWatch() {
	if a.watch == nil {
		return
	}
	tl, err := a.watch.Stop()
	a.watch = nil
	if err != nil && a.capture.Err == nil {
		a.capture.Err = fmt.Errorf("the pod timeline is incomplete: %w", err)
	}
	a.capture.Timeline = tl
}

// finish ends the capture of load run: the pod watch stops, the load's
// lines are read once the log has them, only echo's 503s are kept, and
// the access log is turned off again (off) before the run returns, so no
// later load (a hardened run in the same spec, a latency spec after it)
// is measured with it.
func (a *accessLogRun) finish(ctx context.Context, run *load.Run) *AccessLogCapture {
	a.stopWatch()
	if a.capture.Err == nil {
		a.read(ctx, run)
	}
	a.stopFollow()
	if err := a.off(ctx); err != nil {
		// The capture is complete; the spec's clean-up tries again and
		// fails the spec if the log stays on.
		a.r.Logf("the client's access log is not off yet: %v", err)
	}
	return a.capture
}

// read waits until the followed access log has a line stamped at the
// load's end and keeps the load's 503s for echo. The load's last requests
// reach the log within Envoy's flush interval (pilot-agent starts it with
// --file-flush-interval-msec 1000, istio pkg/envoy/proxy.go) and the
// kubelet's. A follow that broke is the capture's Incomplete.
func (a *accessLogRun) read(ctx context.Context, run *load.Run) {
	r, c := a.r, a.capture
	c.From, c.To = run.Start, run.End
	var entries []envoylog.Entry
	lw, err := converge.Until(ctx, converge.Policy{Poll: r.Env.Config.Timeouts.ConvergePoll, Times: 1, Limit: r.Env.Config.Timeouts.LogFlush}, "the load's last requests in the access log", func(ctx context.Context) (bool, string, error) {
		es, err := accessLog(ctx, a.followed, c.From, time.Now())
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
		return !last.Before(c.To.Add(-2 * time.Second)), fmt.Sprintf("%d lines, last at %s", len(es), last.Format(time.RFC3339Nano)), nil
	})
	r.AddWait(lw)
	if err != nil {
		c.Incomplete = err.Error()
		r.Logf("access log: %v (the 503s it lacks are counted unattributed)", err)
	}
	c.Lines, c.Echo503s = len(entries), only503(entries, c.EchoHost)
	r.Logf("access log: %d lines over the load, %d of them 503s for %s; %d pods of echo seen", c.Lines, len(c.Echo503s), c.EchoHost, len(c.Timeline.Pods))
}

// off deletes the Telemetry and waits until the client's sidecar no longer
// has the file access log (AwaitRemoved: its config dump), once; the spec's
// clean-up calls it again, which does nothing after a removal that worked
// and tries again after one that failed.
func (a *accessLogRun) off(ctx context.Context) error {
	a.stopWatch()
	a.stopFollow()
	if a.removed {
		return nil
	}
	if err := a.remove(ctx); err != nil {
		return err
	}
	a.removed = true
	return nil
}

// RolloutAccessLog is rollout.503-attribution's measurement: GUIDE T1's
// baseline run in sidecar mode (RolloutLoad, shared with rollout.baseline,
// rollout.no-response-cause and rollout.l7-vs-sidecar), which has the
// client sidecar's access log on and echo's pods watched (AccessLogOn);
// each 503 the sidecar logged for echo is placed on the pod timeline
// (Attribute503s).
func RolloutAccessLog(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	res, err := RolloutLoad(ctx, r, r.Mode, fixtures.Hardening{})
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := AttributionOf(res, r.Mode)
	if err != nil {
		return verdict.Measurement{}, err
	}
	c := res.AccessLog
	if b, err := json.Marshal(struct {
		Pods []podtimeline.Pod
		Only []envoylog.Entry `json:"503s"`
	}{c.Timeline.Pods, c.Echo503s}); err == nil {
		if err := r.SaveRaw("rollout-"+string(r.Mode)+"-503-attribution", b, nil); err != nil {
			return verdict.Measurement{}, err
		}
	}
	if c.Incomplete != "" {
		r.Logf("access log: %s (the 503s it lacks are counted unattributed)", c.Incomplete)
	}
	r.Logf("503 attribution: %s", got.Detail)
	return got, nil
}

// AttributionOf is rollout.503-attribution's measurement of T1 run res in
// mode m: its 503s as the access log it carried places them
// (Attribute503s over the load's window, a second either side), with the
// run's requests, 503s and -1s. A run without the access log, or whose
// capture failed, is an error.
func AttributionOf(res *RolloutResult, m mode.Mode) (verdict.Measurement, error) {
	c := res.AccessLog
	if c == nil {
		return verdict.Measurement{}, fmt.Errorf("the T1 run %s has no access log on (AccessLogOn)", res.Load.Name)
	}
	if c.Err != nil {
		return verdict.Measurement{}, fmt.Errorf("T1 run %s in %s: %w", res.Load.Name, m, c.Err)
	}
	got := Attribute503s(c.Echo503s, c.Timeline, c.EchoHost, c.From.Add(-time.Second), c.To.Add(time.Second), res.Count503())
	got.Total, got.Count, got.NoResponse = verdict.Int64(res.Requests()), verdict.Int64(res.Count503()), verdict.Int64(res.Load.SocketErrors())
	got.Extra["cycles"] = float64(len(res.Cycles))
	got.Extra["pods_seen"] = float64(len(c.Timeline.Pods))
	return got, nil
}

// accessLog reads and parses the proxy's access log lines in [since, until];
// a line in the format but broken is an error.
func accessLog(ctx context.Context, src load.LogSource, since, until time.Time) ([]envoylog.Entry, error) {
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
