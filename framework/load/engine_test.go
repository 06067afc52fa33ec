package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/netfault"
)

func TestRunAgainstEchoKeepsRawAndOptions(t *testing.T) {
	e, raw := newEngine(t)
	echo := startEcho(t)
	spec := load.Spec{URL: echo, QPS: 200, Connections: 4, Duration: 2 * time.Second, Labels: "steady"}
	run, err := e.Run(context.Background(), "steady", spec)
	if err != nil {
		t.Fatal(err)
	}
	res := run.Result
	if res.Requests() == 0 || res.RetCodes[200] != res.Requests() {
		t.Fatalf("want every request 200, got RetCodes %v of %d", res.RetCodes, res.Requests())
	}
	if res.NumThreads != 4 || res.Labels != "steady" {
		t.Errorf("NumThreads %d Labels %q, want 4 and %q", res.NumThreads, res.Labels, "steady")
	}
	if res.SocketCount != 4 {
		t.Errorf("SocketCount %d, want 4 (perfect keep-alive on loopback)", res.SocketCount)
	}
	if len(run.Causes) != 0 || run.DeadSocketRetries != 0 {
		t.Errorf("no socket error expected, got causes %v retries %d", run.Causes, run.DeadSocketRetries)
	}
	if !run.LogsComplete {
		t.Error("the run's \"Run ended\" log line was not found")
	}
	// Default percentiles and the fine resolution reached fortio.
	for _, p := range load.DefaultPercentiles {
		if _, ok := res.Percentile(p); !ok {
			t.Errorf("percentile %v missing from the result", p)
		}
	}
	for _, b := range res.DurationHistogram.Data {
		if w := b.End - b.Start; w > 0.0001+1e-12 && b.End < 0.001 {
			t.Errorf("bucket [%g,%g) wider than 0.1 ms below 1 ms: resolution not applied", b.Start, b.End)
		}
	}
	// Raw reply kept byte for byte, options next to it.
	onDisk, err := os.ReadFile(filepath.Join(raw, "steady.json"))
	if err != nil || !bytes.Equal(onDisk, run.Raw) {
		t.Fatalf("steady.json differs from Run.Raw (err %v)", err)
	}
	var opts struct {
		Endpoint string
		Body     map[string]any
	}
	b, err := os.ReadFile(filepath.Join(raw, "steady.options.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &opts); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"url": echo, "qps": "200", "c": "4", "t": "2s", "r": "0.0001", "p": "50,75,90,99,99.9", "labels": "steady"}
	for k, v := range want {
		if opts.Body[k] != v {
			t.Errorf("options body %s = %v, want %v", k, opts.Body[k], v)
		}
	}
	if !strings.HasSuffix(opts.Endpoint, "/fortio/rest/run") {
		t.Errorf("endpoint %q", opts.Endpoint)
	}
	// Never overwrite a raw result.
	if _, err := e.Run(context.Background(), "steady", spec); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second run with the same name: err %v, want 'already exists'", err)
	}
}

func TestSpecValidationNamesFieldAndRange(t *testing.T) {
	cases := []struct {
		spec load.Spec
		want string
	}{
		{load.Spec{QPS: 1, Connections: 1, Duration: time.Second}, "load.Spec.URL"},
		{load.Spec{URL: "tcp://x:1", Connections: 1, Duration: time.Second}, "http:// or https://"},
		{load.Spec{URL: "http://x/", QPS: -5, Connections: 1, Duration: time.Second}, "load.Spec.QPS = -5"},
		{load.Spec{URL: "http://x/", Connections: 0, Duration: time.Second}, "load.Spec.Connections = 0: accepted: 1..4096"},
		{load.Spec{URL: "http://x/", Connections: 1}, "load.Spec.Duration = 0s"},
		{load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second, Resolution: 5}, "load.Spec.Resolution = 5"},
		{load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second, Percentiles: []float64{50, 101}}, "load.Spec.Percentiles[1] = 101"},
		{load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second, Method: "get"}, `load.Spec.Method = "get"`},
		{load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second, Headers: []string{"nocolon"}}, "load.Spec.Headers[0]"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.spec, err, c.want)
		}
	}
	if err := (load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second}).Validate(); err != nil {
		t.Errorf("valid spec rejected: %v", err)
	}
	e, _ := newEngine(t)
	if _, err := e.Run(context.Background(), "../escape", load.Spec{URL: "http://x/", Connections: 1, Duration: time.Second}); err == nil || !strings.Contains(err.Error(), `"../escape"`) {
		t.Errorf("bad run name accepted or not named: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []load.Config{
		{BaseURL: "127.0.0.1:8080", Logs: fortioLog, RawDir: t.TempDir()},
		{BaseURL: "http://127.0.0.1:1/", RawDir: t.TempDir()},
		{BaseURL: "http://127.0.0.1:1/", Logs: fortioLog},
	} {
		if _, err := load.New(c); err == nil || !strings.Contains(err.Error(), "load.Config.") {
			t.Errorf("New(%+v) = %v, want an error naming the field", c, err)
		}
	}
}

