package steps

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/envoylog"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

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
			return scenario.AwaitRemoved(ctx, r, tel)
		}}
	if err := mesh.Applier.Apply(ctx, tel); err != nil {
		return nil, err
	}
	r.Defer(a.off)
	if err := scenario.AwaitApplied(ctx, r, tel); err != nil {
		return nil, err
	}
	c := scenario.InMeshOf(r, m)
	pod, err := mesh.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return nil, err
	}
	a.proxyLog = load.PodLogs{Client: mesh.Kube.Client, Namespace: ns, Pod: pod.Name, Container: ProxyContainer}
	probes := 0
	w, err := converge.Until(ctx, scenario.PushPolicy(r), "the client's sidecar to log its requests to echo (access log probes)", func(ctx context.Context) (bool, string, error) {
		probes++
		marker := fmt.Sprintf("meshclaims-accesslog-probe=%d", probes)
		start := time.Now()
		// A probe is part of this wait (recorded with AddWait below), not a
		// measurement load: how many it takes is what the wait finds out,
		// so the plan (spec.Def.Loads) cannot list them and they are not
		// recorded among the spec's loads.
		if _, err := runLoad(ctx, r, c, fmt.Sprintf("accesslog-probe-%d", probes), load.Spec{URL: scenario.EchoURLOf(m) + "?" + marker, QPS: 4, Connections: 1, Duration: time.Second, AllowInitialErrors: true}, nil); err != nil {
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
