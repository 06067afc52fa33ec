package load

import (
	"encoding/json"
	"fmt"
	"time"

	"fortio.org/fortio/stats"
)

// Result is the part of fortio's HTTP result JSON (fhttp.HTTPRunnerResults)
// the engine and its callers read directly. Field names are fortio's so the
// JSON decodes as is; the complete file is Run.Raw (framework/fortioresult
// parses all of it).
type Result struct {
	RunType           string
	Labels            string
	StartTime         time.Time // start of the measured phase, on the client's clock (after warm-up)
	RequestedQPS      string    // "max" or a number
	RequestedDuration string
	ActualQPS         float64
	ActualDuration    time.Duration // nanoseconds in the JSON
	NumThreads        int           // connections actually used
	Version           string        // fortio version of the client
	RunID             int64         // the client's run id; tags its log lines ("run")
	ID                string

	// RetCodes maps HTTP status to count; -1 is "no HTTP response".
	RetCodes    map[int]int64
	SocketCount int64   // sockets opened over the run; == NumThreads with perfect keep-alive
	Sockets     []int64 // per connection

	// DurationHistogram holds every call, errors included, in seconds.
	DurationHistogram *stats.HistogramData
	// ErrorsDurationHistogram holds the calls fortio counted as errors.
	ErrorsDurationHistogram *stats.HistogramData

	// jrpc.ServerReply, set when the run failed to start.
	Error     bool   `json:"error,omitempty"`
	Message   string `json:"message,omitempty"`
	Exception string `json:"exception,omitempty"`
}

// Requests is the number of calls in the measured phase (warm-up excluded,
// as in fortio's own summary).
func (r *Result) Requests() int64 {
	if r.DurationHistogram == nil {
		return 0
	}
	return r.DurationHistogram.Count
}

// Percentile returns fortio's value for percentile p in seconds, and false
// when p was not requested for this run.
func (r *Result) Percentile(p float64) (float64, bool) {
	if r.DurationHistogram == nil {
		return 0, false
	}
	for _, pc := range r.DurationHistogram.Percentiles {
		if pc.Percentile == p {
			return pc.Value, true
		}
	}
	return 0, false
}

// decodeResult decodes a REST reply. A reply with error=true (fortio could
// not start the run) is returned as an error carrying fortio's message.
func decodeResult(raw []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("load: fortio reply is not a result JSON (%v): %.200q", err, raw)
	}
	if r.Error {
		return &r, fmt.Errorf("load: fortio refused or aborted the run: %s %s", r.Message, r.Exception)
	}
	if r.RunType != "HTTP" {
		return &r, fmt.Errorf("load: fortio reply has RunType %q, want \"HTTP\": %.200q", r.RunType, raw)
	}
	if r.DurationHistogram == nil {
		return &r, fmt.Errorf("load: fortio reply has no DurationHistogram: %.200q", raw)
	}
	return &r, nil
}
