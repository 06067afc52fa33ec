package envoylog

import (
	"strings"
	"testing"
	"time"
)

// Lines in the shape Istio's EnvoyTextLogFormat gives them (pilot/pkg/model
// telemetry_logging.go, release-1.30), written for the suite's local
// cluster: fortio in meshclaims-sidecar (198.18.0.10) calling Service echo
// (198.19.12.5:8080) through its sidecar, to echo pods 198.18.0.23 and .31.
// Envoy prints RESPONSE_CODE_DETAILS with spaces as underscores, "-" for
// an empty value, START_TIME as %Y-%m-%dT%H:%M:%E3SZ.
const (
	okLine = `[2026-12-01T13:50:44.123Z] "GET /?size=1 HTTP/1.1" 200 - via_upstream - "-" 0 113 2 1 "-" "fortio.org/fortio-1.75.3" "5c1c7e2a-1f0b-4d6e-9b3c-2f9d0c7a8e11" "echo.meshclaims-sidecar:8080" "198.18.0.23:8080" outbound|8080||echo.meshclaims-sidecar.svc.cluster.local 198.18.0.10:41234 198.19.12.5:8080 198.18.0.10:53420 - default`
	// A pooled connection the upstream closed before the response started.
	ucLine = `[2026-12-01T13:50:45.007Z] "GET / HTTP/1.1" 503 UC upstream_reset_before_response_started{connection_termination} - "-" 0 95 1 - "-" "fortio.org/fortio-1.75.3" "0a7e4c1d-33b2-4f8e-a9d1-6b5e2c0f4d90" "echo.meshclaims-sidecar:8080" "198.18.0.31:8080" outbound|8080||echo.meshclaims-sidecar.svc.cluster.local 198.18.0.10:41250 198.19.12.5:8080 198.18.0.10:53420 - default`
	// A connect to a pod that is gone, retried by Istio's default policy
	// (details as Envoy reports them, istio/istio#48267).
	urxLine = `2026-12-01T13:50:46.501234567Z [2026-12-01T13:50:46.480Z] "GET / HTTP/1.1" 503 UF,URX upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111} - "delayed_connect_error:_111" 0 145 20 - "-" "fortio.org/fortio-1.75.3" "7f3b9e10-2c4d-4a5b-8e6f-1d2c3b4a5f60" "echo.meshclaims-sidecar:8080" "198.18.0.31:8080" outbound|8080||echo.meshclaims-sidecar.svc.cluster.local - 198.19.12.5:8080 198.18.0.10:53420 - default`
	// No endpoint at all: no upstream host.
	uhLine = `[2026-12-01T13:50:47.000Z] "GET / HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "fortio.org/fortio-1.75.3" "1b2c3d4e-5f60-4a1b-9c2d-3e4f5a6b7c8d" "echo.meshclaims-sidecar:8080" "-" outbound|8080||echo.meshclaims-sidecar.svc.cluster.local - 198.19.12.5:8080 198.18.0.10:53420 - default`
	// pilot-agent's own line on the same stdout.
	agentLine = `2026-12-01T13:50:40.000000Z	info	Envoy proxy is ready`
)

func TestParseIstioDefaultFormat(t *testing.T) {
	e, ok, err := Parse(okLine)
	if err != nil || !ok {
		t.Fatalf("ok line: %v %v", ok, err)
	}
	if e.Code != 200 || e.Flags != nil || e.Details != "via_upstream" || e.UpstreamHost != "198.18.0.23:8080" ||
		e.Method != "GET" || e.Path != "/?size=1" || e.Duration != 2*time.Millisecond || e.UserAgent != "fortio.org/fortio-1.75.3" ||
		e.UpstreamCluster != "outbound|8080||echo.meshclaims-sidecar.svc.cluster.local" || e.RouteName != "default" || e.BytesSent != 113 ||
		!e.Start.Equal(time.Date(2026, 12, 1, 13, 50, 44, 123e6, time.UTC)) {
		t.Fatalf("ok line parsed as %+v", e)
	}
	uc, _, err := Parse(ucLine)
	if err != nil || uc.Code != 503 || !uc.HasFlag("UC") || uc.UpstreamHost != "198.18.0.31:8080" || uc.UpstreamServiceTime != "-" {
		t.Fatalf("UC line: %+v %v", uc, err)
	}
	urx, ok, err := Parse(urxLine)
	if err != nil || !ok || !urx.HasFlag("UF") || !urx.HasFlag("URX") || urx.UpstreamLocal != "-" || urx.TransportFailure != "delayed_connect_error:_111" ||
		!urx.Start.Equal(time.Date(2026, 12, 1, 13, 50, 46, 480e6, time.UTC)) {
		t.Fatalf("UF,URX line behind a log timestamp: %+v %v", urx, err)
	}
	uh, _, err := Parse(uhLine)
	if err != nil || uh.UpstreamHost != "" || !uh.HasFlag("UH") || uh.Details != "no_healthy_upstream" {
		t.Fatalf("UH line: %+v %v", uh, err)
	}
	if _, ok, err := Parse(agentLine); ok || err != nil {
		t.Fatalf("pilot-agent's line taken for an access log line: %v %v", ok, err)
	}
}

// A line that starts as an access log line but lacks the format's fields
// is an error naming the line, not a silently dropped 503.
func TestParseRejectsOtherFormats(t *testing.T) {
	for name, c := range map[string]struct{ line, want string }{
		"a field short":    {strings.TrimSuffix(ucLine, " default"), "20 fields after the start time, want 21"},
		"JSON-ish request": {strings.Replace(ucLine, `"GET / HTTP/1.1"`, `"GET /"`, 1), `request "GET /" is not`},
		"code not numeric": {strings.Replace(ucLine, " 503 UC", " x UC", 1), `response code "x"`},
		"open quote":       {strings.TrimSuffix(ucLine, ` - default`) + ` "x`, "unterminated quoted field"},
	} {
		t.Run(name, func(t *testing.T) {
			_, ok, err := Parse(c.line)
			if !ok || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ok %v, err %v; want an error containing %q", ok, err, c.want)
			}
		})
	}
}
