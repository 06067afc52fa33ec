package fortioresult_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// readBack parses the file fortiotest wrote, failing t on error.
func readBack(t *testing.T, path string) *fortioresult.Result {
	t.Helper()
	r, err := fortioresult.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", path, err)
	}
	return r
}

// sameFloat is exact equality up to float formatting: JSON round trips of
// float64 are exact in Go, so any difference is a real one.
func sameFloat(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// checkAgainstFortio checks every number the Summary shares with fortio's
// in-memory result: the file round trip and our arithmetic must not change any.
func checkAgainstFortio(t *testing.T, s fortioresult.Summary, res *fhttp.HTTPRunnerResults) {
	t.Helper()
	var calls int64
	for code, n := range res.RetCodes {
		calls += n
		if got := s.Codes[strconv.Itoa(code)]; got != n {
			t.Errorf("Codes[%d] = %d, fortio counted %d", code, got, n)
		}
	}
	if len(s.Codes) != len(res.RetCodes) {
		t.Errorf("Codes %v, fortio RetCodes %v", s.Codes, res.RetCodes)
	}
	if s.Requests != calls || s.Requests != res.DurationHistogram.Count {
		t.Errorf("Requests %d, fortio: sum of RetCodes %d, histogram count %d", s.Requests, calls, res.DurationHistogram.Count)
	}
	if s.SocketErrors != res.RetCodes[-1] || s.Status503 != res.RetCodes[503] {
		t.Errorf("socket errors %d / 503s %d, fortio %d / %d", s.SocketErrors, s.Status503, res.RetCodes[-1], res.RetCodes[503])
	}
	if s.Errors != res.ErrorsDurationHistogram.Count {
		t.Errorf("Errors %d, fortio %d", s.Errors, res.ErrorsDurationHistogram.Count)
	}
	if s.Sockets != res.SocketCount || s.Connections != res.NumThreads || s.ExtraSockets != res.SocketCount-int64(res.NumThreads) {
		t.Errorf("sockets %d connections %d extra %d, fortio SocketCount %d NumThreads %d",
			s.Sockets, s.Connections, s.ExtraSockets, res.SocketCount, res.NumThreads)
	}
	if !sameFloat(s.QPS, res.ActualQPS) || !sameFloat(s.MeanMs, res.DurationHistogram.Avg*1e3) ||
		!sameFloat(s.MaxMs, res.DurationHistogram.Max*1e3) || !sameFloat(s.MinMs, res.DurationHistogram.Min*1e3) {
		t.Errorf("qps %v mean %v min %v max %v ms, fortio %v, %v, %v, %v s", s.QPS, s.MeanMs, s.MinMs, s.MaxMs,
			res.ActualQPS, res.DurationHistogram.Avg, res.DurationHistogram.Min, res.DurationHistogram.Max)
	}
	if len(res.DurationHistogram.Percentiles) != len(fortiotest.DefaultPercentiles) {
		t.Fatalf("fortio computed percentiles %v, want %v", res.DurationHistogram.Percentiles, fortiotest.DefaultPercentiles)
	}
	for _, p := range res.DurationHistogram.Percentiles {
		key := fortioresult.PercentileKey(p.Percentile)
		if got, ok := s.PercentilesMs[key]; !ok || !sameFloat(got, p.Value*1e3) {
			t.Errorf("P%s = %v ms (present %v), fortio %v s", key, got, ok, p.Value)
		}
	}
	for code, rate := range s.Rates {
		want, err := stats.Wilson(s.Codes[code], s.Requests, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Proportion(rate) != want {
			t.Errorf("Rates[%s] = %+v, want Wilson 95%% %+v", code, rate, want)
		}
	}
	if len(s.Warnings) > 0 {
		t.Errorf("warnings on a real fortio result: %v", s.Warnings)
	}
}

func TestCleanRun(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithDuration(time.Second),
		fortiotest.WithConnections(4), fortiotest.WithResolution(0.0001))
	s := fortioresult.Summarize(readBack(t, path))
	checkAgainstFortio(t, s, res)

	if s.File != path {
		t.Errorf("File = %q, want %q", s.File, path)
	}
	if s.Requests < 100 || len(s.Codes) != 1 || s.Codes["200"] != s.Requests {
		t.Errorf("clean run: %d requests, codes %v; want only 200s, at least 100", s.Requests, s.Codes)
	}
	if s.Sockets != 4 || s.Connections != 4 || s.ExtraSockets != 0 {
		t.Errorf("clean run: sockets %d connections %d extra %d; want 4, 4, 0", s.Sockets, s.Connections, s.ExtraSockets)
	}
	if r := s.Rates["200"]; r.Estimate != 1 || r.CI.High != 1 || r.CI.Low >= 1 || r.CI.Low < 0.95 {
		t.Errorf("rate of 200 = %v; want 100%% with a Wilson interval just below 1", r)
	}
	if r := s.Rates["-1"]; r.Count != 0 || r.CI.Low != 0 || r.CI.High <= 0 {
		t.Errorf("rate of -1 = %v; want 0 with an upper bound above 0", r)
	}
	if s.PercentileSource != "fortio" {
		t.Errorf("PercentileSource = %q, want fortio", s.PercentileSource)
	}
	if s.ResolutionMs != 0.1 || s.ResolutionSource != fortioresult.ResolutionRecorded {
		t.Errorf("resolution %v ms (%s), want 0.1 ms recorded", s.ResolutionMs, s.ResolutionSource)
	}
	// 200 qps requested and reached: below saturation Little's law does not apply.
	if s.Little.Saturated || !s.Little.Consistent {
		t.Errorf("Little: %+v; want not saturated (200 qps paced)", s.Little)
	}
	want := stats.LittlesLaw(4, res.ActualQPS, 200, res.DurationHistogram.Avg, s.PercentilesMs["50"]/1e3, 0.0001, fortioresult.LittleTolerance)
	if s.Check.Reason != want.Reason || s.Check.CoarseHistogram != want.CoarseHistogram {
		t.Errorf("Little check %+v, want %+v", s.Check, want)
	}
}

func TestInjected503s(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithQPS(400), fortiotest.WithDuration(time.Second),
		fortiotest.WithConnections(4), fortiotest.WithStatus("503:20"))
	s := fortioresult.Summarize(readBack(t, path))
	checkAgainstFortio(t, s, res)

	if s.Status503 == 0 || s.Codes["503"]+s.Codes["200"] != s.Requests || s.SocketErrors != 0 {
		t.Fatalf("codes %v of %d requests; want only 200 and 503, some 503", s.Codes, s.Requests)
	}
	r503 := s.Rates["503"]
	if r503.Count != s.Status503 || r503.Total != s.Requests || !r503.CI.Contains(r503.Estimate) {
		t.Errorf("rate of 503 = %v", r503)
	}
	// The echo server draws each status at random. The reported 95% interval
	// misses 20% in 1 run of 20 by design, so the test asserts coverage at
	// 99.99% (a false failure in 1 run of 10,000) and logs the 95% one.
	wide, err := stats.Wilson(s.Status503, s.Requests, 0.9999)
	if err != nil {
		t.Fatal(err)
	}
	if !wide.CI.Contains(0.20) {
		t.Errorf("injected 20%% 503s not inside the 99.99%% Wilson interval %v", wide)
	}
	t.Logf("503 rate %v (injected 20%%)", r503)
	if s.Errors != s.Status503 {
		t.Errorf("fortio errors %d, want the %d 503s", s.Errors, s.Status503)
	}
}

