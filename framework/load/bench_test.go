package load_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"

	"github.com/meshclaims/meshclaims/framework/load"
)

// BenchmarkEngineVsDirect compares, on loopback, a max-qps load run through
// the engine (REST API call, raw files, log attribution) with the same load
// run by calling fortio's runner directly (fhttp.RunHTTPTest). It reports
// both qps and P50 side by side and qps_ratio = engine/direct (aim >= 0.95).
// The two alternate order per iteration so neither always runs on a warmer
// machine. Nothing is asserted: the machine is shared and noisy.
//
//	go test -run '^$' -bench EngineVsDirect -benchtime 3x ./framework/load/
func BenchmarkEngineVsDirect(b *testing.B) {
	const (
		conns = 4
		dur   = 2 * time.Second
	)
	// fortio's REST handler prints its text summary to os.Stdout, read at
	// call time; keep it out of the benchmark's result line.
	stdout := os.Stdout
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err == nil {
		os.Stdout = devnull
		defer func() { os.Stdout = stdout; devnull.Close() }()
	}
	echo := startEcho(b)
	e, _ := newEngine(b)
	direct := func() (qps, p50 float64) {
		ho := *fhttp.DefaultHTTPOptions
		ho.URL = echo
		res, err := fhttp.RunHTTPTest(&fhttp.HTTPRunnerOptions{
			HTTPOptions: ho,
			RunnerOptions: periodic.RunnerOptions{
				QPS: -1, NumThreads: conns, Duration: dur, Resolution: load.DefaultResolution,
				Percentiles: []float64{50}, Out: io.Discard,
			},
			AllowInitialErrors: true, // as the REST API runs it
		})
		if err != nil {
			b.Fatal(err)
		}
		return res.ActualQPS, res.DurationHistogram.Percentiles[0].Value
	}
	viaEngine := func(i int) (qps, p50 float64) {
		run, err := e.Run(context.Background(), fmt.Sprintf("bench-%d", i), load.Spec{
			URL: echo, QPS: 0, Connections: conns, Duration: dur, Percentiles: []float64{50}, AllowInitialErrors: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		p, _ := run.Result.Percentile(50)
		return run.Result.ActualQPS, p
	}
	var dq, dp, eq, ep float64
	b.ResetTimer()
	for i := range b.N {
		var q1, p1, q2, p2 float64
		if i%2 == 0 {
			q1, p1 = direct()
			q2, p2 = viaEngine(i)
		} else {
			q2, p2 = viaEngine(i)
			q1, p1 = direct()
		}
		dq, dp, eq, ep = dq+q1, dp+p1, eq+q2, ep+p2
	}
	n := float64(b.N)
	b.ReportMetric(dq/n, "direct_qps")
	b.ReportMetric(eq/n, "engine_qps")
	b.ReportMetric(eq/dq, "qps_ratio")
	b.ReportMetric(1000*dp/n, "direct_p50_ms")
	b.ReportMetric(1000*ep/n, "engine_p50_ms")
}
