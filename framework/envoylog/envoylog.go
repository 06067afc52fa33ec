// Package envoylog reads Envoy access log lines in Istio's default text
// format (pilot/pkg/model.EnvoyTextLogFormat, Istio 1.9 onwards, what the
// Telemetry API's built-in "envoy" provider writes to /dev/stdout):
//
//	[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
//	%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS%
//	"%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
//	%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%"
//	"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER_RAW%
//	%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS%
//	%REQUESTED_SERVER_NAME% %ROUTE_NAME%
//
// so that a 503 can be attributed: which proxy answered it (RESPONSE_FLAGS
// UC, UF, URX, UH..., RESPONSE_CODE_DETAILS "via_upstream" when the upstream
// answered 503 itself) and to which upstream host it was sent.
package envoylog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Entry is one access log line.
type Entry struct {
	Start                  time.Time // START_TIME, the request's first byte
	Method, Path, Protocol string
	Code                   int      // RESPONSE_CODE; 0 when the downstream got none
	Flags                  []string // RESPONSE_FLAGS, e.g. [UC] or [UF URX]; nil for "-"
	Details                string   // RESPONSE_CODE_DETAILS, e.g. via_upstream
	TerminationDetails     string
	TransportFailure       string
	BytesReceived          int64
	BytesSent              int64
	Duration               time.Duration
	UpstreamServiceTime    string // "-" when no upstream answered
	UserAgent              string
	RequestID              string
	Authority              string
	UpstreamHost           string // ip:port, "" for "-" (no upstream chosen)
	UpstreamCluster        string // e.g. outbound|8080||echo.ns.svc.cluster.local
	UpstreamLocal          string
	DownstreamLocal        string
	DownstreamRemote       string
	RouteName              string
}

// HasFlag reports whether the entry carries response flag f.
func (e Entry) HasFlag(f string) bool {
	for _, x := range e.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// fields is the number of space-separated fields after the start time.
const fields = 21

// Parse reads one line. A line that does not start with "[" (Envoy's and
// pilot-agent's own log lines share the container's stdout) is not an
// access log line: ok is false and err nil. A line that starts like one but
// does not have the format's fields is an error naming what is wrong.
// A leading RFC 3339 timestamp (the API's timestamps=true) is skipped.
func Parse(line string) (e Entry, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line != "" && line[0] != '[' {
		if first, rest, cut := strings.Cut(line, " "); cut {
			if _, terr := time.Parse(time.RFC3339Nano, first); terr == nil {
				line = strings.TrimSpace(rest)
			}
		}
	}
	if !strings.HasPrefix(line, "[") {
		return Entry{}, false, nil
	}
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return Entry{}, false, nil
	}
	start, terr := time.Parse(time.RFC3339Nano, line[1:end])
	if terr != nil {
		return Entry{}, false, nil // a bracketed line of another kind (pilot-agent's "[...]" prefixes are not RFC 3339)
	}
	f, err := split(line[end+1:])
	if err != nil {
		return Entry{}, true, fmt.Errorf("envoylog: %w in %q", err, line)
	}
	if len(f) != fields {
		return Entry{}, true, fmt.Errorf("envoylog: %d fields after the start time, want %d (Istio's EnvoyTextLogFormat): %q", len(f), fields, line)
	}
	e.Start = start
	req := strings.Split(f[0], " ")
	if len(req) != 3 {
		return Entry{}, true, fmt.Errorf("envoylog: request %q is not \"METHOD PATH PROTOCOL\": %q", f[0], line)
	}
	e.Method, e.Path, e.Protocol = req[0], req[1], req[2]
	if e.Code, err = strconv.Atoi(f[1]); err != nil {
		return Entry{}, true, fmt.Errorf("envoylog: response code %q is not a number: %q", f[1], line)
	}
	if f[2] != "-" {
		e.Flags = strings.Split(f[2], ",")
	}
	e.Details, e.TerminationDetails, e.TransportFailure = f[3], f[4], f[5]
	nums := []*int64{&e.BytesReceived, &e.BytesSent}
	for i, p := range nums {
		if *p, err = strconv.ParseInt(f[6+i], 10, 64); err != nil {
			return Entry{}, true, fmt.Errorf("envoylog: byte count %q is not a number: %q", f[6+i], line)
		}
	}
	ms, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return Entry{}, true, fmt.Errorf("envoylog: duration %q is not a number of ms: %q", f[8], line)
	}
	e.Duration = time.Duration(ms) * time.Millisecond
	e.UpstreamServiceTime = f[9]
	e.UserAgent, e.RequestID, e.Authority = f[11], f[12], f[13]
	if f[14] != "-" {
		e.UpstreamHost = f[14]
	}
	e.UpstreamCluster, e.UpstreamLocal, e.DownstreamLocal, e.DownstreamRemote = f[15], f[16], f[17], f[18]
	e.RouteName = f[20] // f[10] is X-FORWARDED-FOR, f[19] REQUESTED_SERVER_NAME
	return e, true, nil
}

// split cuts the text after the start time into fields: a quoted field is
// one field (quotes removed, spaces kept), others end at a space.
func split(s string) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted field %q", s)
			}
			out = append(out, s[1:1+end])
			s = strings.TrimSpace(s[end+2:])
			continue
		}
		tok, rest, _ := strings.Cut(s, " ")
		out = append(out, tok)
		s = strings.TrimSpace(rest)
	}
	return out, nil
}
