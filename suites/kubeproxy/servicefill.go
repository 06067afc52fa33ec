package kubeproxy

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// The two claims that read HYBRID's 10,000 extra Services.
const (
	ServiceScaleClaim  = "kubeproxy.service-scale"
	NewConnectionClaim = "kubeproxy.new-connection-growth"
)

// serviceFill is one fill of extra Services and what both scale claims
// read across it: each phase with none, the fill (createFillers), each
// phase with N, the fill deleted. At scale 1 a fill of 10,000 Services
// took about 12 minutes on the local provider (created, synced, deleted),
// so it is made once per run and mode and shared, as GUIDE's loads are.
type serviceFill struct {
	N  int
	By string // the claim whose spec made it
	// Service timings (kubeproxy.service-scale) with 0 and with N.
	QuietReadings, LoadedReadings []steps.ServiceReading
	// New-connection batch means in ms (kubeproxy.new-connection-growth)
	// with 0 and with N; nil when the fill was made without them.
	QuietConnMs, LoadedConnMs []float64
	// ConnErr is a new-connection phase's failure: new-connection-growth
	// fails with it, while service-scale's timings go on without it.
	ConnErr  error
	NATRules int64 // kube-proxy's nat rules with N, where readable
}

var serviceFills scenario.SharedMeasurement[*serviceFill]

// serviceFillOf returns r's mode's fill, made on first use. withConn asks
// for the new-connection phases: a fill made without them (by a spec that
// ran when new-connection-growth was not to run) is not reused for them.
func serviceFillOf(ctx context.Context, r *spec.Run, withConn bool) (*serviceFill, error) {
	n := fillerCount(r)
	key := fmt.Sprintf("%s/%s/%d", r.Env.Config.RunID, r.Mode, n)
	f, err := serviceFills.Get(r, key, func() (*serviceFill, error) { return makeServiceFill(ctx, r, n, withConn) })
	if err == nil && withConn && f.QuietConnMs == nil && f.ConnErr == nil {
		r.Logf("the run's fill of %d Services (by %s) has no new-connection phases; making one with them", n, f.By)
		return makeServiceFill(ctx, r, n, true)
	}
	return f, err
}

// fillNeedsConn says whether a fill made for kubeproxy.service-scale should
// carry the new-connection phases: when new-connection-growth runs in this
// run and mode and can be judged (HYBRID's 10,000 Services), so that it
// reads the same fill instead of making its own.
func fillNeedsConn(r *spec.Run) bool {
	return fillerCount(r) >= documentedServices && selects(r, NewConnectionClaim, r.Mode)
}

// selects says whether the run's selection (scenario.SelectedSpecs) runs claim in
// mode m; when that cannot be known, it says yes: measure the phases
// rather than lose them.
func selects(r *spec.Run, claim string, m mode.Mode) bool {
	if r.Env.Selected == nil && r.Env.Registry == nil {
		return true
	}
	sel, err := scenario.SelectedSpecs(r)
	if err != nil {
		return true
	}
	for _, p := range sel {
		if p.Claim.ID == claim && p.Mode == m {
			return true
		}
	}
	return false
}

// makeServiceFill makes one fill of n extra Services. The phases nest
// around the fill (Service timings, new connections, fill, new
// connections, Service timings), so each claim's phases with 0 and with n
// stay as close in time as before, and the host's drift between them as
// small.
func makeServiceFill(ctx context.Context, r *spec.Run, n int, withConn bool) (*serviceFill, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	t := scenario.Target(r)
	f := &serviceFill{N: n, By: r.Claim.ID}
	var url string
	batches := newConnectionSamples / wp.MaxProbes
	if withConn {
		svc, err := m.Kube.Client.CoreV1().Services(t.Namespace).Get(ctx, fixtures.EchoName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		url = fmt.Sprintf("http://%s:%d/", svc.Spec.ClusterIP, fixtures.EchoHTTPPort)
	}
	if f.QuietReadings, err = steps.TimeServices(ctx, r, t, "svc-quiet"); err != nil {
		return nil, err
	}
	if withConn {
		f.QuietConnMs, f.ConnErr = newConnectionBatches(ctx, r, url, batches)
	}
	cleanup, rules, err := createFillers(ctx, r, n)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	f.NATRules = rules
	if withConn && f.ConnErr == nil {
		f.LoadedConnMs, f.ConnErr = newConnectionBatches(ctx, r, url, batches)
	}
	if f.LoadedReadings, err = steps.TimeServices(ctx, r, t, "svc-loaded"); err != nil {
		return nil, err
	}
	return f, nil
}

// fillSetup is what a reader's setup adds about the fill it read.
func fillSetup(r *spec.Run, f *serviceFill) string {
	if f.By == r.Claim.ID {
		if f.QuietConnMs == nil && f.ConnErr == nil {
			return fmt.Sprintf("; the fill of %d extra Services is made once per run and mode, without %s's phases (it does not run here)", f.N, NewConnectionClaim)
		}
		return fmt.Sprintf("; the fill of %d extra Services is made once per run and mode and read by both scale claims (%s, %s)", f.N, ServiceScaleClaim, NewConnectionClaim)
	}
	return fmt.Sprintf("; read from the fill of %d extra Services made by %s in this run and mode (made once, read by both scale claims)", f.N, f.By)
}
