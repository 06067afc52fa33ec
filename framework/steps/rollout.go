package steps

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/fixtures/workload/collector"
	"github.com/meshclaims/meshclaims/fixtures/workload/orderclient"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// RolloutResult is one T1 run: the load, the restart cycles, and the -1s
// placed on the cycles' timeline; AccessLog is what the client sidecar's
// access log and echo's pod watch kept of it, in the run that has them
// (AccessLogOn), else nil.
type RolloutResult struct {
	Load      *load.Run
	Cycles    []rollout.Cycle
	PerCycle  []int // explained -1s per cycle
	Before    int   // explained -1s before the first cycle
	AccessLog *AccessLogCapture
	// AtOnce is set when the load ran at once with other modes'
	// (-concurrent-modes, concurrent.go); nil when it ran alone.
	AtOnce *AtOnce
}

// Requests is the number of requests of the load.
func (x *RolloutResult) Requests() int64 { return x.Load.Result.Requests() }

// Count503 is the number of 503 answers.
func (x *RolloutResult) Count503() int64 {
	return x.Load.Result.RetCodes[http.StatusServiceUnavailable]
}

// Measurement is the run as a rate measurement, with cycles and errors per cycle.
func (x *RolloutResult) Measurement() verdict.Measurement {
	m := Rates(x.Load, http.StatusServiceUnavailable)
	m.Extra["cycles"] = float64(len(x.Cycles))
	if pc, err := stats.ErrorsPerCycle(x.Count503()+x.Load.SocketErrors(), len(x.Cycles)); err == nil {
		m.Extra["errors_per_cycle"] = pc.PerCycle
	}
	worst := 0
	for _, n := range x.PerCycle {
		worst = max(worst, n)
	}
	m.Extra["max_no_response_in_a_cycle"] = float64(worst)
	x.AtOnce.addTo(m.Extra, "")
	return m
}

var rollouts scenario.SharedMeasurement[*RolloutResult]

// RolloutLoad is GUIDE T1 in mode m as the claim's setup states it (100 qps,
// 16 keep-alive connections, 600 s, scaled), -allow-initial-errors, while
// deployment/echo is restarted and waited for (60 s limit) again and again
// until the load ends. With a non-zero hardening, echo is patched first (and
// restored after). Shared per mode, hardening and load (rolloutKey) between
// the claims that state the same load (rollout.baseline,
// rollout.no-response-cause, rollout.l7-vs-sidecar, rollout.503-attribution,
// the hardened runs' references): whichever of them runs first makes it.
// The sidecar baseline run (AccessLogOn) also has the client sidecar's
// access log on and echo's pods watched for rollout.503-attribution: the
// Telemetry is applied and shown working before the load and removed (and
// awaited removed) as soon as the run has read the log, before RolloutLoad
// returns, so no later load is measured with it.
func RolloutLoad(ctx context.Context, r *spec.Run, m mode.Mode, h fixtures.Hardening) (*RolloutResult, error) {
	s, err := rolloutSpec(r, m)
	if err != nil {
		return nil, err
	}
	if res, ok, err := concurrentRollout(ctx, r, m, h, s); ok {
		return res, err
	}
	return rollouts.Get(r, rolloutKey(r, m, h, s), func() (*RolloutResult, error) {
		mesh, err := scenario.ClusterOf(r)
		if err != nil {
			return nil, err
		}
		if h.Any() {
			if err := Harden(ctx, r, m, h); err != nil {
				return nil, err
			}
		}
		var logged *accessLogRun
		if AccessLogOn(m, h) {
			if logged, err = startAccessLog(ctx, r, mesh, m); err != nil {
				return nil, err
			}
			defer logged.stopWatch()
		}
		if err := scenario.Quiesce(ctx, r, m); err != nil {
			return nil, err
		}
		r.SetSetup("%s", rolloutSetup(r, m, h, s))
		if err := mesh.Kube.CheckWrite(ctx); err != nil {
			return nil, err
		}
		if logged != nil {
			logged.startWatch(ctx, mesh, m.Namespace())
		}
		driver, err := NewDeploymentDriver(mesh, m.Namespace(), fixtures.EchoName)
		if err != nil {
			return nil, err
		}
		res, err := underLoad(ctx, r, scenario.InMeshOf(r, m), rolloutName(m, h), s, driver)
		if err != nil {
			return nil, err
		}
		if logged != nil {
			res.AccessLog = logged.finish(ctx, res.Load)
		}
		return res, nil
	})
}

