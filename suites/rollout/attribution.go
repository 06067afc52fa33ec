package rollout

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
	"github.com/meshclaims/meshclaims/framework/envoylog"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// noUpstream is the category of a 503 the proxy answered without choosing
// an upstream host (UH no healthy upstream, NR no route).
const noUpstream = "no-upstream"

// attribute503s places each 503 the client's sidecar logged for echo's
// cluster (upstream cluster outbound|<port>||<echoHost>) during the load
// [from, to] on the pod timeline: the upstream host's pod was terminating,
// gone, or live when the 503 came back (the request's start plus its
// duration); a 503 without an upstream host is no-upstream, one whose host
// no pod of the timeline had is unattributed, and so are the 503s fortio
// counted (fortio503) that the log lacks (lines lost). Response flags and
// code details are counted beside them (Extra flag_<F>, details_<d>).
func attribute503s(entries []envoylog.Entry, tl podtimeline.Timeline, echoHost string, from, to time.Time, fortio503 int64) verdict.Measurement {
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
		cat := noUpstream
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

// rolloutAccessLog is rollout.503-attribution's measurement: GUIDE T1's
// baseline run in sidecar mode (steps.RolloutLoad, shared with rollout.baseline,
// rollout.no-response-cause and rollout.l7-vs-sidecar), which has the
// client sidecar's access log on and echo's pods watched (steps.AccessLogOn);
// each 503 the sidecar logged for echo is placed on the pod timeline
// (attribute503s).
func rolloutAccessLog(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	res, err := steps.RolloutLoad(ctx, r, r.Mode, fixtures.Hardening{})
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := attributionOf(res, r.Mode)
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

// attributionOf is rollout.503-attribution's measurement of T1 run res in
// mode m: its 503s as the access log it carried places them
// (attribute503s over the load's window, a second either side), with the
// run's requests, 503s and -1s. A run without the access log, or whose
// capture failed, is an error.
func attributionOf(res *steps.RolloutResult, m mode.Mode) (verdict.Measurement, error) {
	c := res.AccessLog
	if c == nil {
		return verdict.Measurement{}, fmt.Errorf("the T1 run %s has no access log on (AccessLogOn)", res.Load.Name)
	}
	if c.Err != nil {
		return verdict.Measurement{}, fmt.Errorf("T1 run %s in %s: %w", res.Load.Name, m, c.Err)
	}
	got := attribute503s(c.Echo503s, c.Timeline, c.EchoHost, c.From.Add(-time.Second), c.To.Add(time.Second), res.Count503())
	got.Total, got.Count, got.NoResponse = verdict.Int64(res.Requests()), verdict.Int64(res.Count503()), verdict.Int64(res.Load.SocketErrors())
	got.Extra["cycles"] = float64(len(res.Cycles))
	got.Extra["pods_seen"] = float64(len(c.Timeline.Pods))
	return got, nil
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
