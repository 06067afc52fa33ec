// Package fortioresult reads the JSON result of a fortio load run (as
// written by `fortio load -json FILE` and returned by the REST API
// /fortio/rest/run), HTTP or gRPC, into typed Go values, and summarizes it
// into the numbers the claims are judged on: status-code counts and rates
// with Wilson intervals, sockets used against connections (HTTP only: fortio's
// gRPC runner does not count sockets), percentiles in milliseconds and a
// Little's-law cross-check of the latency histogram.
//
// The raw file stays the source of truth: Parse keeps every field it does not
// know in Result.Extra, so a newer fortio does not break parsing and a
// re-marshalled Result loses nothing at the top level.
package fortioresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"fortio.org/fortio/stats"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// Histogram is fortio's exported histogram (Count, Min, Max, Sum, Avg,
// StdDev, Data buckets, Percentiles). It is fortio's own type so that
// percentiles missing from a file are computed by fortio's own code
// (stats.HistogramData.CalcPercentile), not by a re-implementation.
type Histogram = stats.HistogramData

// Result is fortio's HTTP runner result (fhttp.HTTPRunnerResults, which embeds
// periodic.RunnerResults and fhttp.HTTPOptions) or gRPC runner result
// (fgrpc.GRPCRunnerResults: periodic.RunnerResults plus RetCodes keyed by
// health status, Destination, Streams, Ping, Metadata) as it appears in JSON.
// Field names are fortio's; only the fields meshclaims reads are typed. Which
// of the two a Result is, RunType says (see Protocol).
type Result struct {
	// From periodic.RunnerResults.
	RunType           string
	Labels            string
	StartTime         time.Time
	RequestedQPS      string // "max" or a decimal number of queries per second
	RequestedDuration string // e.g. "1s" or "exactly 100 calls"
	ActualQPS         float64
	ActualDuration    time.Duration // nanoseconds in the JSON
	NumThreads        int           // the number of connections (-c)
	Version           string
	// DurationHistogram is every call, errors included, in seconds.
	DurationHistogram *Histogram
	// ErrorsDurationHistogram is the calls that fortio counted as errors (non 2xx, -1).
	ErrorsDurationHistogram *Histogram
	Exactly                 int64
	Jitter                  bool
	Uniform                 bool
	NoCatchUp               bool
	RunID                   int64
	ID                      string
	// jrpc.ServerReply: set when the run did not even start (e.g. bad URL).
	Error     bool   `json:"error,omitempty"`
	Message   string `json:"message,omitempty"`
	Exception string `json:"exception,omitempty"`

	// From fhttp.HTTPRunnerResults and fgrpc.GRPCRunnerResults.
	// RetCodes maps, for HTTP, a status ("200", "503") to its count, "-1"
	// meaning no HTTP response at all (connect refused, reset, EOF, timeout);
	// for gRPC, a health status name ("SERVING", "NOT_SERVING", ...) or
	// "ERROR" (the call returned an error) to its count.
	RetCodes map[string]int64

	// From fgrpc.GRPCRunnerResults (absent from HTTP results).
	Destination string // host:port the gRPC runner called
	Streams     int    // streams per connection; NumThreads = connections x Streams
	Ping        bool   // fortio's ping service rather than the health service

	// From fhttp.HTTPRunnerResults (absent from gRPC results).
	IPCountMap      map[string]int
	Sizes           *Histogram
	HeaderSizes     *Histogram
	Sockets         []int64 // socket (connect attempt) count per connection
	SocketCount     int64   // sum of Sockets: equals NumThreads with perfect keep-alive
	ConnectionStats *Histogram
	AbortOn         int

	// From fhttp.HTTPOptions (only the ones a report needs).
	URL              string
	NumConnections   int
	DisableKeepAlive bool
	HTTPReqTimeOut   time.Duration
	// Offset and Resolution are recorded for the connection-time histogram;
	// fortio copies the runner's values into them unless they were set apart,
	// so they usually describe DurationHistogram too (see Resolution()).
	Offset     time.Duration
	Resolution float64

	// Extra holds every top-level field not listed above, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
	// present is the set of top-level keys of the parsed JSON (nil for a
	// Result built in Go): MarshalJSON writes a typed field only if the
	// source had it, so an HTTP file does not gain the gRPC fields on a round
	// trip, nor a gRPC file the HTTP ones.
	present map[string]bool
	// Source names where the result was read from (Parse's name argument).
	Source string `json:"-"`
}