// rolloutSetup is the setup T1 run (m, h) of load s states: the load, the
// restart loop's limit, the hardening and, in the run with the access log
// on, that it was.
func rolloutSetup(r *spec.Run, m mode.Mode, h fixtures.Hardening, s load.Spec) string {
	setup := fmt.Sprintf("%s, restart loop with %s limit; hardening %+v", DescribeLoad(r, s), r.Env.Config.Timeouts.RolloutComplete, h)
	if AccessLogOn(m, h) {
		setup += "; " + accessLogSetup
	}
	return setup
}

// accessLogSetup is what the setup of the run with the access log on
// (AccessLogOn) says of it: the record of every claim that reads the run
// (rollout.baseline's too) states that the access log was on.
var accessLogSetup = fmt.Sprintf("the client's sidecar had its access log on during the load, for rollout.503-attribution (Telemetry %s, provider %s: Envoy's file logger, one line per request buffered and written by its flush thread each second; applied and shown working before the load, removed after it, no listener change during it), echo's pods watched",
	fixtures.ClientAccessLogName, fixtures.AccessLogProvider)

// rolloutKey is the T1 run's key among the shared runs: one per run, mode,
// hardening and load. Every claim that states the same load in mode m
// (whatever its own mode: rollout.l7-vs-sidecar reads sidecar's) gets the
// same key, so the run is made once.
func rolloutKey(r *spec.Run, m mode.Mode, h fixtures.Hardening, s load.Spec) string {
	return fmt.Sprintf("%s/%s/%+v/%g/%d/%s", r.Env.Config.RunID, m, h, s.QPS, s.Connections, s.Duration)
}

// rolloutSpec is T1's load against mode m's echo as the claim's setup
// states it, scaled: RolloutLoad runs it and RolloutLoads declares it.
func rolloutSpec(r *spec.Run, m mode.Mode) (load.Spec, error) {
	s, err := SetupLoad(r, scenario.EchoURLOf(m), RolloutFloor)
	if err != nil {
		return load.Spec{}, err
	}
	s.AllowInitialErrors = true
	// LogErrors: each 503 is logged with its time, for the report's timeline.
	s.LogErrors = true
	return s, nil
}

func rolloutName(m mode.Mode, h fixtures.Hardening) string {
	return fmt.Sprintf("rollout-%s-%s", m, hardeningName(h))
}

// RolloutDeclared is the T1 run RolloutLoad makes in mode m with hardening
// h, as the plan lists it.
func RolloutDeclared(r *spec.Run, m mode.Mode, h fixtures.Hardening) (loadplan.Load, error) {
	s, err := rolloutSpec(r, m)
	if err != nil {
		return loadplan.Load{}, err
	}
	l := Declared(m, rolloutName(m, h), s)
	l.Restarts = true
	l.Alongside = rolloutAlongside(h, s)
	return l, nil
}

