package fortioresult

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/meshclaims/meshclaims/framework/stats"
)

// Confidence is the confidence of the Wilson intervals in a Summary.
const Confidence = 0.95

// LittleTolerance is the relative error between the measured mean and
// connections/qps that Little's law accepts for a saturated run. fortio's loop
// adds its own time between calls, so an exact match is not expected; HYBRID's
// mistake was off by a factor, not by percent.
const LittleTolerance = 0.10

// SummaryPercentiles are the percentiles every Summary reports, the ones the
// claims are stated in.
var SummaryPercentiles = []float64{50, 75, 90, 99, 99.9}

// StatusNoResponse is fortio's status for a call without any HTTP response
// (connect refused, reset, EOF, timeout).
const StatusNoResponse = "-1"

// Rate is a status code's share of all calls with its Wilson interval. It is
// a stats.Proportion with snake_case JSON keys.
type Rate stats.Proportion

// MarshalJSON writes {"count","total","rate","ci_low","ci_high","confidence"}.
func (r Rate) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Count      int64   `json:"count"`
		Total      int64   `json:"total"`
		Rate       float64 `json:"rate"`
		CILow      float64 `json:"ci_low"`
		CIHigh     float64 `json:"ci_high"`
		Confidence float64 `json:"confidence"`
	}{r.Count, r.Total, r.Estimate, r.CI.Low, r.CI.High, r.Confidence})
}

// String renders e.g. "324/60000 = 0.540% [0.484%, 0.602%] 95% CI".
func (r Rate) String() string { return stats.Proportion(r).String() }

// LittleLaw is the JSON view of stats.LittleCheck on a run (see Summary.Little).
type LittleLaw struct {
	// OK is stats.LittleCheck.OK: Little's law not violated and the histogram
	// not coarse. Verdict and CoarseHistogram say which of the two it is.
	OK bool `json:"ok"`
	// Verdict is Little's law alone: "holds", "violated", "not applicable"
	// (a paced run: the law does not bound its mean) or "unchecked".
	Verdict         stats.LawVerdict `json:"verdict"`
	Saturated       bool             `json:"saturated"`
	ExpectedMeanMs  float64          `json:"expected_mean_ms,omitempty"`
	RelativeError   float64          `json:"relative_error,omitempty"`
	Consistent      bool             `json:"consistent"`
	CoarseHistogram bool             `json:"coarse_histogram"`
	// LawReason explains Verdict, HistogramReason CoarseHistogram; Reason is
	// both (or why neither could be checked).
	LawReason       string `json:"law_reason,omitempty"`
	HistogramReason string `json:"histogram_reason,omitempty"`
	Reason          string `json:"reason"`
}

