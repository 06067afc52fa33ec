package steps

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/envoylog"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/podtimeline"
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
		}, 15, "-"), 10, verdict.NotReproduced, map[string]int64{NoUpstream: 10}},
		{"no 503 at all", []envoylog.Entry{ok200}, 0, verdict.Inconclusive, map[string]int64{}},
		{"log lost most lines", many(2, uc, 30, "198.18.0.31:8080"), 12, verdict.Inconclusive, map[string]int64{podtimeline.Live: 2, claims.Unattributed: 10}},
		{"another host, outside the load", []envoylog.Entry{uc(11, "198.18.0.99:8080"), uc(90, "198.18.0.23:8080")}, 1,
			verdict.Inconclusive, map[string]int64{claims.Unattributed: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Attribute503s(tc.entries, tl, echoHost, from, to, tc.fortio)
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
	got := Attribute503s(cases[0].entries, tl, echoHost, from, to, 13)
	if got.Extra["flag_UC"] != 9 || got.Extra["flag_URX"] != 4 || got.Extra["flag_UF"] != 4 || !strings.Contains(got.Detail, "flags UC 9, UF 4, URX 4") {
		t.Errorf("flags not counted: %v %s", got.Extra, got.Detail)
	}
}