// RolloutLoads declares the T1 runs a spec makes: one per (mode, hardening)
// pair, r.Mode for a zero Mode.
func RolloutLoads(runs ...RolloutRun) func(r *spec.Run) ([]loadplan.Load, error) {
	return func(r *spec.Run) ([]loadplan.Load, error) {
		var out []loadplan.Load
		for _, x := range runs {
			m := x.Mode
			if m == "" {
				m = r.Mode
			}
			h := x.Hardening
			if x.Harden != nil {
				h = x.Harden(r.Mode)
			}
			l, err := RolloutDeclared(r, m, h)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
		return out, nil
	}
}

// RolloutRun names one T1 run of a spec: its mode ("" = the spec's) and
// hardening (Harden, when set, chooses it from the spec's mode).
type RolloutRun struct {
	Mode      mode.Mode
	Hardening fixtures.Hardening
	Harden    func(mode.Mode) fixtures.Hardening
}

// underLoad runs the load and, concurrently, the restart loop until the load
// ends; progress lines say elapsed and remaining time, cycles and errors.
func underLoad(ctx context.Context, r *spec.Run, c probe.Client, name string, s load.Spec, d rollout.Driver) (*RolloutResult, error) {
	type loaded struct {
		run *load.Run
		err error
	}
	done := make(chan loaded, 1)
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		run, err := runLoad(ctx, r, c, name, s, stop)
		done <- loaded{run, err}
	}()
	until := start.Add(s.Duration)
	errorsSoFar := progressTally(ctx, r, c, start)
	mon, why := newCycleMonitor(ctx, r, c, name, s, start)
	stopped := StoppedFull
	if mon == nil {
		r.Logf("load %s runs its full %s: no sequential stop (%s)", name, s.Duration, why)
		stopped = fmt.Sprintf("%s (no sequential stop: %s)", StoppedFull, why)
	}
	full := stopped
	loopCtx, endLoop := context.WithCancel(ctx)
	defer endLoop()
	cycles, cerr := rollout.Run(loopCtx, d, until, r.Env.Config.Timeouts.RolloutComplete, func(cy rollout.Cycle) {
		state := "complete"
		if cy.Err != nil {
			state = "NOT complete: " + cy.Error
		}
		r.Logf("rollout cycle %d %s in %s; %s elapsed, %s of load left; %s", cy.Index+1, state,
			cy.Duration().Round(time.Second), time.Since(start).Round(time.Second), max(0, time.Until(until)).Round(time.Second), errorsSoFar())
		if mon == nil || stopped != full {
			return
		}
		ok, reason, err := mon.add(cy)
		if err != nil {
			// Monitoring is an economy, not the measurement: the load
			// runs on to its full duration.
			r.Logf("sequential stop off for %s: %v", name, err)
			mon = nil
			return
		}
		if ok {
			stopped = reason
			r.Logf("load %s stops: %s", name, reason)
			close(stop)
			endLoop()
		}
	})
	if stopped != full && errors.Is(cerr, context.Canceled) && ctx.Err() == nil {
		cerr = nil // the loop ended because the load stopped early
	}
	l := <-done
	if l.err != nil {
		return nil, l.err
	}
	ran := Declared(modeOf(c), name, s)
	ran.Restarts = true
	r.Ran(loadplan.LoadRan{Load: ran, Took: l.run.Result.ActualDuration, Requests: l.run.Result.Requests(), Cycles: len(cycles), Stopped: stopped})
	if cerr != nil {
		// A rollout that overran its limit is part of the measurement (GUIDE
		// kept looping); it is reported, not fatal.
		r.Logf("rollout loop: %v", cerr)
	}
	res := &RolloutResult{Load: l.run, Cycles: cycles}
	res.PerCycle, res.Before = rollout.CountPerCycle(l.run.FailureTimes(), cycles)
	// The timeline (cycles and timed -1s) is kept beside the fortio result:
	// report.html draws errors per cycle from it.
	if tl, err := report.TimelineOf(l.run, cycles).Marshal(); err != nil {
		return nil, err
	} else if err := r.SaveRaw(name+strings.TrimSuffix(report.TimelineSuffix, ".json"), tl, nil); err != nil {
		return nil, err
	}
	r.Logf("%d cycles; 503: %d, -1: %d of %d requests; -1 per cycle %v", len(cycles), res.Count503(), l.run.SocketErrors(), res.Requests(), res.PerCycle)
	return res, nil
}

