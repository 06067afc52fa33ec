package load

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultResolution is the histogram bucket width in seconds used when a
// Spec leaves Resolution at 0: 0.1 ms. fortio's own default (1 ms) turns
// sub-millisecond percentiles into bucket positions (HYBRID's lesson), so the
// engine never uses it silently.
//
// fortio's buckets are not uniform: in units of the resolution d they are 1
// wide up to 12, then 2, 5, 10, 20, 50, 100 wide up to 1000, then 1000 and
// more. Percentiles are finest (buckets 10-25% of the value) between 10d and
// 1000d: 1-100 ms at this default, which suits loads judged on error rates
// and slow calls (rollouts, retries). Loads judged on sub-millisecond to
// few-millisecond percentiles use LatencyResolution.
const DefaultResolution = 0.0001

// LatencyResolution (10 µs) is the resolution of the latency loads (GUIDE
// T5, HYBRID's paced, saturated and gRPC loads, churn): their fine range
// 10d-1000d is 0.1-10 ms, where those claims' percentiles lie, and the
// analyzer (framework/fortioresult) accepts their P50 and mean as resolved
// down to 0.1 ms. Above 10 ms buckets widen to 10 ms and more, and calls
// over 1 s share fortio's overflow bucket; counts and the mean (fortio's
// exact sum / count) are unaffected.
//
// It does not make every sub-0.1 ms difference visible: between 0.5 and 1 ms
// fortio's grid is the same at 10 µs as at 0.1 ms (buckets 0.1 ms wide, e.g.
// [0.8, 0.9] ms), so GUIDE's ambient-l4 P50 overhead of +0.04 ms over a
// 0.82 ms baseline stays inside one bucket, read by fortio's linear
// interpolation. Below 0.5 ms (HYBRID's no-mesh 0.23 ms) it is 2-10x finer.
const LatencyResolution = 0.00001

// DefaultPercentiles are the percentiles the claims are judged on (GUIDE §3
// reports P50, P75, P90, P99 and P99.9).
var DefaultPercentiles = []float64{50, 75, 90, 99, 99.9}

// Accepted ranges, named in validation errors.
const (
	MaxConnections = 4096
	MaxDuration    = 24 * time.Hour
	MinResolution  = 1e-6 // 1 µs
	MaxResolution  = 1.0  // 1 s
)

// methods fortio's fast client can send (it writes the request line itself).
var methods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true,
}

// Spec is one fortio HTTP load, in the terms of `fortio load` flags.
type Spec struct {
	// URL is the target as the client sees it, e.g. http://echo:8080/?status=503:10.
	URL string
	// QPS is the target rate over all connections; 0 means as fast as
	// possible (fortio -qps -1).
	QPS float64
	// Connections is fortio -c: concurrent keep-alive connections, 1..MaxConnections.
	Connections int
	// Duration is fortio -t, > 0 and <= MaxDuration.
	Duration time.Duration
	// Resolution is the histogram bucket width in seconds (fortio -r);
	// 0 means DefaultResolution.
	Resolution float64
	// Percentiles (fortio -p), each in (0, 100]; nil means DefaultPercentiles.
	Percentiles []float64
	// AllowInitialErrors is fortio -allow-initial-errors. fortio's REST API
	// always runs with it on; when it is false the engine first runs a
	// preflight of exactly Connections requests and refuses to start the
	// load unless every one is 2xx (see Engine.Run).
	AllowInitialErrors bool
	// Method overrides the HTTP method (fortio -X); "" means GET, or POST
	// when Payload is set.
	Method string
	// Payload is the request body (fortio -payload).
	Payload string
	// Headers are extra request headers, "Key: Value" (fortio -H).
	Headers []string
	// RequestTimeout is fortio -timeout per request; 0 means fortio's default (3 s).
	RequestTimeout time.Duration
	// Labels is fortio -labels, free text kept in the result.
	Labels string
	// LogErrors is fortio -log-errors: the client logs every non-2xx answer
	// ("Non ok http code", with its code and time), so 503s can be placed
	// in time (Run.NonOK) as -1s are. One log line per such answer.
	LogErrors bool
}

// Normalized returns a copy of s with defaults filled in (Resolution,
// Percentiles), so that the recorded options say exactly what ran.
func (s Spec) Normalized() Spec {
	if s.Resolution == 0 {
		s.Resolution = DefaultResolution
	}
	if s.Percentiles == nil {
		s.Percentiles = append([]float64(nil), DefaultPercentiles...)
	}
	return s
}

