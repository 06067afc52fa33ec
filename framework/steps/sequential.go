package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/sequential"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// guideCycle is GUIDE T1's mean restart cycle (600 s over 42 sidecar
// cycles): it only tunes where the stopping boundary is tightest (the
// planned number of cycles), never its validity.
const guideCycle = 14 * time.Second

// Stoppable says whether load name may stop early and against which
// bands: only when every spec that reads it declares it as its only load
// and judges its 503 (and no-response) rates against bands
// (verdict.RateBands). A load another claim reads for something else (the
// baseline run's -1 causes, its 503s' attribution in sidecar mode, the
// l7-vs-sidecar ratio, hardening factors recorded beside the judged one)
// runs its full duration: its other verdicts are not certain. why says
// why not.
func Stoppable(ctx context.Context, r *spec.Run, name string) (names []string, bands []sequential.Band, noResponse []bool, why string) {
	if r.Env == nil || r.Env.Config == nil || r.Env.Registry == nil {
		return nil, nil, nil, "no run configuration"
	}
	if !r.Env.Config.Sequential {
		return nil, nil, nil, "-sequential=false"
	}
	planned, err := spec.Plan(r.Env.Registry, spec.Defs(), r.Env.Config.Modes)
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	specs, err := spec.PlanLoads(ctx, planned, r.Env)
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	readers := 0
	for _, s := range specs {
		reads := false
		for _, l := range s.Loads {
			reads = reads || l.Name == name
		}
		if !reads {
			continue
		}
		readers++
		if len(s.Loads) != 1 {
			return nil, nil, nil, fmt.Sprintf("%s [%s] reads it with other loads", s.Claim, s.Mode)
		}
		c, _ := r.Env.Registry.Get(s.Claim)
		ns, bs, ok := verdict.RateBands(c, s.Mode)
		if !ok {
			return nil, nil, nil, fmt.Sprintf("%s [%s] is not judged on its rates against bands alone", s.Claim, s.Mode)
		}
		for _, n := range ns {
			names = append(names, fmt.Sprintf("%s %s", s.Claim, n))
			noResponse = append(noResponse, n == verdict.NoResponseRate)
		}
		bands = append(bands, bs...)
	}
	if readers == 0 {
		return nil, nil, nil, "no spec declares it"
	}
	return names, bands, noResponse, ""
}

// cycleMonitor feeds a RateMonitor one restart cycle at a time from the
// client's log (each -1 and non-2xx line, timed), requests estimated as
// the paced rate times the cycle's length.
type cycleMonitor struct {
	mon   *sequential.RateMonitor
	qps   float64
	start time.Time
	logs  func(since, until time.Time) (string, error)
	// noResponse[i] says the monitor's i-th rate is a no-response rate
	// (else a 503 rate).
	noResponse []bool
}

// add judges cycle cy; stop is true once the verdict is certain.
func (m *cycleMonitor) add(cy rollout.Cycle) (stop bool, reason string, err error) {
	if cy.Err != nil || m.qps <= 0 {
		return false, "", nil
	}
	text, err := m.logs(m.start, time.Now())
	if err != nil {
		return false, "", err
	}
	noResp, unavailable := load.Live(text, m.start)
	in := func(ts []time.Time) (n int64) {
		for _, t := range ts {
			if !t.Before(cy.Start) && t.Before(cy.End) {
				n++
			}
		}
		return n
	}
	requests := int64(m.qps * cy.Duration().Seconds())
	if requests < 1 {
		return false, "", nil
	}
	n503, n1 := min(in(unavailable), requests), min(in(noResp), requests)
	counts := make([]int64, len(m.noResponse))
	for i, nr := range m.noResponse {
		counts[i] = n503
		if nr {
			counts[i] = n1
		}
	}
	return m.mon.AddCycle(counts, requests)
}

// newCycleMonitor is the sequential monitor of rollout load name, or nil
// and why the load runs its full duration.
func newCycleMonitor(ctx context.Context, r *spec.Run, c probe.Client, name string, s load.Spec, start time.Time) (*cycleMonitor, string) {
	names, bands, noResponse, why := Stoppable(ctx, r, name)
	if why != "" {
		return nil, why
	}
	planned := int(s.Duration / guideCycle)
	if planned < sequential.MinCycles {
		return nil, fmt.Sprintf("%s holds about %d restart cycles, fewer than the %d a sequential stop needs", s.Duration, planned, sequential.MinCycles)
	}
	mon, err := sequential.NewRateMonitor(1-verdict.Confidence, planned, names, bands)
	if err != nil {
		return nil, err.Error()
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err.Error()
	}
	pod, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return nil, err.Error()
	}
	src := load.PodLogs{Client: m.Kube.Client, Namespace: c.Namespace, Pod: pod.Name}
	return &cycleMonitor{mon: mon, qps: s.QPS, start: start, noResponse: noResponse,
		logs: func(since, until time.Time) (string, error) { return src.Logs(ctx, since, until) }}, ""
}