// Harden patches mode m's echo with h for the rest of the spec and waits
// for the rollout; the unhardened echo is restored afterwards.
func Harden(ctx context.Context, r *spec.Run, m mode.Mode, h fixtures.Hardening) error {
	mesh, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	t := fixtures.Target{Namespace: m.Namespace(), Run: r.Env.Config.RunID}
	o := mesh.Options
	if err := mesh.Applier.Apply(ctx, fixtures.Harden(fixtures.Echo(t, o.Images, o.EchoReplicas), h)); err != nil {
		return err
	}
	r.Defer(func(ctx context.Context) error {
		if err := mesh.Applier.Apply(ctx, fixtures.Echo(t, o.Images, o.EchoReplicas)); err != nil {
			return err
		}
		if err := mesh.Kube.WaitAvailable(ctx, t.Namespace, r.Env.Config.Timeouts.WorkloadsReady, fixtures.EchoName); err != nil {
			return err
		}
		return mesh.Kube.WaitQuiet(ctx, t.Namespace, fixtures.EchoName, r.Env.Config.Timeouts.Quiet)
	})
	r.Logf("echo hardened: %+v", h)
	return mesh.Kube.WaitAvailable(ctx, t.Namespace, r.Env.Config.Timeouts.WorkloadsReady, fixtures.EchoName)
}

