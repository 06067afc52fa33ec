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