// Each cause is produced by a real socket event on loopback and must be
// classified as such: these are the classifier's negative controls.
func TestCausesFromRealSocketErrors(t *testing.T) {
	closedPort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	resetter := netfault.Reset(t)               // reads the request, then RST
	eofer := netfault.EOF(t)                    // reads the headers, then FIN, no response
	silent := netfault.Silent(t, 3*time.Second) // accepts, never answers
	cases := []struct {
		name string
		addr string
		want load.Cause
		tmo  time.Duration
	}{
		{"refused", closedPort(), load.CauseRefused, 0},
		{"reset", resetter, load.CauseReset, 0},
		{"eof", eofer, load.CauseEOF, 0},
		{"timeout", silent, load.CauseTimeout, 300 * time.Millisecond},
	}
	e, _ := newEngine(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, err := e.Run(context.Background(), "cause-"+c.name, load.Spec{
				URL: "http://" + c.addr + "/", QPS: 20, Connections: 2, Duration: 1 * time.Second,
				AllowInitialErrors: true, RequestTimeout: c.tmo,
			})
			if err != nil {
				t.Fatal(err)
			}
			n := run.SocketErrors()
			if n == 0 {
				t.Fatalf("no -1 at all: RetCodes %v", run.Result.RetCodes)
			}
			if got := run.Causes[c.want]; int64(got) != n || len(run.Causes) != 1 {
				t.Fatalf("want all %d -1s classified %q, got %v (failures %+v)", n, c.want, run.Causes, run.Failures[:min(3, len(run.Failures))])
			}
			if len(run.WarmupCauses) == 0 {
				t.Errorf("warm-up calls failed too but were not reported apart: %v", run.WarmupCauses)
			}
			if !run.LogsComplete {
				t.Error("Run ended line missing")
			}
		})
	}
}

func TestPreflightRefusesWhenInitialErrorsNotAllowed(t *testing.T) {
	e, raw := newEngine(t)
	echo := startEcho(t)
	_, err := e.Run(context.Background(), "strict", load.Spec{URL: echo + "?status=503", QPS: 10, Connections: 2, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "AllowInitialErrors") {
		t.Fatalf("want a preflight error naming 503 and AllowInitialErrors, got %v", err)
	}
	if _, serr := os.Stat(filepath.Join(raw, "strict.json")); serr == nil {
		t.Error("the load ran although the preflight failed")
	}
	// And a healthy target passes the preflight.
	run, err := e.Run(context.Background(), "strict-ok", load.Spec{URL: echo, QPS: 20, Connections: 2, Duration: 500 * time.Millisecond})
	if err != nil || run.Result.RetCodes[200] == 0 {
		t.Fatalf("strict run against a healthy echo: %v", err)
	}
}

func TestRESTErrorReplyIsKept(t *testing.T) {
	e, raw := newEngine(t)
	// fortio cannot start this run (no such host): the error reply is kept.
	_, err := e.Run(context.Background(), "nohost", load.Spec{URL: "http://no-such-host.invalid:1/", QPS: 1, Connections: 1, Duration: time.Second, AllowInitialErrors: true})
	if err == nil {
		t.Fatal("want an error for an unresolvable host")
	}
	if _, serr := os.Stat(filepath.Join(raw, "nohost.options.json")); serr != nil {
		t.Errorf("options not kept for a failed run: %v", serr)
	}
	t.Logf("error as reported: %v", err)
}

func TestTransportIsUsed(t *testing.T) {
	// A RoundTripper that counts calls stands in for a port-forward.
	var calls int
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		return http.DefaultTransport.RoundTrip(r)
	})
	e, err := load.New(load.Config{BaseURL: strings.TrimSuffix(startClient(t), "/fortio/"), Transport: rt, Logs: fortioLog, RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), "via-rt", load.Spec{URL: startEcho(t), QPS: 20, Connections: 1, Duration: 300 * time.Millisecond, AllowInitialErrors: true}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("transport used %d times, want 1", calls)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
