package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
)

// Stop ends a running load early on a real fortio REST server, and the
// run's result is what ran so far (not an error, not the full duration):
// what a load stopped by the sequential rule keeps.
func TestStopEndsTheRunWithItsPartialResult(t *testing.T) {
	e, _ := newEngine(t)
	echo := startEcho(t)
	spec := load.Spec{URL: echo, QPS: 100, Connections: 2, Duration: 20 * time.Second}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		e.Stop()
	}()
	start := time.Now()
	run, err := e.Run(context.Background(), "stopped", spec)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took > 10*time.Second || run.Result.ActualDuration >= spec.Duration {
		t.Fatalf("stopped after 1.5 s, the call took %s and fortio ran %s of %s", took, run.Result.ActualDuration, spec.Duration)
	}
	if n := run.Result.Requests(); n < 50 || n > 1000 {
		t.Fatalf("%d requests in %s at 100 qps", n, run.Result.ActualDuration)
	}
	t.Logf("stopped: %d requests in %s (planned %s)", run.Result.Requests(), run.Result.ActualDuration, spec.Duration)
}

// Live reads the real client log as the sequential monitor does while a
// load runs: every 503 of a LogErrors load is there, timed inside the run.
func TestLiveReadsTheClientLogs503s(t *testing.T) {
	e, _ := newEngine(t)
	echo := startEcho(t)
	spec := load.Spec{URL: echo + "?status=503:10", QPS: 400, Connections: 4, Duration: time.Second, AllowInitialErrors: true, LogErrors: true}
	start := time.Now()
	run, err := e.Run(context.Background(), "live", spec)
	if err != nil {
		t.Fatal(err)
	}
	text, err := fortioLog.Logs(context.Background(), start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	noResp, unavailable := load.Live(text, start)
	// fortio's warm-up makes one request per connection before the run
	// (fhttp/httprunner.go): logged like any other, never in RetCodes. So
	// the log holds the result's 503s plus at most one per connection.
	n, live := run.Result.RetCodes[503], int64(len(unavailable))
	if n == 0 || live < n || live > n+int64(spec.Connections) || len(noResp) != 0 {
		t.Fatalf("result: %d 503s; log read live: %d 503s (at most %d warm-up ones more allowed), %d -1s", n, live, spec.Connections, len(noResp))
	}
	if _, later := load.Live(text, time.Now().Add(time.Hour)); len(later) != 0 {
		t.Fatal("lines before since were counted")
	}
}