// knownFields are the JSON names of Result's typed fields, computed once by
// reflection so adding a field cannot forget to update a hand-kept list.
var knownFields = func() []string {
	var names []string
	t := reflect.TypeFor[Result]()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}()

// isKnown matches case-insensitively, as encoding/json does when decoding.
func isKnown(key string) bool {
	for _, k := range knownFields {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// resultAlias has Result's fields without its methods, to avoid recursion.
type resultAlias Result

// UnmarshalJSON decodes the typed fields and keeps the others in Extra.
func (r *Result) UnmarshalJSON(data []byte) error {
	var a resultAlias
	if err := json.Unmarshal(data, &a); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	present := make(map[string]bool, len(all))
	for k := range all {
		present[k] = true
		if isKnown(k) {
			delete(all, k)
		}
	}
	a.present = present
	if len(all) == 0 {
		all = nil
	}
	a.Extra = all
	*r = Result(a)
	return nil
}

// wasPresent matches case-insensitively, as encoding/json does when decoding.
func (r *Result) wasPresent(key string) bool {
	if r.present[key] {
		return true
	}
	for k := range r.present {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// MarshalJSON writes the typed fields (those the parsed source had) and the
// kept unknown ones.
func (r Result) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(resultAlias(r))
	if err != nil {
		return nil, err
	}
	if len(r.Extra) == 0 && r.present == nil {
		return typed, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(typed, &all); err != nil {
		return nil, err
	}
	if r.present != nil {
		for k := range all {
			if !r.wasPresent(k) {
				delete(all, k)
			}
		}
	}
	for k, v := range r.Extra {
		if _, clash := all[k]; !clash {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// Protocol is the kind of fortio runner that produced a result.
type Protocol string

const (
	ProtocolHTTP Protocol = "http"
	ProtocolGRPC Protocol = "grpc"
)

// GRPCError is the RetCodes key of a gRPC call that returned an error
// (fgrpc.Error): no health status at all, the gRPC analogue of HTTP's -1.
const GRPCError = "ERROR"

// GRPCServing is the RetCodes key of a successful gRPC call: the health
// status every ping answer and every healthy health check counts as.
const GRPCServing = "SERVING"

// grpcCodes are the RetCodes keys fgrpc writes: the names of
// grpc_health_v1.HealthCheckResponse_ServingStatus (status.String()) and
// GRPCError.
var grpcCodes = func() []string {
	codes := []string{GRPCError}
	for _, name := range grpc_health_v1.HealthCheckResponse_ServingStatus_name {
		codes = append(codes, name)
	}
	sort.Strings(codes)
	return codes
}()

// protocolOf maps fortio's RunType to the runner that wrote it: "HTTP" (or
// empty, in fortio versions that did not write it) from fhttp; from fgrpc
// "GRPC Ping[ Delay=...]", "GRPC Health for '<service>'" and "Custom GRPC
// Method <m> and Payload <p>", each possibly followed by " PayloadLength=N".
func protocolOf(runType string) (Protocol, bool) {
	switch {
	case runType == "" || runType == "HTTP":
		return ProtocolHTTP, true
	case strings.HasPrefix(runType, "GRPC "), strings.HasPrefix(runType, "Custom GRPC Method "):
		return ProtocolGRPC, true
	}
	return "", false
}

// Protocol says whether r came from fortio's HTTP or gRPC runner (Parse
// refuses any other RunType).
func (r *Result) Protocol() Protocol {
	p, _ := protocolOf(r.RunType)
	return p
}

// expected is the error text that says what Parse accepts.
const expected = "expected JSON from `fortio load -json`, `fortio load -grpc -json` or /fortio/rest/run"

// Parse decodes one fortio HTTP or gRPC result. name identifies the input in
// errors (a file name, a URL). It rejects JSON that is not a fortio result
// rather than summarizing zeros: truncated or invalid JSON, a result without
// RetCodes or DurationHistogram, a run of another type (TCP, UDP), fortio's
// error reply for a run that did not start, and status keys that the runner
// cannot have written (HTTP: integers; gRPC: health status names or ERROR).
func Parse(name string, data []byte) (*Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: empty file, %s", name, expected)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a fortio result (%s): %w", name, expected, err)
	}
	if r.Error {
		return nil, fmt.Errorf("%s: fortio reports the run failed to start: %q %s", name, r.Message, r.Exception)
	}
	proto, ok := protocolOf(r.RunType)
	if !ok {
		return nil, fmt.Errorf("%s: fortio RunType is %q, accepted: \"HTTP\" or a gRPC run (\"GRPC Ping...\", \"GRPC Health for ...\", \"Custom GRPC Method ...\")", name, r.RunType)
	}
	var missing []string
	if r.RetCodes == nil {
		missing = append(missing, "RetCodes")
	}
	if r.DurationHistogram == nil {
		missing = append(missing, "DurationHistogram")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: not a fortio result: missing %s (%s)", name, strings.Join(missing, " and "), expected)
	}
	for code, n := range r.RetCodes {
		switch proto {
		case ProtocolHTTP:
			if _, err := strconv.Atoi(code); err != nil {
				return nil, fmt.Errorf("%s: RetCodes key %q is not an HTTP status code (accepted in an HTTP run: integers such as \"200\", \"503\", \"-1\")", name, code)
			}
		case ProtocolGRPC:
			if !slices.Contains(grpcCodes, code) {
				return nil, fmt.Errorf("%s: RetCodes key %q is not a gRPC health status (accepted in a %q run: %s)", name, code, r.RunType, strings.Join(grpcCodes, ", "))
			}
		}
		if n < 0 {
			return nil, fmt.Errorf("%s: RetCodes[%q] = %d, counts must be >= 0", name, code, n)
		}
	}
	if r.NumThreads < 0 {
		return nil, fmt.Errorf("%s: NumThreads = %d, must be >= 0", name, r.NumThreads)
	}
	r.Source = name
	return &r, nil
}

// ReadFile reads and parses the fortio result at path; errors name path.
func ReadFile(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError already names the file
	}
	return Parse(path, data)
}

// ErrMaxQPS is returned by RequestedQPSValue for a run at maximum speed
// (fortio -qps 0 or -1), whose RequestedQPS is "max".
var ErrMaxQPS = errors.New(`requested qps is "max" (no rate limit)`)

// RequestedQPSValue returns RequestedQPS as a number, ErrMaxQPS for "max",
// and an error naming the value for anything else.
func (r *Result) RequestedQPSValue() (float64, error) {
	switch r.RequestedQPS {
	case "max":
		return 0, ErrMaxQPS
	case "":
		return 0, errors.New(`RequestedQPS is empty (accepted: "max" or a number)`)
	}
	v, err := strconv.ParseFloat(r.RequestedQPS, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("RequestedQPS %q is not valid (accepted: \"max\" or a positive number)", r.RequestedQPS)
	}
	return v, nil
}

// Codes returns the status codes present, sorted numerically ("-1" first).
func (r *Result) Codes() []string { return SortedCodes(r.RetCodes) }

// SortedCodes returns the keys of a map keyed by status code, sorted
// numerically ("-1" first); keys that are not integers sort last, by text.
func SortedCodes[V any](m map[string]V) []string {
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		a, errA := strconv.Atoi(codes[i])
		b, errB := strconv.Atoi(codes[j])
		switch {
		case errA == nil && errB == nil:
			return a < b
		case errA != nil && errB != nil:
			return codes[i] < codes[j]
		}
		return errA == nil
	})
	return codes
}

// Calls is the number of calls fortio counted in RetCodes.
func (r *Result) Calls() int64 {
	var n int64
	for _, c := range r.RetCodes {
		n += c
	}
	return n
}