// Validate checks every field and returns all problems at once, each naming
// the field, the bad value and what is accepted.
func (s Spec) Validate() error {
	var errs []error
	bad := func(field string, value any, accepted string) {
		errs = append(errs, fmt.Errorf("load.Spec.%s = %v: %s", field, value, accepted))
	}
	if u, err := url.Parse(s.URL); s.URL == "" {
		bad("URL", `""`, "required, an http:// or https:// URL")
	} else if err != nil {
		bad("URL", strconv.Quote(s.URL), "must parse as a URL: "+err.Error())
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("URL", strconv.Quote(s.URL), "accepted: an http:// or https:// URL with a host")
	}
	if math.IsNaN(s.QPS) || math.IsInf(s.QPS, 0) || s.QPS < 0 {
		bad("QPS", s.QPS, "accepted: 0 (as fast as possible) or a finite positive rate")
	}
	if s.Connections < 1 || s.Connections > MaxConnections {
		bad("Connections", s.Connections, fmt.Sprintf("accepted: 1..%d", MaxConnections))
	}
	if s.Duration <= 0 || s.Duration > MaxDuration {
		bad("Duration", s.Duration, fmt.Sprintf("accepted: > 0 and <= %v", MaxDuration))
	}
	if s.Resolution != 0 && (math.IsNaN(s.Resolution) || s.Resolution < MinResolution || s.Resolution > MaxResolution) {
		bad("Resolution", s.Resolution, fmt.Sprintf("accepted: 0 (default %g s) or %g..%g seconds", DefaultResolution, MinResolution, MaxResolution))
	}
	if s.Percentiles != nil && len(s.Percentiles) == 0 {
		bad("Percentiles", "[]", "accepted: nil (defaults) or at least one value in (0, 100]")
	}
	for i, p := range s.Percentiles {
		if math.IsNaN(p) || p <= 0 || p > 100 {
			bad(fmt.Sprintf("Percentiles[%d]", i), p, "accepted: a value in (0, 100]")
		}
	}
	if s.Method != "" && !methods[s.Method] {
		bad("Method", strconv.Quote(s.Method), "accepted: \"\" or one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS")
	}
	for i, h := range s.Headers {
		k, _, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(h, "\r\n") {
			bad(fmt.Sprintf("Headers[%d]", i), strconv.Quote(h), `accepted: "Key: Value" on one line`)
		}
	}
	if s.RequestTimeout < 0 {
		bad("RequestTimeout", s.RequestTimeout, "accepted: 0 (fortio's default, 3s) or a positive duration")
	}
	return errors.Join(errs...)
}

// restBody is the JSON body for /fortio/rest/run. fortio's REST handler reads
// every option as a JSON string (rapi.FormValue), except "headers", an array
// of strings.
func (s Spec) restBody() map[string]any {
	n := s.Normalized()
	qps := "-1" // fortio: negative qps = no wait between calls
	if n.QPS > 0 {
		qps = strconv.FormatFloat(n.QPS, 'g', -1, 64)
	}
	ps := make([]string, len(n.Percentiles))
	for i, p := range n.Percentiles {
		ps[i] = strconv.FormatFloat(p, 'g', -1, 64)
	}
	body := map[string]any{
		"url": n.URL,
		"qps": qps,
		"c":   strconv.Itoa(n.Connections),
		"t":   n.Duration.String(),
		"r":   strconv.FormatFloat(n.Resolution, 'g', -1, 64),
		"p":   strings.Join(ps, ","),
	}
	if n.Labels != "" {
		body["labels"] = n.Labels
	}
	if n.Payload != "" {
		body["payload"] = n.Payload
	}
	if n.Method != "" {
		body["X"] = n.Method
	}
	if n.RequestTimeout > 0 {
		body["timeout"] = n.RequestTimeout.String()
	}
	if len(n.Headers) > 0 {
		body["headers"] = append([]string(nil), n.Headers...)
	}
	if n.LogErrors {
		body["log-errors"] = "on"
	}
	return body
}

// nameRE is what a run name may be: it becomes a file name in the raw directory.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// ValidateName checks a run name before a load is started with it.
func ValidateName(name string) error { return validateName(name) }

func validateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("load: run name %q: accepted: 1-200 characters of letters, digits, '.', '_', '-', starting with a letter or digit (it names files in the raw directory)", name)
	}
	return nil
}
