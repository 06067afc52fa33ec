package rollout

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	fortiostats "fortio.org/fortio/stats"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/envoylog"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

const echoHost = "echo.meshclaims-sidecar.svc.cluster.local"

// accessLine is one line of the client sidecar's access log as Istio's
// EnvoyTextLogFormat prints it (pilot/pkg/model/telemetry_logging.go):
// fortio (198.18.0.10) through Service echo (198.19.12.5:8080) to host.
func accessLine(t *testing.T, at time.Time, code int, flags, details, host string) envoylog.Entry {
	t.Helper()
	up, upLocal := `"`+host+`"`, "198.18.0.10:41250"
	if host == "-" {
		up, upLocal = `"-"`, "-"
	}
	line := fmt.Sprintf(`[%s] "GET / HTTP/1.1" %d %s %s - "-" 0 95 1 - "-" "fortio.org/fortio-1.75.3" "0a7e4c1d-33b2-4f8e-a9d1-6b5e2c0f4d90" "echo.meshclaims-sidecar:8080" %s outbound|8080||%s %s 198.19.12.5:8080 198.18.0.10:53420 - default`,
		at.UTC().Format("2006-01-02T15:04:05.000Z"), code, flags, details, up, echoHost, upLocal)
	e, ok, err := envoylog.Parse(line)
	if err != nil || !ok {
		t.Fatalf("%q: %v %v", line, ok, err)
	}
	return e
}

// A rollout's pods: old (198.18.0.23) terminating at +10 s and gone at
// +20 s; new (198.18.0.31) live from +5 s.
func rolloutTimeline(t0 time.Time) podtimeline.Timeline {
	return podtimeline.Timeline{Pods: []podtimeline.Pod{
		{Name: "echo-old", IP: "198.18.0.23", IPAt: t0, Ready: t0, Deleting: t0.Add(10 * time.Second), Gone: t0.Add(20 * time.Second)},
		{Name: "echo-new", IP: "198.18.0.31", IPAt: t0.Add(5 * time.Second), Ready: t0.Add(6 * time.Second)},
	}}
}

// 503s on pooled connections to the terminating pod (UC) and connects to
// the gone one (UF,URX) reproduce GUIDE's hypothesis; the negative control,
// the same 503s sent to the live pod (or answered with no upstream, UH),
// does not; a run without 503s is inconclusive; 503s fortio counted that the
// log lacks are unattributed and cannot make it fail.
func TestAttribute503sAgainstThePodTimeline(t *testing.T) {
	c := claimstest.Claim(t, "rollout.503-attribution")
	t0 := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	tl := rolloutTimeline(t0)
	from, to := t0, t0.Add(time.Minute)
	uc := func(s int, host string) envoylog.Entry {
		return accessLine(t, t0.Add(time.Duration(s)*time.Second), 503, "UC", "upstream_reset_before_response_started{connection_termination}", host)
	}
	urx := func(s int, host string) envoylog.Entry {
		return accessLine(t, t0.Add(time.Duration(s)*time.Second), 503, "UF,URX", "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}", host)
	}
	ok200 := accessLine(t, t0.Add(12*time.Second), 200, "-", "via_upstream", "198.18.0.31:8080")
	many := func(n int, f func(int, string) envoylog.Entry, s int, host string) []envoylog.Entry {
		var out []envoylog.Entry
		for i := 0; i < n; i++ {
			out = append(out, f(s, host))
		}
		return out
	}
	cases := []struct {
		name    string
		entries []envoylog.Entry
		fortio  int64
		want    verdict.Result
		cats    map[string]int64
	}{
		{"to pods going away", append(append(many(8, uc, 11, "198.18.0.23:8080"), many(4, urx, 21, "198.18.0.23:8080")...), ok200, uc(30, "198.18.0.31:8080")), 13,
			verdict.Reproduced, map[string]int64{podtimeline.Terminating: 8, podtimeline.Gone: 4, podtimeline.Live: 1}},
		{"to the live pod (negative control)", append(many(12, uc, 30, "198.18.0.31:8080"), uc(8, "198.18.0.23:8080")), 13,
			verdict.NotReproduced, map[string]int64{podtimeline.Live: 13}},
		{"no upstream (UH)", many(10, func(s int, h string) envoylog.Entry {
			return accessLine(t, t0.Add(time.Duration(s)*time.Second), 503, "UH", "no_healthy_upstream", h)
		}, 15, "-"), 10, verdict.NotReproduced, map[string]int64{noUpstream: 10}},
		{"no 503 at all", []envoylog.Entry{ok200}, 0, verdict.Inconclusive, map[string]int64{}},
		{"log lost most lines", many(2, uc, 30, "198.18.0.31:8080"), 12, verdict.Inconclusive, map[string]int64{podtimeline.Live: 2, claims.Unattributed: 10}},
		{"another host, outside the load", []envoylog.Entry{uc(11, "198.18.0.99:8080"), uc(90, "198.18.0.23:8080")}, 1,
			verdict.Inconclusive, map[string]int64{claims.Unattributed: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := attribute503s(tc.entries, tl, echoHost, from, to, tc.fortio)
			for k, n := range tc.cats {
				if got.Attribution[k] != n {
					t.Errorf("%s: %d, want %d (all %v; %s)", k, got.Attribution[k], n, got.Attribution, got.Detail)
				}
			}
			if len(got.Attribution) != len(tc.cats) {
				t.Errorf("categories %v, want %v", got.Attribution, tc.cats)
			}
			if v := verdict.Judge(c, mode.Sidecar, got); v.Result != tc.want {
				t.Errorf("%s: %s; want %s", v.Result, v.Reason, tc.want)
			}
		})
	}
	got := attribute503s(cases[0].entries, tl, echoHost, from, to, 13)
	if got.Extra["flag_UC"] != 9 || got.Extra["flag_URX"] != 4 || got.Extra["flag_UF"] != 4 || !strings.Contains(got.Detail, "flags UC 9, UF 4, URX 4") {
		t.Errorf("flags not counted: %v %s", got.Extra, got.Detail)
	}
}

