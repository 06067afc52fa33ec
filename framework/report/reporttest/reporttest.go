// Package reporttest produces REAL results directories for tests of what is
// built from them (report.html, meshclaims diff): every number comes from
// fortio's own HTTP runner driven through its REST API on 127.0.0.1, as the
// suite drives the client pod, and every record is made by the suite's own
// functions (steps.Rates, steps.Percentiles, steps.NonOK,
// steps.RolloutResult.Measured). A run is in mode none: a local none-mode run
// without the cluster, i.e. the workload is fortio's echo handler on
// loopback and the restarted Deployment is a loopback.Pool.
//
// Loads are short (about 1 s steady, 3 s per rollout). NoneRun captures
// fortio's process-wide logger (load.CaptureFortioLog), so tests using it must
// not run in parallel with other fortio users.
package reporttest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/loopback"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Run says how a none-mode run differs from a clean one.
type Run struct {
	ID string
	// EchoStatus is fortio's echo status query for the steady load, e.g.
	// "503:5" injects 5% 503s (latency.all-ok then fails); "" = all 200.
	EchoStatus string
	// SteadyDuration of the steady load; 0 = 1 s at 400 qps.
	SteadyDuration time.Duration
	// BaselineAbrupt kills backends abruptly in rollout.baseline (the
	// unhardened case: resets and refused connections); false restarts them
	// gracefully. rollout.hardened always restarts gracefully with drain.
	BaselineAbrupt bool
	// RolloutDuration of each rollout load; 0 = 3 s.
	RolloutDuration time.Duration
	// RolloutStatus is fortio's echo status query for the backends of
	// rollout.baseline, e.g. "503:3" (503s during the rollout); "" = 200.
	RolloutStatus string
}

var fortioLog = load.CaptureFortioLog(nil)

// NoneRun writes a results directory at path from real loopback loads and
// returns it, not yet rebuilt (call Rebuild with the registry).
func NoneRun(t testing.TB, path string, cfg Run) *report.Dir {
	t.Helper()
	d, err := report.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	env := report.Environment{RunID: cfg.ID, Started: time.Now(), Provider: "local", Cluster: "loopback (127.0.0.1, no cluster)",
		Fortio: "fortio.org/fortio v1.75.3 (in process)", Modes: []mode.Mode{mode.None}, DurationScale: 0.01, Repeats: 1,
		Registry: "testdata/claims.yaml", Notes: []string{"reporttest: fortio's REST client and echo handler on 127.0.0.1; restarts by a loopback pool"}}
	ctx := context.Background()
	client := startClient(t)

	// latency.percentiles and latency.all-ok share one steady load, as in the suite.
	echo := "http://" + serve(t, http.HandlerFunc(fhttp.EchoHandler)) + "/"
	if cfg.EchoStatus != "" {
		echo += "?status=" + cfg.EchoStatus
	}
	steadyDur := cfg.SteadyDuration
	if steadyDur == 0 {
		steadyDur = time.Second
	}
	run, raw := runLoad(t, ctx, d, client, "latency.percentiles", "steady-none", load.Spec{URL: echo, QPS: 400, Connections: 4, Duration: steadyDur, AllowInitialErrors: true})
	setup := "400 qps, 4 connections, " + steadyDur.String() + " on loopback"
	record(t, d, report.Record{Claim: "latency.percentiles", Mode: mode.None, Setup: setup, Raw: raw,
		Measured: verdictWithPercentiles(run)})
	record(t, d, report.Record{Claim: "latency.all-ok", Mode: mode.None, Setup: setup, Raw: raw, Measured: steps.NonOK(run)})

	rollDur := cfg.RolloutDuration
	if rollDur == 0 {
		rollDur = 3 * time.Second
	}
	base := loopback.Config{Backends: 2, Termination: loopback.Graceful, Drain: 100 * time.Millisecond}
	if cfg.BaselineAbrupt {
		base = loopback.Config{Backends: 2, Termination: loopback.Abrupt, EndpointLag: 300 * time.Millisecond}
	}
	for _, r := range []struct {
		claim, name string
		pool        loopback.Config
	}{
		{"rollout.baseline", "rollout-none-baseline", base},
		{"rollout.hardened", "rollout-none-prestop-grace", loopback.Config{Backends: 2, Termination: loopback.Graceful, Drain: 300 * time.Millisecond}},
	} {
		status := ""
		if r.claim == "rollout.baseline" {
			status = cfg.RolloutStatus
		}
		res, raw := rolloutUnderLoad(t, ctx, d, client, r.claim, r.name, r.pool, rollDur, status)
		record(t, d, report.Record{Claim: r.claim, Mode: mode.None, Raw: raw, Measured: res.Measured(),
			Setup: "100 qps, 16 connections, " + rollDur.String() + ", loopback pool restart loop (" + r.pool.Termination.String() + ")"})
	}
	env.Finished = time.Now()
	if err := d.SaveEnvironment(env); err != nil {
		t.Fatal(err)
	}
	return d
}

