package rollout_test

import (
	"fmt"
	"time"

	"github.com/meshclaims/meshclaims/framework/rollout"
)

// Errors placed on the rollout timeline: each belongs to the cycle that was
// running (or had last started) when it happened.
func ExampleCountPerCycle() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cycles := []rollout.Cycle{
		{Index: 0, Start: t0, End: t0.Add(14 * time.Second)},
		{Index: 1, Start: t0.Add(14 * time.Second), End: t0.Add(29 * time.Second)},
	}
	errs := []time.Time{t0.Add(-time.Second), t0.Add(3 * time.Second), t0.Add(15 * time.Second), t0.Add(16 * time.Second)}
	per, before := rollout.CountPerCycle(errs, cycles)
	fmt.Println(per, before)
	// Output: [1 2] 1
}
