package scenario

import (
	"context"
	"sync"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// sharedMeasurement runs each shared measurement once per run and mode: GUIDE measured
// percentiles, all-ok and the overhead from the same requests, and the
// ambient-l7/sidecar ratio from the same rollout runs as rollout.baseline.
// Each key has a lock of its own, so measurements of different keys may run
// at once (-concurrent-modes: each mode's rollout load) while a second
// caller of one key waits for the first.
type SharedMeasurement[T any] struct {
	mu   sync.Mutex
	done map[string]*sharedMeasurementEntry[T]
}

type sharedMeasurementEntry[T any] struct {
	mu    sync.Mutex // held while the first caller measures
	ran   bool
	v     T
	err   error
	raw   []string           // raw results the first run saved
	loads []loadplan.LoadRan // the loads it ran
	setup string             // and the setup it stated
}

// entry is key's entry, made on first use.
func (m *SharedMeasurement[T]) entry(key string) *sharedMeasurementEntry[T] {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		m.done = map[string]*sharedMeasurementEntry[T]{}
	}
	e, ok := m.done[key]
	if !ok {
		e = &sharedMeasurementEntry[T]{}
		m.done[key] = e
	}
	return e
}

// get runs f once per key. A later spec that reuses the result also lists
// the raw results and setup, so its report row points at the data it was
// judged on.
func (m *SharedMeasurement[T]) Get(r *spec.Run, key string, f func() (T, error)) (T, error) {
	e := m.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ran {
		r.Reuse(e.raw, e.loads, e.setup)
		return e.v, e.err
	}
	before, loadsBefore := len(r.Raw()), len(r.Loads())
	v, err := f()
	e.ran, e.v, e.err = true, v, err
	e.raw = append([]string(nil), r.Raw()[before:]...)
	e.loads = append([]loadplan.LoadRan(nil), r.Loads()[loadsBefore:]...)
	e.setup = r.Setup()
	return v, err
}

// Quiesce waits until echo in each mode is in a steady state (no pod still
// draining from an earlier rollout, endpoints exactly the ready pods) and
// gives the proxies a moment to program it: every load measures steady
// state, whatever spec ran before it.
func Quiesce(ctx context.Context, r *spec.Run, modes ...mode.Mode) error {
	m, err := ClusterOf(r)
	if err != nil {
		return err
	}
	for _, md := range modes {
		r.Touch(md.Namespace())
		if err := m.Kube.WaitQuiet(ctx, md.Namespace(), fixtures.EchoName, r.Env.Config.Timeouts.Quiet); err != nil {
			return err
		}
	}
	// Endpoints, not a policy: kube-proxy's and ztunnel's endpoint state
	// is not read here, so this stays a documented bounded wait, recorded.
	w, err := converge.Bounded(ctx, r.Env.Config.Timeouts.ProxySync, "the proxies to program settled endpoints", "endpoint programming is not read from kube-proxy or ztunnel: documented bounded wait (Timeouts.ProxySync)")
	r.AddWait(w)
	return err
}

// amendSetup adds to the setup a shared measurement's later readers get.
func (m *SharedMeasurement[T]) AmendSetup(key, more string) {
	e := m.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setup += more
}