func TestKilledBackend(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithDuration(1500*time.Millisecond),
		fortiotest.WithConnections(4), fortiotest.WithKillBackendAfter(500*time.Millisecond))
	s := fortioresult.Summarize(readBack(t, path))
	checkAgainstFortio(t, s, res)

	if s.Codes["200"] == 0 {
		t.Errorf("no 200 before the kill: %v", s.Codes)
	}
	if s.SocketErrors == 0 || s.Codes["-1"] != s.SocketErrors {
		t.Errorf("no -1 after the kill: %v", s.Codes)
	}
	if s.Sockets <= int64(s.Connections) || s.ExtraSockets <= 0 {
		t.Errorf("sockets %d, connections %d: a killed backend must force reconnections", s.Sockets, s.Connections)
	}
	r := s.Rates["-1"]
	if r.Count != s.SocketErrors || r.Estimate <= 0 || !r.CI.Contains(r.Estimate) || r.CI.Low <= 0 {
		t.Errorf("rate of -1 = %v", r)
	}
}

// TestPercentilesFromBuckets removes fortio's percentiles from a real result
// and checks that computing them from the buckets gives fortio's values.
func TestPercentilesFromBuckets(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithQPS(300), fortiotest.WithConnections(3))
	r := readBack(t, path)
	r.DurationHistogram.Percentiles = nil
	s := fortioresult.Summarize(r)
	if s.PercentileSource != "histogram" {
		t.Errorf("PercentileSource = %q, want histogram", s.PercentileSource)
	}
	for _, p := range res.DurationHistogram.Percentiles {
		key := fortioresult.PercentileKey(p.Percentile)
		if got := s.PercentilesMs[key]; !sameFloat(got, p.Value*1e3) {
			t.Errorf("P%s from buckets = %v ms, fortio computed %v ms", key, got, p.Value*1e3)
		}
	}

	// And a file written by a fortio told to compute no percentiles at all.
	path, res = fortiotest.Run(t, fortiotest.WithQPS(300), fortiotest.WithPercentiles())
	if len(res.DurationHistogram.Percentiles) != 0 {
		t.Fatalf("fortio computed %v, want none", res.DurationHistogram.Percentiles)
	}
	s = fortioresult.Summarize(readBack(t, path))
	if s.PercentileSource != "histogram" || len(s.PercentilesMs) != 5 {
		t.Errorf("source %q, percentiles %v; want the 5 from the histogram", s.PercentileSource, s.PercentilesMs)
	}
	for _, p := range fortioresult.SummaryPercentiles {
		want := res.DurationHistogram.CalcPercentile(p) * 1e3
		if got := s.PercentilesMs[fortioresult.PercentileKey(p)]; !sameFloat(got, want) {
			t.Errorf("P%v = %v ms, fortio's CalcPercentile on its own data %v ms", p, got, want)
		}
	}
}