// rolloutWith is a T1 run of 6000 requests (13 of them 503, 2 no
// response) over [t0, t0+60s] whose access log kept entries.
func rolloutWith(t0 time.Time, entries []envoylog.Entry, tl podtimeline.Timeline) *steps.RolloutResult {
	res := &load.Result{RetCodes: map[int]int64{http.StatusOK: 5985, http.StatusServiceUnavailable: 13, -1: 2}, DurationHistogram: &fortiostats.HistogramData{Count: 6000}}
	run := &load.Run{Name: "rollout-sidecar-baseline", Result: res, Start: t0, End: t0.Add(time.Minute)}
	return &steps.RolloutResult{Load: run, Cycles: make([]rollout.Cycle, 4), AccessLog: &steps.AccessLogCapture{
		EchoHost: echoHost, From: run.Start, To: run.End, Echo503s: echo503s(entries), Lines: len(entries), Timeline: tl,
	}}
}

// rollout.503-attribution's measurement is the shared run's: its 503s
// placed from the capture the run kept, with the run's totals. A run
// without the access log, or whose capture failed, is an error, never an
// attribution of nothing (negative controls).
func TestAttributionOfTheSharedRun(t *testing.T) {
	c := claimstest.Claim(t, "rollout.503-attribution")
	t0 := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	tl := rolloutTimeline(t0)
	var entries []envoylog.Entry
	for i := 0; i < 8; i++ {
		entries = append(entries, accessLine(t, t0.Add(11*time.Second), 503, "UC", "upstream_reset_before_response_started{connection_termination}", "198.18.0.23:8080"))
	}
	for i := 0; i < 4; i++ {
		entries = append(entries, accessLine(t, t0.Add(21*time.Second), 503, "UF,URX", "upstream_reset_before_response_started{remote_connection_failure}", "198.18.0.23:8080"))
	}
	entries = append(entries,
		accessLine(t, t0.Add(12*time.Second), 200, "-", "via_upstream", "198.18.0.31:8080"),
		// After the load's window (and its second of slack): not counted.
		accessLine(t, t0.Add(90*time.Second), 503, "UC", "upstream_reset_before_response_started{connection_termination}", "198.18.0.31:8080"))
	res := rolloutWith(t0, entries, tl)
	if len(res.AccessLog.Echo503s) != 13 {
		t.Fatalf("the capture keeps %d lines, want the 13 503s for echo", len(res.AccessLog.Echo503s))
	}
	got, err := attributionOf(res, mode.Sidecar)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attribution[podtimeline.Terminating] != 8 || got.Attribution[podtimeline.Gone] != 4 || got.Attribution[claims.Unattributed] != 1 {
		t.Errorf("attribution %v (%s)", got.Attribution, got.Detail)
	}
	if *got.Total != 6000 || *got.Count != 13 || *got.NoResponse != 2 || got.Extra["cycles"] != 4 || got.Extra["pods_seen"] != 2 {
		t.Errorf("totals %d/%d/%d, extra %v", *got.Total, *got.Count, *got.NoResponse, got.Extra)
	}
	if v := verdict.Judge(c, mode.Sidecar, got); v.Result != verdict.Reproduced {
		t.Errorf("%s: %s", v.Result, v.Reason)
	}

	none := rolloutWith(t0, entries, tl)
	none.AccessLog = nil
	if _, err := attributionOf(none, mode.Sidecar); err == nil || !strings.Contains(err.Error(), "no access log") {
		t.Errorf("a run without the access log: %v", err)
	}
	failed := rolloutWith(t0, entries, tl)
	failed.AccessLog.Err = errors.New("the access log Telemetry did not take effect")
	if _, err := attributionOf(failed, mode.Sidecar); err == nil || !strings.Contains(err.Error(), "did not take effect") {
		t.Errorf("a failed capture: %v", err)
	}
}

// echo503s are the access log's 503 lines for echo's cluster, as the run's
// capture keeps them.
func echo503s(es []envoylog.Entry) []envoylog.Entry {
	var out []envoylog.Entry
	for _, e := range es {
		if e.Code == http.StatusServiceUnavailable && strings.HasSuffix(e.UpstreamCluster, "||"+echoHost) {
			out = append(out, e)
		}
	}
	return out
}
