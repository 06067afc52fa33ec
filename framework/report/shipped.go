package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// ShippedRecords are the results directories, relative to the repository,
// that the project ships and a plan takes its costs from when the user has
// no run of their own to read (ShippedCosts), in the order they are
// preferred among equals:
//
//   - testdata/examples/local-none: none at -duration-scale=0.05, the
//     first of the two sample runs of that day, so its set-up built the
//     local cluster's images as a fresh clone's first run does (2m1s,
//     against 27s for the second, local-none-2, which is kept to measure
//     the plan against: BenchmarkPlanAgainstRecords);
//   - testdata/examples/local-none-sidecar: none and sidecar at 0.05 in one
//     run, the sidecar's specs' costs at the scale a quick run uses;
//   - testdata/bench/scale1/bench-0-fixed-sidecar and -fixed-none: sidecar
//     and none at scale 1 with fixed durations, as a run at 0.05 runs its
//     loads (sequential stopping needs 20 restart cycles, which no load at
//     0.05 reaches).
//
// All are the local provider's.
var ShippedRecords = []string{
	"testdata/examples/local-none",
	"testdata/examples/local-none-sidecar",
	"testdata/bench/scale1/bench-0-fixed-sidecar",
	"testdata/bench/scale1/bench-0-fixed-none",
}

// shipped is one shipped record's costs and what the plan says of it.
type shipped struct {
	rel      string
	provider string
	costs    *loadplan.Costs
}

// ShippedCosts is the costs a plan of modes at scale on provider takes
// from ShippedRecords under root (the repository), for the specs keys
// (loadplan.Key): for each mode the record that measured most of that
// mode's keys, a record of the plan's scale first, then the earlier in
// ShippedRecords; the records chosen are joined (each spec's cost from the
// first that measured it, the set-up the longest, as loadplan.MergeCosts
// does). From says which records and of what scale and provider; Notes
// what the plan still does not know from them (another provider, another
// scale, a mode no record measured). nil when no shipped record measured
// any of keys.
func ShippedCosts(root, provider string, scale float64, modes []mode.Mode, keys []string) *loadplan.Costs {
	var all []shipped
	for _, rel := range ShippedRecords {
		d := &Dir{Path: filepath.Join(root, filepath.FromSlash(rel))}
		env, err := d.LoadEnvironment()
		if err != nil {
			continue
		}
		c, err := d.Costs()
		if err != nil || (c.SetUp == 0 && len(c.Beyond) == 0) {
			continue
		}
		c.Run = env.RunID + " (" + rel + ")"
		all = append(all, shipped{rel: rel, provider: env.Provider, costs: c})
	}
	var chosen []shipped
	var unrecorded []string
	for _, m := range modes {
		best, bestCovered, bestSame := -1, 0, false
		for i, s := range all {
			covered := 0
			for _, k := range keys {
				if _, ok := s.costs.Beyond[k]; ok && hasMode(k, m) {
					covered++
				}
			}
			same := s.costs.Scale == scale
			if covered == 0 {
				continue
			}
			if best < 0 || (same && !bestSame) || (same == bestSame && covered > bestCovered) {
				best, bestCovered, bestSame = i, covered, same
			}
		}
		switch {
		case best < 0:
			unrecorded = append(unrecorded, string(m))
		case !slices.ContainsFunc(chosen, func(s shipped) bool { return s.rel == all[best].rel }):
			chosen = append(chosen, all[best])
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	out := &loadplan.Costs{Scale: chosen[0].costs.Scale, Beyond: map[string]time.Duration{}, Whole: map[string]time.Duration{}}
	var runs []string
	otherScale := false
	for _, s := range chosen {
		c := s.costs
		runs = append(runs, c.Run)
		out.Absorb(c)
		covered := 0
		for _, k := range keys {
			if _, ok := c.Beyond[k]; ok {
				covered++
			}
		}
		line := fmt.Sprintf("%s: %s provider, -duration-scale=%g, set-up %s, %d of this plan's %d specs", c.Run, s.provider, c.Scale, c.SetUp.Round(time.Second), covered, len(keys))
		if c.Scale != scale {
			if !otherScale {
				// Scale is the plan's only if every record's is.
				out.Scale = c.Scale
			}
			otherScale = true
			line += fmt.Sprintf(" (at scale %g: a spec whose loads are not declared is counted with its loads as they ran there)", c.Scale)
		}
		out.From = append(out.From, line)
		if s.provider != provider {
			out.Notes = append(out.Notes, otherProvider(s.provider, provider))
		}
	}
	out.Run = strings.Join(runs, " + ")
	if !otherScale {
		out.Scale = scale
	} else {
		out.Notes = append(out.Notes, "costs that scale with -duration-scale (kubeproxy's extra Services, the loads of specs that do not declare them) are those of the record's scale, not this plan's")
	}
	if len(unrecorded) > 0 {
		// A mode's set-up can exceed the records' (ambient's ztunnel and
		// CNI node agent), so the set-up taken is a floor.
		out.Notes = append(out.Notes, fmt.Sprintf("no record measured the mode(s) %s: their specs' costs are unknown, and the set-up they need may take longer than the records'", strings.Join(unrecorded, ", ")))
	}
	out.Notes = slices.Compact(out.Notes)
	return out
}

// otherProvider says what a record of provider rec leaves out of a plan
// for provider plan.
func otherProvider(rec, plan string) string {
	switch plan {
	case "kind":
		return fmt.Sprintf("these are the %s provider's costs; kind's set-up also creates its cluster's nodes and loads the images into them, and its specs wait on 3 nodes: a kind run takes longer (README: How long a run takes)", rec)
	case "existing":
		return fmt.Sprintf("these are the %s provider's costs; an existing cluster's set-up creates no cluster, and its specs' waits depend on that cluster", rec)
	default:
		return fmt.Sprintf("these are the %s provider's costs, not the %s provider's", rec, plan)
	}
}

func hasMode(key string, m mode.Mode) bool {
	suffix := " [" + string(m) + "]"
	return len(key) > len(suffix) && key[len(key)-len(suffix):] == suffix
}
