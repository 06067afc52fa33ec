package loadplan_test

import (
	"io"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Before anything runs, the budget is the total Write prints, with and
// without loads at once and with and without measured costs.
func TestBudgetStartsAtThePlansTotal(t *testing.T) {
	modes := []mode.Mode{mode.None, mode.Sidecar}
	specs := concurrentSpecs()
	costs := &loadplan.Costs{Run: "r", Scale: 1, SetUp: 3 * time.Minute, Beyond: map[string]time.Duration{
		loadplan.Key("rollout.baseline", mode.None): 20 * time.Second, loadplan.Key("latency.percentiles", mode.None): 5 * time.Second}}
	ref := func(d time.Duration) time.Duration { return d / 2 }
	for name, c := range map[string]struct {
		costs *loadplan.Costs
		at    loadplan.Concurrency
	}{
		"alone, no costs":        {nil, loadplan.Concurrency{}},
		"alone, costs":           {costs, loadplan.Concurrency{}},
		"at once, costs":         {costs, loadplan.Concurrency{On: true, Reference: ref}},
		"at once, no reference":  {nil, loadplan.Concurrency{On: true}},
		"at once, no costs, ref": {nil, loadplan.Concurrency{On: true, Reference: ref}},
	} {
		t.Run(name, func(t *testing.T) {
			e := loadplan.Write(io.Discard, modes, 1, specs, c.costs, c.at)
			left, unknown := loadplan.NewBudget(modes, specs, c.costs, c.at).Left(false, nil)
			if left != e.Total() || unknown != e.Unknown {
				t.Errorf("budget before the run: %s with %d unknown; the plan says %s with %d unknown", left, unknown, e.Total(), e.Unknown)
			}
		})
	}
}

// As specs finish, what they ran leaves the budget once: a shared load
// read by an unfinished spec is not counted again, a group at once leaves
// whole when one of its loads ran, and at the end nothing is left.
func TestBudgetShrinksByWhatRan(t *testing.T) {
	modes := []mode.Mode{mode.None, mode.Sidecar}
	specs := concurrentSpecs()
	d := 10 * time.Minute
	costs := &loadplan.Costs{Run: "r", Scale: 1, SetUp: 3 * time.Minute, Beyond: map[string]time.Duration{}}
	for _, s := range specs {
		costs.Beyond[loadplan.Key(s.Claim, s.Mode)] = time.Second
	}
	for name, c := range map[string]struct {
		at   loadplan.Concurrency
		done []string
		want time.Duration
	}{
		// Loads: baseline none, hardened none, baseline sidecar,
		// hardened sidecar (10 min each) and steady none (1 min).
		"nothing":                      {loadplan.Concurrency{}, nil, 3*time.Minute + 7*time.Second + 4*d + time.Minute},
		"baseline none's first reader": {loadplan.Concurrency{}, []string{"rollout.baseline [none]"}, 6*time.Second + 3*d + time.Minute},
		"both readers of baseline none": {loadplan.Concurrency{}, []string{"rollout.baseline [none]", "rollout.no-response-cause [none]"},
			5*time.Second + 3*d + time.Minute},
		// At once: the baseline group (none + sidecar) and the hardened
		// group run as one each.
		"at once, nothing": {loadplan.Concurrency{On: true}, nil, 3*time.Minute + 7*time.Second + 2*d + time.Minute},
		"at once, baseline none ran": {loadplan.Concurrency{On: true}, []string{"rollout.baseline [none]"},
			6*time.Second + d + time.Minute},
		"everything": {loadplan.Concurrency{}, []string{"rollout.baseline [none]", "rollout.no-response-cause [none]", "rollout.hardened [none]",
			"rollout.baseline [sidecar]", "rollout.no-response-cause [sidecar]", "rollout.hardened [sidecar]", "latency.percentiles [none]"}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			done := map[string]bool{}
			for _, k := range c.done {
				done[k] = true
			}
			left, unknown := loadplan.NewBudget(modes, specs, costs, c.at).Left(c.done != nil, done)
			if left != c.want || unknown != 0 {
				t.Errorf("left %s (%d unknown), want %s", left, unknown, c.want)
			}
		})
	}
}

// Unknown costs are counted, not guessed: without an earlier run's costs
// each unfinished spec and the set-up are unknown.
func TestBudgetCountsUnknownCosts(t *testing.T) {
	specs := concurrentSpecs()
	b := loadplan.NewBudget([]mode.Mode{mode.None, mode.Sidecar}, specs, nil, loadplan.Concurrency{})
	if _, unknown := b.Left(false, nil); unknown != len(specs)+1 {
		t.Errorf("unknown before the run = %d, want %d (every spec and the set-up)", unknown, len(specs)+1)
	}
	if _, unknown := b.Left(true, map[string]bool{"rollout.baseline [none]": true}); unknown != len(specs)-1 {
		t.Errorf("unknown after set-up and one spec = %d, want %d", unknown, len(specs)-1)
	}
}
