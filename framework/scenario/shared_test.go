package scenario

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// A shared measurement runs once; the spec that reuses it lists the same raw
// results and setup as the one that made it.
func TestMemoSharesRawAndSetup(t *testing.T) {
	reg := claimstest.Registry(t)
	d, err := report.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := &spec.Env{Results: d}
	first := spec.NewRun(reg.MustGet("latency.all-ok"), mode.None, env, nil)
	second := spec.NewRun(reg.MustGet("latency.percentiles"), mode.None, env, nil)
	var m SharedMeasurement[int]
	calls := 0
	f := func(r *spec.Run) func() (int, error) {
		return func() (int, error) {
			calls++
			r.SetSetup("200 qps")
			return 42, r.SaveRaw("steady-none", []byte("{}"), nil)
		}
	}
	if v, err := m.Get(first, "k", f(first)); v != 42 || err != nil {
		t.Fatal(v, err)
	}
	if v, err := m.Get(second, "k", f(second)); v != 42 || err != nil {
		t.Fatal(v, err)
	}
	if calls != 1 {
		t.Fatalf("measured %d times", calls)
	}
	if len(second.Raw()) != 1 || second.Raw()[0] != first.Raw()[0] || second.Setup() != "200 qps" {
		t.Fatalf("reuse: raw %v setup %q", second.Raw(), second.Setup())
	}
}

// Shared measurements of different keys run at once (each mode's rollout
// load under -concurrent-modes), and one key still runs once however many
// callers ask at the same time.
func TestSharedMeasurementRunsKeysAtOnceAndEachOnce(t *testing.T) {
	reg := claimstest.Registry(t)
	env := &spec.Env{}
	var m SharedMeasurement[int]
	started := make(chan struct{}, 2)
	both := make(chan struct{})
	var calls atomic.Int32
	f := func() (int, error) {
		calls.Add(1)
		started <- struct{}{}
		select {
		case <-both:
		case <-time.After(10 * time.Second):
			t.Error("the other key's measurement did not start while this one ran: keys are serialized")
		}
		return 1, nil
	}
	var wg sync.WaitGroup
	for _, k := range []string{"none", "sidecar", "none", "sidecar"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := spec.NewRun(reg.MustGet("rollout.baseline"), mode.None, env, nil)
			if v, err := m.Get(r, k, f); v != 1 || err != nil {
				t.Errorf("%s: %d %v", k, v, err)
			}
		}()
	}
	<-started
	<-started
	close(both)
	wg.Wait()
	if n := calls.Load(); n != 2 {
		t.Fatalf("measured %d times for 2 keys", n)
	}
}
