package fortioresult_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// checkGRPCAgainstFortio checks every number a gRPC Summary shares with
// fortio's in-memory result.
func checkGRPCAgainstFortio(t *testing.T, s fortioresult.Summary, res *fgrpc.GRPCRunnerResults) {
	t.Helper()
	var calls int64
	for code, n := range res.RetCodes {
		calls += n
		if s.Codes[code] != n {
			t.Errorf("Codes[%s] = %d, fortio counted %d", code, s.Codes[code], n)
		}
	}
	if len(s.Codes) != len(res.RetCodes) {
		t.Errorf("Codes %v, fortio RetCodes %v", s.Codes, res.RetCodes)
	}
	if s.Requests != calls || s.Requests != res.DurationHistogram.Count {
		t.Errorf("Requests %d, fortio: sum of RetCodes %d, histogram count %d", s.Requests, calls, res.DurationHistogram.Count)
	}
	if s.Errors != res.ErrorsDurationHistogram.Count {
		t.Errorf("Errors %d, fortio %d", s.Errors, res.ErrorsDurationHistogram.Count)
	}
	if s.Protocol != fortioresult.ProtocolGRPC || s.RunType != res.RunType || s.URL != res.Destination ||
		s.Connections != res.NumThreads || s.Streams != res.Streams {
		t.Errorf("protocol %q run %q url %q connections %d streams %d; fortio run %q destination %q threads %d streams %d",
			s.Protocol, s.RunType, s.URL, s.Connections, s.Streams, res.RunType, res.Destination, res.NumThreads, res.Streams)
	}
	// fortio's gRPC runner counts no sockets: none may be reported.
	if s.SocketsRecorded || s.Sockets != 0 || s.ExtraSockets != 0 || s.SocketErrors != 0 || s.Status503 != 0 {
		t.Errorf("gRPC run reports HTTP-only numbers: %+v", s)
	}
	for _, code := range []string{fortioresult.GRPCServing, fortioresult.GRPCError} {
		if _, ok := s.Rates[code]; !ok {
			t.Errorf("Rates lacks %s: %v", code, s.Rates)
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
	if !sameFloat(s.QPS, res.ActualQPS) || !sameFloat(s.MeanMs, res.DurationHistogram.Avg*1e3) {
		t.Errorf("qps %v mean %v ms, fortio %v, %v s", s.QPS, s.MeanMs, res.ActualQPS, res.DurationHistogram.Avg)
	}
	if len(res.DurationHistogram.Percentiles) != len(fortiotest.DefaultPercentiles) || s.PercentileSource != "fortio" {
		t.Fatalf("fortio computed percentiles %v (source %q), want %v", res.DurationHistogram.Percentiles, s.PercentileSource, fortiotest.DefaultPercentiles)
	}
	for _, p := range res.DurationHistogram.Percentiles {
		key := fortioresult.PercentileKey(p.Percentile)
		if got, ok := s.PercentilesMs[key]; !ok || !sameFloat(got, p.Value*1e3) {
			t.Errorf("P%s = %v ms (present %v), fortio %v s", key, got, ok, p.Value)
		}
	}
	if len(s.Warnings) > 0 {
		t.Errorf("warnings on a real fortio gRPC result: %v", s.Warnings)
	}
}

// The constants name what fgrpc writes.
func TestGRPCCodesAreFortios(t *testing.T) {
	if fortioresult.GRPCError != fgrpc.Error {
		t.Errorf("GRPCError %q, fgrpc.Error %q", fortioresult.GRPCError, fgrpc.Error)
	}
}

// A real gRPC ping run (fortio's runner against fortio's ping server on
// loopback), as the suite's sidecar.grpc-latency keeps it, is summarized
// with the same checks as an HTTP run. Today's parser refused it.
func TestGRPCPingRun(t *testing.T) {
	path, res := fortiotest.RunGRPC(t, fortiotest.WithQPS(200), fortiotest.WithConnections(2), fortiotest.WithStreams(2),
		fortiotest.WithResolution(1e-5), fortiotest.WithLabels("grpc-none-run1"))
	if !strings.HasPrefix(res.RunType, "GRPC Ping") || res.RetCodes[fortioresult.GRPCServing] == 0 {
		t.Fatalf("fortio run: type %q codes %v", res.RunType, res.RetCodes)
	}
	s := fortioresult.Summarize(readBack(t, path))
	checkGRPCAgainstFortio(t, s, res)
	if s.Connections != 4 || s.Streams != 2 {
		t.Errorf("2 connections x 2 streams: summary connections %d streams %d", s.Connections, s.Streams)
	}
	if s.Codes[fortioresult.GRPCServing] != s.Requests || s.Errors != 0 || s.Rates[fortioresult.GRPCServing].Estimate != 1 {
		t.Errorf("loopback pings not all SERVING: codes %v errors %d", s.Codes, s.Errors)
	}
	// gRPC results carry no Resolution field: it is read off the buckets.
	if s.ResolutionSource != fortioresult.ResolutionInferred || s.ResolutionMs != 0.01 {
		t.Errorf("resolution %v ms (%s), want 0.01 inferred from the buckets", s.ResolutionMs, s.ResolutionSource)
	}
	if s.Little.Verdict != stats.LawNotApplicable {
		t.Errorf("paced gRPC run: Little's law %q (%s)", s.Little.Verdict, s.Little.Reason)
	}
}

// Health checks of fortio's "ping_down" service answer NOT_SERVING: every
// call is an error, and the SERVING rate is 0 (the positive control of a
// gRPC failure count).
func TestGRPCHealthNotServing(t *testing.T) {
	path, res := fortiotest.RunGRPC(t, fortiotest.WithQPS(200), fortiotest.WithDuration(500*time.Millisecond),
		fortiotest.WithGRPCHealth(fortiotest.GRPCHealthDown), fortiotest.WithQuiet())
	s := fortioresult.Summarize(readBack(t, path))
	checkGRPCAgainstFortio(t, s, res)
	if s.RunType != "GRPC Health for '"+fortiotest.GRPCHealthDown+"'" {
		t.Errorf("run type %q", s.RunType)
	}
	if s.Requests == 0 || s.Codes["NOT_SERVING"] != s.Requests || s.Errors != s.Requests || s.Rates[fortioresult.GRPCServing].Count != 0 {
		t.Errorf("NOT_SERVING run: codes %v errors %d of %d", s.Codes, s.Errors, s.Requests)
	}
}

// A saturated gRPC run (no qps limit) obeys Little's law like an HTTP one;
// the detector still fires on a doubled mean.
func TestGRPCLittlesLawSaturated(t *testing.T) {
	path, _ := fortiotest.RunGRPC(t, fortiotest.WithQPS(0), fortiotest.WithConnections(4), fortiotest.WithDelay("2ms"),
		fortiotest.WithResolution(1e-5))
	r := readBack(t, path)
	s := fortioresult.Summarize(r)
	if s.RequestedQPS != "max" || s.Little.Verdict != stats.LawHolds || s.Little.CoarseHistogram {
		t.Errorf("saturated gRPC run: requested %q, Little %+v", s.RequestedQPS, s.Little)
	}
	r.DurationHistogram.Avg *= 2
	if bad := fortioresult.Summarize(r); bad.Little.Verdict != stats.LawViolated {
		t.Errorf("doubled mean: Little %+v", bad.Little)
	}
}

// A gRPC file goes through Parse and back without gaining the HTTP fields
// (nor an HTTP file the gRPC ones, see TestRoundTripKeepsEverything).
func TestGRPCRoundTrip(t *testing.T) {
	path, _ := fortiotest.RunGRPC(t, fortiotest.WithDuration(300*time.Millisecond))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(readBack(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	_ = json.Unmarshal(orig, &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the file:\nbefore %v\nafter  %v", a, b)
	}
}

// Negative controls: a gRPC file cut short, one with a status fgrpc never
// writes, and an HTTP file with a gRPC status are refused, each naming the
// file and what is wrong.
func TestGRPCBadFiles(t *testing.T) {
	path, _ := fortiotest.RunGRPC(t, fortiotest.WithDuration(300*time.Millisecond))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := write("truncated.json", good[:len(good)/2])
	badCode := write("badcode.json", bytes.Replace(good, []byte(`"SERVING"`), []byte(`"OK"`), 1))
	httpWithGRPC := write("httpcode.json", bytes.Replace(good, []byte(`"GRPC Ping"`), []byte(`"HTTP"`), 1))
	for _, c := range []struct{ path, want string }{
		{truncated, "not a fortio result (expected JSON from `fortio load -json`, `fortio load -grpc -json` or /fortio/rest/run): unexpected end of JSON input"},
		{badCode, `RetCodes key "OK" is not a gRPC health status (accepted in a "GRPC Ping" run: ERROR, NOT_SERVING, SERVICE_UNKNOWN, SERVING, UNKNOWN)`},
		{httpWithGRPC, `RetCodes key "SERVING" is not an HTTP status code`},
	} {
		_, err := fortioresult.ReadFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to name the file and say %q", filepath.Base(c.path), err, c.want)
		}
	}
}
