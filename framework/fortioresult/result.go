// Package fortioresult reads the JSON result of a fortio HTTP load run (as
// written by `fortio load -json FILE` and returned by the REST API
// /fortio/rest/run) into typed Go values, and summarizes it into the numbers
// the claims are judged on: status-code counts and rates with Wilson
// intervals, sockets used against connections, percentiles in milliseconds and
// a Little's-law cross-check of the latency histogram.
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
	"sort"
	"strconv"
	"strings"
	"time"

	"fortio.org/fortio/stats"
)

// Histogram is fortio's exported histogram (Count, Min, Max, Sum, Avg,
// StdDev, Data buckets, Percentiles). It is fortio's own type so that
// percentiles missing from a file are computed by fortio's own code
// (stats.HistogramData.CalcPercentile), not by a re-implementation.
type Histogram = stats.HistogramData

// Result is fortio's HTTP runner result (fhttp.HTTPRunnerResults, which embeds
// periodic.RunnerResults and fhttp.HTTPOptions) as it appears in JSON.
// Field names are fortio's; only the fields meshclaims reads are typed.
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

	// From fhttp.HTTPRunnerResults.
	// RetCodes maps an HTTP status ("200", "503") to its count; "-1" means no
	// HTTP response at all (connect refused, reset, EOF, timeout).
	RetCodes        map[string]int64
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
	for k := range all {
		if isKnown(k) {
			delete(all, k)
		}
	}
	if len(all) == 0 {
		all = nil
	}
	a.Extra = all
	*r = Result(a)
	return nil
}

// MarshalJSON writes the typed fields and the kept unknown ones.
func (r Result) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(resultAlias(r))
	if err != nil {
		return nil, err
	}
	if len(r.Extra) == 0 {
		return typed, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(typed, &all); err != nil {
		return nil, err
	}
	for k, v := range r.Extra {
		if _, clash := all[k]; !clash {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// Parse decodes one fortio HTTP result. name identifies the input in errors
// (a file name, a URL). It rejects JSON that is not a fortio HTTP result
// rather than summarizing zeros: a result without RetCodes or
// DurationHistogram, a run of another type (GRPC, TCP, UDP), fortio's error
// reply for a run that did not start, and status keys that are not integers.
func Parse(name string, data []byte) (*Result, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: empty file, expected a fortio HTTP result (JSON from `fortio load -json` or /fortio/rest/run)", name)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a fortio HTTP result (JSON from `fortio load -json` or /fortio/rest/run): %w", name, err)
	}
	if r.Error {
		return nil, fmt.Errorf("%s: fortio reports the run failed to start: %q %s", name, r.Message, r.Exception)
	}
	if r.RunType != "" && r.RunType != "HTTP" {
		return nil, fmt.Errorf("%s: fortio RunType is %q, only \"HTTP\" results are accepted", name, r.RunType)
	}
	var missing []string
	if r.RetCodes == nil {
		missing = append(missing, "RetCodes")
	}
	if r.DurationHistogram == nil {
		missing = append(missing, "DurationHistogram")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: not a fortio HTTP result: missing %s (expected JSON from `fortio load -json` or /fortio/rest/run)",
			name, strings.Join(missing, " and "))
	}
	for code, n := range r.RetCodes {
		if _, err := strconv.Atoi(code); err != nil {
			return nil, fmt.Errorf("%s: RetCodes key %q is not an HTTP status code (accepted: integers such as \"200\", \"503\", \"-1\")", name, code)
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

// ReadFile reads and parses the fortio HTTP result at path; errors name path.
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
