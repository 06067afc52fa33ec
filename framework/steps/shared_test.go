package steps

import (
	"testing"

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
	var m sharedMeasurement[int]
	calls := 0
	f := func(r *spec.Run) func() (int, error) {
		return func() (int, error) {
			calls++
			r.SetSetup("200 qps")
			return 42, r.SaveRaw("steady-none", []byte("{}"), nil)
		}
	}
	if v, err := m.get(first, "k", f(first)); v != 42 || err != nil {
		t.Fatal(v, err)
	}
	if v, err := m.get(second, "k", f(second)); v != 42 || err != nil {
		t.Fatal(v, err)
	}
	if calls != 1 {
		t.Fatalf("measured %d times", calls)
	}
	if len(second.Raw()) != 1 || second.Raw()[0] != first.Raw()[0] || second.Setup() != "200 qps" {
		t.Fatalf("reuse: raw %v setup %q", second.Raw(), second.Setup())
	}
}