func verdictWithPercentiles(run *load.Run) (m verdict.Measured) {
	m = steps.Rates(run, http.StatusServiceUnavailable)
	m.Percentiles = steps.Percentiles(run)
	return m
}

func record(t testing.TB, d *report.Dir, r report.Record) {
	t.Helper()
	if err := d.Record(r); err != nil {
		t.Fatal(err)
	}
}

// runLoad runs one load through the REST client and keeps its raw result
// in d as the suite's spec.Run.SaveRaw names it.
func runLoad(t testing.TB, ctx context.Context, d *report.Dir, client, claim, name string, s load.Spec) (*load.Run, []string) {
	t.Helper()
	e, err := load.New(load.Config{BaseURL: client, Logs: fortioLog, RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.Run(ctx, name, s)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := d.SaveRaw(report.Name(claim, string(mode.None), name), run.Raw, s)
	if err != nil {
		t.Fatal(err)
	}
	return run, []string{rel}
}

func rolloutUnderLoad(t testing.TB, ctx context.Context, d *report.Dir, client, claim, name string, cfg loopback.Config, dur time.Duration, status string) (*steps.RolloutResult, []string) {
	t.Helper()
	pool, err := loopback.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// The load runs in the background while the restart loop runs here.
	e, err := load.New(load.Config{BaseURL: client, Logs: fortioLog, RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	type loaded struct {
		run *load.Run
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		url := pool.URL()
		if status != "" {
			url += "?status=" + status
		}
		// LogErrors as the suite's rollout loads: 503s are timed too.
		r, err := e.Run(ctx, name, load.Spec{URL: url, QPS: 100, Connections: 16, Duration: dur, AllowInitialErrors: true, LogErrors: true})
		done <- loaded{r, err}
	}()
	time.Sleep(300 * time.Millisecond) // let the load get going, as GUIDE's loop starts after the load
	cycles, rerr := rollout.Run(ctx, pool, time.Now().Add(dur-900*time.Millisecond), 20*time.Second, nil)
	l := <-done
	if l.err != nil {
		t.Fatal(l.err)
	}
	if rerr != nil {
		t.Fatalf("rollout loop: %v", rerr)
	}
	res := &steps.RolloutResult{Load: l.run, Cycles: cycles}
	res.PerCycle, res.Before = rollout.CountPerCycle(l.run.FailureTimes(), cycles)
	rel, err := d.SaveRaw(report.Name(claim, string(mode.None), name), l.run.Raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := report.TimelineOf(l.run, cycles).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	trel, err := d.SaveRaw(report.Name(claim, string(mode.None), name+".timeline"), tl, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, []string{rel, trel}
}

// startClient starts what the client pod runs: fortio's REST API under /fortio/.
func startClient(t testing.TB) string {
	t.Helper()
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", t.TempDir())
	return "http://" + serve(t, mux) + "/fortio/"
}

func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve %s: %v", ln.Addr(), err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}