// OrdersDuringRollout is GUIDE T2: reset the collector, let order-client send
// 20 POST/s for the claim's setup duration (300 s, scaled) while
// deployment/order restarts in a loop, then count sent, failed and
// duplicate executions.
func OrdersDuringRollout(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	decl, err := ordersDeclared(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	mesh, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	ns := r.Namespace()
	coll := probe.Client{Namespace: ns, Selector: fixtures.LabelApp + "=" + fixtures.CollectorName, Port: fixtures.CollectorPort}
	oc := probe.Client{Namespace: ns, Selector: fixtures.LabelApp + "=" + fixtures.OrderClientName, Port: fixtures.OrderClientPort}
	call := func(c probe.Client, method, path string, out any) error {
		return podCall(ctx, r, c, method, path, nil, time.Minute, method == http.MethodGet, out)
	}
	if err := call(coll, http.MethodPost, "/reset", nil); err != nil {
		return verdict.Measurement{}, err
	}
	// order-client is deployed with 0 replicas (it sends from its first
	// second): start it only now that the collector is reset, stop it after.
	if err := scale(ctx, mesh, ns, fixtures.OrderClientName, 1); err != nil {
		return verdict.Measurement{}, err
	}
	r.Defer(func(ctx context.Context) error { return scale(ctx, mesh, ns, fixtures.OrderClientName, 0) })
	if err := mesh.Kube.WaitAvailable(ctx, ns, r.Env.Config.Timeouts.WorkloadsReady, fixtures.OrderClientName); err != nil {
		return verdict.Measurement{}, err
	}
	var before orderclient.Stats
	if err := call(oc, http.MethodGet, "/stats", &before); err != nil {
		return verdict.Measurement{}, err
	}
	// The retrying proxy's counter, before and after: without a retry,
	// zero duplicates is no evidence (NoRetries).
	proxy, noProxy := RetryProxyOf(r.Mode, ns)
	var retriesBefore map[string]uint64
	if noProxy == nil {
		if retriesBefore, err = RetryCounts(ctx, r, proxy); err != nil {
			return verdict.Measurement{}, err
		}
	}
	dur := decl.Duration
	r.SetSetup("order-client %g POST/s for %s while order restarts (documented: %s); collector reset first", decl.QPS, dur, r.Claim.Setup.Duration)
	driver, err := NewDeploymentDriver(mesh, ns, fixtures.OrderName)
	if err != nil {
		return verdict.Measurement{}, err
	}
	start := time.Now()
	cycles, lerr := rollout.Run(ctx, driver, start.Add(dur), r.Env.Config.Timeouts.RolloutComplete, func(c rollout.Cycle) {
		r.Logf("order rollout cycle %d done in %s; %s elapsed, %s left", c.Index+1, c.Duration().Round(time.Second), time.Since(start).Round(time.Second), time.Until(start.Add(dur)).Round(time.Second))
	})
	if lerr != nil {
		r.Logf("rollout loop: %v", lerr)
	}
	ran := loadplan.LoadRan{Load: decl, Took: time.Since(start), Cycles: len(cycles), Stopped: StoppedFull}
	time.Sleep(5 * time.Second) // let in-flight orders (3 s client timeout) finish
	var after orderclient.Stats
	if err := call(oc, http.MethodGet, "/stats", &after); err != nil {
		r.Ran(ran)
		return verdict.Measurement{}, err
	}
	// The load's requests are the orders order-client sent in it (its own
	// counter), as a fortio load's are fortio's: without them the report's
	// loads table said 0 of T2's 6000 planned (the bench run of 2026-12-03).
	ran.Requests = after.Sent - before.Sent
	r.Ran(ran)
	var dupes collector.Dupes
	if err := call(coll, http.MethodGet, "/dupes", &dupes); err != nil {
		return verdict.Measurement{}, err
	}
	sent := after.Sent - before.Sent
	failed := after.Failed - before.Failed
	extra := map[string]float64{"cycles": float64(len(cycles)), "sent": float64(sent), "client_failures": float64(failed), "collector_ids": float64(dupes.TotalIDs)}
	for cause, n := range after.FailuresByCause {
		extra["failures_"+cause] = float64(n - before.FailuresByCause[cause])
	}
	got := verdict.Measurement{Count: verdict.Int64(int64(dupes.DupeCount)), Total: verdict.Int64(sent), Extra: extra}
	if noProxy != nil {
		got.Unmet = "retries: " + noProxy.Error()
		return got, nil
	}
	retriesAfter, err := RetryCounts(ctx, r, proxy)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err = WithRetries(got, proxy, retriesBefore, retriesAfter)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("%s: %v retries on %s during the run (pods %v -> %v)", proxy.What, got.Extra["proxy_retries"], proxy.Cluster, retriesBefore, retriesAfter)
	return got, nil
}

// ordersDeclared is T2's run in the spec's mode: order-client's POSTs for
// the claim's setup duration (scaled, never under 30 s) while order
// restarts in a loop.
func ordersDeclared(r *spec.Run) (loadplan.Load, error) {
	documented, err := time.ParseDuration(r.Claim.Setup.Duration)
	if err != nil || documented <= 0 {
		return loadplan.Load{}, fmt.Errorf("claim %s: its registry setup states no duration (%q), so T2 has no length", r.Claim.ID, r.Claim.Setup.Duration)
	}
	return loadplan.Load{Name: "orders-" + string(r.Mode), Mode: r.Mode, Duration: r.Env.Config.Scale(documented, 30*time.Second), QPS: orderclient.DefaultRate, Restarts: true}, nil
}

// T2Loads declares T2's run (shared by the claims that call T2).
func T2Loads(r *spec.Run) ([]loadplan.Load, error) {
	l, err := ordersDeclared(r)
	return []loadplan.Load{l}, err
}

// orders runs T2 once per run and mode: GUIDE judged duplicates and
// client-visible failures (and so that retries fired) on the same run.
var orders scenario.SharedMeasurement[verdict.Measurement]

// T2 applies order's retry VirtualService and runs OrdersDuringRollout
// once per run, mode and length; retry.no-duplicates and retry.fired share it.
func T2(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	key := fmt.Sprintf("%s/%s/%s", r.Env.Config.RunID, r.Mode, r.Claim.Setup.Duration)
	return orders.Get(r, key, func() (verdict.Measurement, error) {
		if err := scenario.Apply(ctx, r, fixtures.OrderRetries(scenario.Target(r))); err != nil {
			return verdict.Measurement{}, err
		}
		return OrdersDuringRollout(ctx, r)
	})
}

// RetriesFired turns T2's duplicate measurement into retry.fired's: the
// client-visible failures of the orders sent, and the retrying proxy's count
// as the claim's own property. No retry counted contradicts "retries were
// actively firing" (not a precondition, as it is for the duplicate count); a
// mode without a retrying proxy, or a reading that failed, stays unmet.
func RetriesFired(dup verdict.Measurement) verdict.Measurement {
	got := verdict.Measurement{Extra: map[string]float64{}}
	for k, v := range dup.Extra {
		got.Extra[k] = v
	}
	if dup.Total != nil {
		got.Total = verdict.Int64(*dup.Total)
	}
	if f, ok := dup.Extra["client_failures"]; ok {
		got.Count = verdict.Int64(int64(f))
	}
	if dup.Count != nil {
		got.Extra["duplicates"] = float64(*dup.Count)
	}
	retries, read := dup.Extra["proxy_retries"]
	switch {
	case !read:
		got.Unmet = dup.Unmet
		if got.Unmet == "" {
			got.Unmet = "retries: the retrying proxy's counter was not read"
		}
	case retries == 0:
		got.Contradicts = dup.Unmet // NoRetries' sentence: which proxy, which counter
	}
	return got
}

// WithRetries adds the retrying proxy's counter readings to a duplicate
// count: the retries made in between (Extra proxy_retries) and, when there
// were none, Unmet, so the verdict is inconclusive instead of a zero that
// nothing could have made non-zero.
func WithRetries(got verdict.Measurement, p RetryProxy, before, after map[string]uint64) (verdict.Measurement, error) {
	retries, lost, err := RetryDelta(before, after)
	if err != nil {
		return verdict.Measurement{}, err
	}
	if got.Extra == nil {
		got.Extra = map[string]float64{}
	}
	got.Extra["proxy_retries"] = float64(retries)
	got.Extra["retry_pods_not_read_after"] = float64(len(lost))
	got.Unmet = NoRetries(p, retries)
	return got, nil
}

// scale sets a Deployment's replicas (a guarded write).
func scale(ctx context.Context, m *spec.Cluster, ns, name string, replicas int32) error {
	return m.Applier.Phase(ctx, fmt.Sprintf("scale %s/%s to %d", ns, name, replicas), func(ctx context.Context) error {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		_, err := m.Kube.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}

// progressTally returns a function that says how many requests failed (and
// how many dead sockets fortio silently retried) so far, from the client's
// log; 503s only appear in the result at the end.
func progressTally(ctx context.Context, r *spec.Run, c probe.Client, start time.Time) func() string {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return func() string { return "errors so far unknown" }
	}
	pod, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return func() string { return "errors so far unknown" }
	}
	src := load.PodLogs{Client: m.Kube.Client, Namespace: c.Namespace, Pod: pod.Name}
	return func() string {
		text, err := src.Logs(ctx, start, time.Now())
		if err != nil {
			return "errors so far unknown (" + err.Error() + ")"
		}
		f, rt := load.Tally(text)
		return fmt.Sprintf("no-response errors so far %d, dead-socket retries %d", f, rt)
	}
}

// hardeningName names a hardening for raw result files: "baseline",
// "prestop-grace", "drain", ... (load run names allow letters, digits, . _ -)
func hardeningName(h fixtures.Hardening) string {
	var parts []string
	if h.PreStopSleep {
		parts = append(parts, "prestop")
	}
	if h.GracePeriod {
		parts = append(parts, "grace")
	}
	if h.SidecarDrain {
		parts = append(parts, "drain")
	}
	if len(parts) == 0 {
		return "baseline"
	}
	return strings.Join(parts, "-")
}

// RolloutFloor is the shortest T1 load: 30 s leaves room for a few restart
// cycles.
const RolloutFloor = 30 * time.Second
