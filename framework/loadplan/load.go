// Package loadplan is a run's loads before and after: what each spec
// declares it will run (Load) with the durations at the run's
// -duration-scale, what ran (LoadRan), the check that the two agree
// (Drift), and the plan printed before any cluster work (Plan).
package loadplan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Load is one load a spec runs, as the plan sees it before any cluster
// work and as the run records it afterwards. A spec declares its loads
// (spec.Def.Loads) with the same functions its Measure builds them with, so
// the plan and the run cannot drift apart; a run that ran something else
// than it declared fails the spec (Drift).
type Load struct {
	// Name is the load's run name ("rollout-sidecar-baseline"); it names
	// its raw result. Two specs that name one load share one run of it.
	Name string `json:"name"`
	// Mode is the namespace the load's client runs in.
	Mode mode.Mode `json:"mode"`
	// Duration is the load's length at the run's -duration-scale (the
	// source's, scaled, never below the load's floor): the most it runs.
	Duration time.Duration `json:"duration_ns"`
	// QPS is the target rate, 0 as fast as possible; Connections fortio -c.
	QPS         float64 `json:"qps,omitempty"`
	Connections int     `json:"connections,omitempty"`
	// Restarts says a restart loop runs during the load (rollout loads):
	// its unit of independence is the restart cycle.
	Restarts bool `json:"restarts,omitempty"`
	// Alongside keys the loads that may run at once under
	// -concurrent-modes: the same load (same hardening, rate, connections
	// and duration) in other modes' namespaces, each against its own echo
	// with its own restart loop, so that one mode's run cannot touch
	// another's workloads. Empty: the load always runs alone (latency
	// loads: their percentiles are the claim, and a load of another mode
	// on the same nodes moves them).
	Alongside string `json:"alongside,omitempty"`
}

func (l Load) String() string {
	rate := "as fast as possible"
	if l.QPS > 0 {
		rate = fmt.Sprintf("%g qps", l.QPS)
	}
	s := fmt.Sprintf("%s: %s, %s x %d connections", l.Name, l.Duration, rate, l.Connections)
	if l.Connections == 0 {
		s = fmt.Sprintf("%s: %s", l.Name, l.Duration)
	}
	if l.Restarts {
		s += ", restart loop"
	}
	return s
}

// LoadRan is what ran of a declared load: how long, how many requests and
// restart cycles, and why it stopped. Shared says another spec of the run
// ran it and this one read its result.
type LoadRan struct {
	Load
	Took     time.Duration `json:"took_ns"`
	Requests int64         `json:"requests"`
	Cycles   int           `json:"cycles,omitempty"`
	// Stopped says why the load ended: "full duration" or the sequential
	// rule that ended it early (framework/sequential).
	Stopped string `json:"stopped,omitempty"`
	Shared  bool   `json:"shared,omitempty"`
}

// Drift compares the loads a spec declared with those it ran (or shared):
// every declared load must have run under its name with its duration as
// the most it lasted, and nothing else may have run. A spec that declares
// no loads (Def.Loads nil) is not checked: the plan lists it as undeclared.
func Drift(declared []Load, ran []LoadRan) error {
	var errs []string
	byName := map[string]Load{}
	for _, d := range declared {
		byName[d.Name] = d
	}
	seen := map[string]bool{}
	for _, l := range ran {
		d, ok := byName[l.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("ran load %s, which the spec does not declare", l.Load))
		case d.Duration != l.Duration || d.QPS != l.QPS || d.Connections != l.Connections || d.Restarts != l.Restarts || d.Mode != l.Mode:
			errs = append(errs, fmt.Sprintf("load %s ran as %s, declared as %s", l.Name, l.Load, d))
		}
		seen[l.Name] = true
	}
	for _, d := range declared {
		if !seen[d.Name] {
			errs = append(errs, fmt.Sprintf("declared load %s did not run", d))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(errs)
	return fmt.Errorf("the plan and the run disagree (spec.Def.Loads must build its loads as Measure does): %s", strings.Join(errs, "; "))
}