// TestLittlesLawSaturated: a saturated closed loop (no qps limit) against a
// 2 ms echo must satisfy Little's law; the same file with its mean doubled
// (as a miscomputed mean would be) must not: the detector's negative control.
func TestLittlesLawSaturated(t *testing.T) {
	path, _ := fortiotest.Run(t, fortiotest.WithQPS(0), fortiotest.WithConnections(4),
		fortiotest.WithDelay("2ms"), fortiotest.WithResolution(0.0001))
	r := readBack(t, path)
	s := fortioresult.Summarize(r)
	if s.RequestedQPS != "max" || !s.Little.Saturated {
		t.Fatalf("requested %q, Little %+v: want a saturated max-qps run", s.RequestedQPS, s.Little)
	}
	if !s.Little.OK || !s.Little.Consistent || s.Little.CoarseHistogram || s.Little.Verdict != stats.LawHolds {
		t.Errorf("Little's law on a real saturated run: %+v", s.Little)
	}
	if want := 4 / s.QPS * 1e3; !sameFloat(s.Little.ExpectedMeanMs, want) {
		t.Errorf("expected mean %v ms, want 4/qps = %v ms", s.Little.ExpectedMeanMs, want)
	}

	r.DurationHistogram.Avg *= 2
	bad := fortioresult.Summarize(r)
	if bad.Little.Consistent || bad.Little.OK || bad.Little.Verdict != stats.LawViolated {
		t.Errorf("doubled mean passed Little's law: %+v", bad.Little)
	}
}

// TestLittleNotApplicableWhenPaced: a fixed-qps run that reached its target
// (connections idle between calls) is outside Little's law: the verdict is
// "not applicable" whatever the histogram, and the histogram's own flag
// stays separate (coarse at 1 ms, fine at 10 µs on a 0.2 ms echo).
func TestLittleNotApplicableWhenPaced(t *testing.T) {
	for _, c := range []struct {
		resolution float64
		coarse     bool
	}{{1e-5, false}, {1e-3, true}} {
		t.Run(fmt.Sprintf("resolution %g", c.resolution), func(t *testing.T) {
			// The case is a paced run of a sub-millisecond echo. A contended
			// host can hold a 1 s run below its pace (seen: 91.6 and 69 of 100
			// qps while other tests ran beside it): with its connections
			// mostly idle (busy under 80% of the time: mean x qps / 4) that is
			// still unsaturated (the client fell behind, not the server) and
			// judged the same. But the same host stretches the 0.2 ms echo to
			// tens of ms, where 1 ms resolves the median and the coarse half
			// has nothing to flag, and can keep connections busy. Such a run
			// is repeated, up to three times, then skipped (shown as skipped,
			// never as passed): the verdict would be the host's, not the
			// summary's.
			var s fortioresult.Summary
			judged := false
			for attempt := 1; attempt <= 3 && !judged; attempt++ {
				path, _ := fortiotest.Run(t, fortiotest.WithQPS(100), fortiotest.WithConnections(4),
					fortiotest.WithDelay("200us"), fortiotest.WithResolution(c.resolution))
				s = fortioresult.Summarize(readBack(t, path))
				busy := s.MeanMs / 1e3 * s.QPS / 4
				judged = (s.QPS >= 0.95*100 || busy < 0.8) && s.PercentilesMs["50"] < 1
				if !judged {
					t.Logf("resolution %g: paced run %d reached %v of 100 qps, connections busy %.0f%% of the time, P50 %v ms (host contended)",
						c.resolution, attempt, s.QPS, 100*busy, s.PercentilesMs["50"])
				}
			}
			if !judged {
				t.Skipf("resolution %g: no run of three was the paced sub-millisecond case on this contended host", c.resolution)
			}
			l := s.Little
			if l.Verdict != stats.LawNotApplicable || l.Saturated || l.ExpectedMeanMs != 0 ||
				!strings.HasPrefix(l.LawReason, "not saturated (") {
				t.Errorf("resolution %g: paced run judged by Little's law: %+v", c.resolution, l)
			}
			if l.CoarseHistogram != c.coarse || l.OK == c.coarse {
				t.Errorf("resolution %g: coarse %v ok %v, want coarse %v (P50 %v ms): %s",
					c.resolution, l.CoarseHistogram, l.OK, c.coarse, s.PercentilesMs["50"], l.HistogramReason)
			}
		})
	}
}