// Summary is what a report or a verdict needs from one fortio run. All
// latencies are in milliseconds; rates are fractions of Requests.
type Summary struct {
	File   string `json:"file"`
	Labels string `json:"labels,omitempty"`
	// URL is the HTTP target, or the gRPC run's Destination (host:port).
	URL string `json:"url,omitempty"`
	// Protocol is the runner ("http" or "grpc"); RunType fortio's own name
	// for the run ("HTTP", "GRPC Ping", "GRPC Health for 'ping'", ...).
	Protocol Protocol `json:"protocol"`
	RunType  string   `json:"run_type,omitempty"`
	// Requests is the number of calls (sum of fortio's RetCodes).
	Requests int64 `json:"requests"`
	// Codes is fortio's RetCodes: status -> count. HTTP: "-1" = no HTTP
	// response; gRPC: health status names, "ERROR" = the call failed.
	Codes map[string]int64 `json:"codes"`
	// Rates has every code of Codes, and always "-1" and "503" for HTTP,
	// "SERVING" and "ERROR" for gRPC.
	Rates map[string]Rate `json:"rates"`
	// Errors is fortio's error count (ErrorsDurationHistogram): HTTP non-2xx
	// and -1; gRPC every call not SERVING.
	Errors       int64 `json:"errors"`
	Status503    int64 `json:"status_503"`    // HTTP only
	SocketErrors int64 `json:"socket_errors"` // HTTP calls with status -1
	// SocketsRecorded says whether the file counts sockets: fortio's HTTP
	// runner does (SocketCount, Sockets), its gRPC runner does not, and then
	// Sockets and ExtraSockets are 0 and mean nothing.
	SocketsRecorded bool `json:"sockets_recorded"`
	// Sockets is fortio's SocketCount (connect attempts); Connections its
	// NumThreads (for gRPC: connections x Streams, the concurrent calls);
	// ExtraSockets = Sockets - Connections: the reconnections (0 is perfect
	// keep-alive).
	Sockets      int64 `json:"sockets"`
	Connections  int   `json:"connections"`
	ExtraSockets int64 `json:"extra_sockets"`
	// Streams is the gRPC run's streams per connection (0 for HTTP).
	Streams int `json:"streams,omitempty"`

	RequestedQPS    string  `json:"requested_qps"`
	QPS             float64 `json:"qps"` // fortio's ActualQPS
	DurationSeconds float64 `json:"duration_s"`

	MeanMs   float64 `json:"mean_ms"`
	StdDevMs float64 `json:"stddev_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
	// PercentilesMs maps "50","75","90","99","99.9" (and any other
	// percentile fortio computed) to milliseconds.
	PercentilesMs map[string]float64 `json:"percentiles_ms"`
	// PercentileSource is "fortio" when every reported percentile is
	// fortio's own, "histogram" when all were computed from the buckets with
	// fortio's CalcPercentile, "mixed" otherwise, "" without calls.
	PercentileSource string `json:"percentile_source,omitempty"`
	// PercentileBucketsMs maps each key of PercentilesMs to the [start, end]
	// in ms of the histogram bucket it lies in: fortio interpolates linearly
	// inside it, so a difference smaller than its width is not resolved by
	// the histogram whatever the resolution says (fortio's buckets widen with
	// the value: 0.1 ms wide from 0.5 to 1 ms at both 10 µs and 0.1 ms).
	PercentileBucketsMs map[string][2]float64 `json:"percentile_buckets_ms,omitempty"`

	// ResolutionMs is the duration histogram's bucket divider (0 if unknown).
	ResolutionMs     float64          `json:"resolution_ms"`
	ResolutionSource ResolutionSource `json:"resolution_source"`

	Little LittleLaw `json:"little_law"`
	// Check is the full Little's-law check behind Little.
	Check stats.LittleCheck `json:"-"`

	// Warnings are inconsistencies inside the file (they do not stop the summary).
	Warnings []string `json:"warnings,omitempty"`
}

// PercentileKey formats a percentile as a PercentilesMs key: 99.9 -> "99.9".
func PercentileKey(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// Summarize computes the Summary of a parsed result.
func Summarize(r *Result) Summary {
	h := r.DurationHistogram
	if h == nil {
		h = &Histogram{} // Parse refuses this; Summarize still must not panic
	}
	s := Summary{
		File:            r.Source,
		Labels:          r.Labels,
		URL:             r.URL,
		Protocol:        r.Protocol(),
		RunType:         r.RunType,
		Requests:        r.Calls(),
		Codes:           make(map[string]int64, len(r.RetCodes)),
		Rates:           map[string]Rate{},
		Connections:     r.NumThreads,
		RequestedQPS:    r.RequestedQPS,
		QPS:             r.ActualQPS,
		DurationSeconds: r.ActualDuration.Seconds(),
		MeanMs:          h.Avg * 1e3,
		StdDevMs:        h.StdDev * 1e3,
		MinMs:           h.Min * 1e3,
		MaxMs:           h.Max * 1e3,
		PercentilesMs:   map[string]float64{},
	}
	always := []string{StatusNoResponse, "503"}
	switch s.Protocol {
	case ProtocolGRPC:
		always = []string{GRPCServing, GRPCError}
		if s.URL == "" {
			s.URL = r.Destination
		}
		s.Streams = r.Streams
	default:
		s.Status503 = r.RetCodes["503"]
		s.SocketErrors = r.RetCodes[StatusNoResponse]
		s.SocketsRecorded = true
		s.Sockets = r.SocketCount
		s.ExtraSockets = r.SocketCount - int64(r.NumThreads)
	}
	if r.ErrorsDurationHistogram != nil {
		s.Errors = r.ErrorsDurationHistogram.Count
	}
	for code, n := range r.RetCodes {
		s.Codes[code] = n
	}
	for _, code := range append(r.Codes(), always...) {
		p, err := stats.Wilson(s.Codes[code], s.Requests, Confidence)
		if err != nil { // only on negative counts, which Parse refuses
			s.Warnings = append(s.Warnings, fmt.Sprintf("rate of %s: %v", code, err))
			continue
		}
		s.Rates[code] = Rate(p)
	}
	if h.Count != s.Requests {
		s.Warnings = append(s.Warnings, fmt.Sprintf("DurationHistogram.Count %d differs from the sum of RetCodes %d", h.Count, s.Requests))
	}
	// fgrpc counts as an error every call that is not SERVING.
	if s.Protocol == ProtocolGRPC && r.ErrorsDurationHistogram != nil && s.Errors != s.Requests-s.Codes[GRPCServing] {
		s.Warnings = append(s.Warnings, fmt.Sprintf("ErrorsDurationHistogram.Count %d differs from the calls not %s %d",
			s.Errors, GRPCServing, s.Requests-s.Codes[GRPCServing]))
	}
	if r.Sockets != nil {
		var sum int64
		for _, n := range r.Sockets {
			sum += n
		}
		if sum != r.SocketCount {
			s.Warnings = append(s.Warnings, fmt.Sprintf("SocketCount %d differs from the sum of Sockets %d", r.SocketCount, sum))
		}
	}

	s.PercentilesMs, s.PercentileSource = percentilesMs(h)
	s.PercentileBucketsMs = bucketsOf(h, s.PercentilesMs)

	res, src := r.DurationResolution()
	s.ResolutionMs, s.ResolutionSource = res*1e3, src
	s.Check, s.Little = littleOf(r, h, res, src, s.PercentilesMs["50"]/1e3)
	return s
}

// percentilesMs takes fortio's own percentiles and computes the missing
// SummaryPercentiles from the buckets with fortio's CalcPercentile, the same
// function fortio used to compute its own.
func percentilesMs(h *Histogram) (map[string]float64, string) {
	out := map[string]float64{}
	if h.Count == 0 || len(h.Data) == 0 {
		return out, ""
	}
	fromFortio, computed := 0, 0
	for _, p := range h.Percentiles {
		out[PercentileKey(p.Percentile)] = p.Value * 1e3
	}
	for _, p := range SummaryPercentiles {
		if _, ok := out[PercentileKey(p)]; ok {
			fromFortio++
			continue
		}
		out[PercentileKey(p)] = h.CalcPercentile(p) * 1e3
		computed++
	}
	switch {
	case computed == 0:
		return out, "fortio"
	case fromFortio == 0:
		return out, "histogram"
	}
	return out, "mixed"
}

// bucketsOf finds the bucket of h holding each percentile (values in ms). A
// value on a boundary belongs to the lower bucket: fortio reaches a
// percentile at a bucket's end when the cumulative count crosses it there.
func bucketsOf(h *Histogram, pcts map[string]float64) map[string][2]float64 {
	if len(h.Data) == 0 || len(pcts) == 0 {
		return nil
	}
	out := make(map[string][2]float64, len(pcts))
	for k, v := range pcts {
		sec := v / 1e3
		for _, b := range h.Data {
			if sec <= b.End*(1+1e-9) && sec >= b.Start*(1-1e-9) {
				out[k] = [2]float64{b.Start * 1e3, b.End * 1e3}
				break
			}
		}
	}
	return out
}

// BucketWidthMs is the width in ms of the bucket holding percentile p (0
// when unknown).
func (s Summary) BucketWidthMs(p float64) float64 {
	b, ok := s.PercentileBucketsMs[PercentileKey(p)]
	if !ok {
		return 0
	}
	return b[1] - b[0]
}

func littleOf(r *Result, h *Histogram, resolution float64, src ResolutionSource, p50 float64) (stats.LittleCheck, LittleLaw) {
	requested, err := r.RequestedQPSValue()
	if err != nil {
		requested = 0 // "max" (or unreadable): treat as unlimited, i.e. saturated
	}
	// Little's law needs connections, throughput and the exact mean, not
	// the histogram: a file whose buckets do not reveal their resolution
	// (gRPC files record none, and a tight distribution fits two dividers)
	// is still judged by the law, while its histogram check stays unknown
	// and the run is not OK.
	judged := resolution
	if src == ResolutionUnknown {
		judged = math.SmallestNonzeroFloat64
	}
	c := stats.LittlesLaw(r.NumThreads, r.ActualQPS, requested, h.Avg, p50, judged, LittleTolerance)
	reason, lawReason, histReason := c.Reason, c.LawReason, c.HistogramReason
	ok := c.OK()
	if src == ResolutionUnknown {
		histReason = "histogram resolution could not be determined from the file"
		reason = histReason + "; " + lawReason
		if c.Err != nil {
			reason = histReason + "; " + c.Err.Error()
		}
		c.CoarseHistogram, ok = false, false
	}
	if err != nil && !errors.Is(err, ErrMaxQPS) {
		reason = err.Error() + ", treated as unlimited; " + reason
		if lawReason != "" {
			lawReason = err.Error() + ", treated as unlimited; " + lawReason
		}
	}
	return c, LittleLaw{
		OK:              ok,
		Verdict:         c.Law(),
		LawReason:       lawReason,
		HistogramReason: histReason,
		Saturated:       c.Saturated,
		ExpectedMeanMs:  c.ExpectedMean * 1e3,
		RelativeError:   c.RelativeError,
		Consistent:      c.Consistent,
		CoarseHistogram: c.CoarseHistogram,
		Reason:          reason,
	}
}
