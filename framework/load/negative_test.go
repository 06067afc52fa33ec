package load_test

// Negative controls (issue 3 item 5): each detector is shown to fire on a
// fault injected on loopback, and to stay quiet without it.
//
// What is guaranteed and what is only statistically expected is said at
// each assertion; no assertion depends on timing beyond "something happened
// during a 3 s load".

import (
	"context"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/loopback"
	"github.com/meshclaims/meshclaims/framework/stats"
)

func TestInjected503RateIsCountedAndCovered(t *testing.T) {
	e, _ := newEngine(t)
	echo, served := startCountingEcho(t)
	const conns = 8
	run, err := e.Run(context.Background(), "inject-503", load.Spec{
		URL: echo + "?status=503:10", QPS: 1000, Connections: conns, Duration: 3 * time.Second, AllowInitialErrors: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	codes, total := run.Result.RetCodes, run.Result.Requests()
	// Guaranteed: every request is either 200 or 503, and some are 503.
	if codes[200]+codes[503] != total || codes[503] == 0 {
		t.Fatalf("RetCodes %v of %d: want only 200 and 503, with some 503", codes, total)
	}
	if total < 500 {
		t.Fatalf("only %d requests in 3 s: too few to judge a 10%% rate", total)
	}
	// Guaranteed: the result counts every answer the server gave, by its
	// code, except fortio's warm-up (one request per connection before the
	// run, fhttp/httprunner.go), which is never in RetCodes.
	srv := served.Codes()
	var warmup int64
	for code, n := range srv {
		if n < codes[code] {
			t.Errorf("code %d: %d served, %d counted", code, n, codes[code])
		}
		warmup += n - codes[code]
	}
	if len(srv) != 2 || warmup != conns {
		t.Errorf("served %v, counted %v: %d uncounted, want the %d warm-up requests", srv, codes, warmup, conns)
	}
	p95, err := stats.Wilson(codes[503], total, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("injected 10%%: measured %v (served %v)", p95, srv)
	// Statistically expected: fortio draws each request's code at random,
	// so a 95% interval misses 10% in 1 run in 20 and a 99.9% one in 1 in
	// 1000, too often for a test run on every change. The assertion uses a
	// 1-1e-9 interval (6.1 standard errors): a false failure about once in
	// a billion runs. At the 3000 requests of this load it still spans only
	// about 7% to 14%, so half the 503s lost or each counted twice fails
	// it; a smaller miscount fails the served-against-counted check above.
	tight, err := stats.Wilson(codes[503], total, 1-1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if !tight.CI.Contains(0.10) {
		t.Errorf("1-1e-9 interval %v does not cover the injected 10%%", tight)
	}
	// 503s are HTTP responses, not socket errors.
	if run.SocketErrors() != 0 {
		t.Errorf("503 injection produced %d socket errors", run.SocketErrors())
	}
	// Control: the same load without injection has no 503 at all (guaranteed).
	clean, err := e.Run(context.Background(), "no-inject", load.Spec{URL: echo, QPS: 1000, Connections: 8, Duration: time.Second, AllowInitialErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	if clean.Result.RetCodes[503] != 0 || clean.Result.RetCodes[200] != clean.Result.Requests() {
		t.Errorf("no injection: RetCodes %v", clean.Result.RetCodes)
	}
}

// rolloutUnderLoad runs a 3 s load through the pool while the rollout loop
// restarts it, like GUIDE T1 in miniature.
func rolloutUnderLoad(t *testing.T, name string, cfg loopback.Config) (*load.Run, []rollout.Cycle, loopback.Stats) {
	t.Helper()
	pool, err := loopback.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e, _ := newEngine(t)
	const dur = 3 * time.Second
	type out struct {
		run *load.Run
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := e.Run(context.Background(), name, load.Spec{
			URL: pool.URL(), QPS: 400, Connections: 8, Duration: dur, AllowInitialErrors: true,
		})
		ch <- out{r, err}
	}()
	// Let the load get going, then restart until shortly before it ends.
	time.Sleep(300 * time.Millisecond)
	cycles, rerr := rollout.Run(context.Background(), pool, time.Now().Add(dur-900*time.Millisecond), 20*time.Second, nil)
	if rerr != nil {
		t.Fatalf("rollout loop: %v", rerr)
	}
	o := <-ch
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(cycles) < 2 {
		t.Fatalf("only %d restart cycles during the load", len(cycles))
	}
	if !o.run.LogsComplete {
		t.Error("the client's log did not cover the run")
	}
	t.Logf("%s: %d cycles, RetCodes %v, sockets %d, causes %v, dead-socket retries %d %v, pool %+v",
		name, len(cycles), o.run.Result.RetCodes, o.run.Result.SocketCount, o.run.Causes,
		o.run.DeadSocketRetries, o.run.DeadSocketCauses, pool.Stats())
	return o.run, cycles, pool.Stats()
}

func TestAbruptKillsDuringLoadProduceClassifiedFailures(t *testing.T) {
	run, cycles, st := rolloutUnderLoad(t, "abrupt", loopback.Config{
		Backends: 2, Termination: loopback.Abrupt, EndpointLag: 300 * time.Millisecond,
	})
	// Guaranteed by construction: every kill resets the backend's open
	// connections (8 keep-alive connections over 2 backends).
	if st.ConnsReset == 0 {
		t.Fatalf("no connection was reset: %+v", st)
	}
	// Guaranteed: a reset connection surfaces at the client, either as a -1
	// or as one of fortio's silent dead-socket retries.
	if run.SocketErrors()+int64(run.DeadSocketRetries) == 0 {
		t.Fatal("connections were reset but the client saw neither -1 nor a dead-socket retry")
	}
	// Expected (not strictly guaranteed, but with 8 connections at 400 qps and
	// a dead backend in the rotation for 300 ms per kill, a retry lands on it
	// many times per run): some -1s, and each one explained by the log.
	if run.SocketErrors() == 0 {
		t.Fatalf("no -1 over %d abrupt restarts (retries %d)", len(cycles), run.DeadSocketRetries)
	}
	if run.Causes[load.CauseUnattributed] != 0 {
		t.Errorf("%d of %d -1s have no log line: %v", run.Causes[load.CauseUnattributed], run.SocketErrors(), run.Causes)
	}
	// A dead backend resets (balancer) or refuses; nothing else is injected.
	for c, n := range run.Causes {
		if c != load.CauseReset && c != load.CauseRefused && c != load.CauseEOF {
			t.Errorf("unexpected cause %s x%d", c, n)
		}
	}
	// Placed on the timeline: every explained failure falls in some cycle.
	per, before := rollout.CountPerCycle(run.FailureTimes(), cycles)
	sum := before
	for _, n := range per {
		sum += n
	}
	if sum != len(run.Failures) || before != 0 {
		t.Errorf("per cycle %v + before %d != %d failures", per, before, len(run.Failures))
	}
	t.Logf("failures per cycle: %v", per)
}

func TestGracefulRestartsDuringLoadProduceNoFailures(t *testing.T) {
	run, _, st := rolloutUnderLoad(t, "graceful", loopback.Config{
		Backends: 2, Termination: loopback.Graceful, Drain: 100 * time.Millisecond,
	})
	if st.Replaced < 4 {
		t.Fatalf("only %d backends replaced: the control did not exercise restarts", st.Replaced)
	}
	// Guaranteed by construction: new connections only go to live backends,
	// old ones finish active requests before closing idle connections with
	// FIN, which fortio retries on a new socket. So no -1 and no non-200.
	if run.SocketErrors() != 0 || len(run.Causes) != 0 {
		t.Errorf("graceful restarts produced -1s: %v", run.Causes)
	}
	if run.Result.RetCodes[200] != run.Result.Requests() {
		t.Errorf("graceful restarts produced non-200: %v", run.Result.RetCodes)
	}
	// Sockets were replaced (more sockets than connections), and the
	// dead-socket retries that hid those closes are reported, not lost.
	if run.Result.SocketCount <= int64(run.Result.NumThreads) {
		t.Errorf("SocketCount %d: restarts did not move connections", run.Result.SocketCount)
	}
	// No kill and no dead endpoint in the rotation (guaranteed). Resets
	// passed on from a backend may still happen: when Shutdown closes an
	// idle connection just as a request arrives on it, the kernel answers
	// the unread request with RST; fortio retries it like any dead socket.
	if st.ConnsReset != 0 || st.RefusedAtDial != 0 {
		t.Errorf("graceful pool killed a connection or routed to a dead backend: %+v", st)
	}
}

// With LogErrors the client logs every non-2xx answer, and each 503 of the
// result is placed in time; without it (the control) none is.
func TestLogErrorsTimesEvery503(t *testing.T) {
	e, _ := newEngine(t)
	echo := startEcho(t)
	spec := load.Spec{URL: echo + "?status=503:10", QPS: 400, Connections: 4, Duration: time.Second, AllowInitialErrors: true}
	quiet, err := e.Run(context.Background(), "no-log-errors", spec)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Result.RetCodes[503] == 0 || len(quiet.NonOK) != 0 {
		t.Fatalf("without LogErrors: %d 503s, %d timed", quiet.Result.RetCodes[503], len(quiet.NonOK))
	}
	spec.LogErrors = true
	run, err := e.Run(context.Background(), "log-errors", spec)
	if err != nil {
		t.Fatal(err)
	}
	n503 := run.Result.RetCodes[503]
	if n503 == 0 || int64(len(run.NonOK)) != n503 {
		t.Fatalf("with LogErrors: %d 503s in the result, %d timed in the log", n503, len(run.NonOK))
	}
	for _, ev := range run.NonOK {
		if ev.Code != 503 || ev.Time.Before(run.Start) || ev.Time.After(run.End) {
			t.Fatalf("non-OK event %+v outside the run [%v, %v] or not a 503", ev, run.Start, run.End)
		}
	}
}