// TestCoarseHistogram is HYBRID's mistake reproduced: fortio's default 1 ms
// resolution on sub-millisecond loopback latencies must be flagged.
func TestCoarseHistogram(t *testing.T) {
	path, _ := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithResolution(0.001))
	s := fortioresult.Summarize(readBack(t, path))
	if s.PercentilesMs["50"] >= 10 {
		t.Skipf("loopback P50 %v ms: this machine is too slow for the sub-millisecond case", s.PercentilesMs["50"])
	}
	if s.ResolutionMs != 1 {
		t.Errorf("resolution %v ms, want 1", s.ResolutionMs)
	}
	if !s.Little.CoarseHistogram || s.Little.OK {
		t.Errorf("1 ms histogram on P50 %v ms not flagged: %+v", s.PercentilesMs["50"], s.Little)
	}
}

func TestSummaryJSONKeys(t *testing.T) {
	path, _ := fortiotest.Run(t, fortiotest.WithDuration(500*time.Millisecond))
	data, err := json.Marshal(fortioresult.Summarize(readBack(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"file", "requests", "codes", "socket_errors", "sockets", "connections", "qps", "percentiles_ms", "mean_ms", "rates", "little_law", "protocol", "sockets_recorded"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary JSON lacks %q: %s", k, data)
		}
	}
	ll, _ := m["little_law"].(map[string]any)
	for _, k := range []string{"verdict", "law_reason", "histogram_reason", "coarse_histogram", "reason"} {
		if _, ok := ll[k]; !ok {
			t.Errorf("little_law lacks %q: %v", k, ll)
		}
	}
	pm, _ := m["percentiles_ms"].(map[string]any)
	for _, k := range []string{"50", "75", "90", "99", "99.9"} {
		if _, ok := pm[k]; !ok {
			t.Errorf("percentiles_ms lacks %q: %v", k, pm)
		}
	}
	rate, _ := m["rates"].(map[string]any)["200"].(map[string]any)
	for _, k := range []string{"count", "total", "rate", "ci_low", "ci_high", "confidence"} {
		if _, ok := rate[k]; !ok {
			t.Errorf("rates[200] lacks %q: %v", k, rate)
		}
	}
	_ = os.Remove(path)
}

// BenchmarkParseSummarize measures reading and summarizing one real result
// file (a report over a results directory does this per file).
func BenchmarkParseSummarize(b *testing.B) {
	path, _ := fortiotest.Run(b, fortiotest.WithDuration(500*time.Millisecond))
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := fortioresult.Parse(path, data)
		if err != nil {
			b.Fatal(err)
		}
		_ = fortioresult.Summarize(r)
	}
}

// Each percentile is reported with the bucket fortio read it from: the
// bucket of the file's own data where fortio's cumulative percent crosses
// it, which holds the value.
func TestPercentileBuckets(t *testing.T) {
	path, res := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithConnections(4),
		fortiotest.WithDelay("200us"), fortiotest.WithResolution(1e-5))
	s := fortioresult.Summarize(readBack(t, path))
	if len(s.PercentileBucketsMs) != len(s.PercentilesMs) {
		t.Fatalf("buckets %v for percentiles %v", s.PercentileBucketsMs, s.PercentilesMs)
	}
	for _, p := range res.DurationHistogram.Percentiles {
		key := fortioresult.PercentileKey(p.Percentile)
		b := s.PercentileBucketsMs[key]
		v := s.PercentilesMs[key]
		if v < b[0]*(1-1e-9) || v > b[1]*(1+1e-9) {
			t.Errorf("P%s %v ms outside its bucket %v", key, v, b)
		}
		found := false
		prev := 0.0
		for _, d := range res.DurationHistogram.Data {
			if sameFloat(d.Start*1e3, b[0]) && sameFloat(d.End*1e3, b[1]) {
				found = true
				if !(prev < p.Percentile && p.Percentile <= d.Percent) {
					t.Errorf("P%s: bucket %v spans cumulative %v..%v%%", key, b, prev, d.Percent)
				}
			}
			prev = d.Percent
		}
		if !found {
			t.Errorf("P%s: bucket %v is not one of the file's", key, b)
		}
		if w := s.BucketWidthMs(p.Percentile); !sameFloat(w, b[1]-b[0]) || w <= 0 {
			t.Errorf("P%s: width %v, bucket %v", key, w, b)
		}
	}
}
