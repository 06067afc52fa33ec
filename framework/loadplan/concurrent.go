package loadplan

import (
	"slices"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Concurrency is how a plan places the loads that may run alongside other
// modes' (Load.Alongside).
type Concurrency struct {
	// On is -concurrent-modes; off, every load runs alone.
	On bool
	// Reference is the length of the interference check's reference run
	// alone for a group's load of duration d: once per run, with the first
	// group that runs (nil: none).
	Reference func(d time.Duration) time.Duration
}

// Groups are the loads that run at once under -concurrent-modes: distinct
// loads of the specs (those with an unmet selection need run none) sharing
// a non-empty Alongside key in two or more modes, keyed by it, each
// group's loads in the order the specs list them. The plan and the run
// both place loads by it, so they cannot disagree.
func Groups(specs []Spec) map[string][]Load {
	byKey := map[string][]Load{}
	for _, s := range specs {
		if s.Unmet != "" {
			continue
		}
		for _, l := range s.Loads {
			if l.Alongside == "" || slices.Contains(byKey[l.Alongside], l) {
				continue
			}
			byKey[l.Alongside] = append(byKey[l.Alongside], l)
		}
	}
	out := map[string][]Load{}
	for k, ls := range byKey {
		if len(GroupModes(ls)) >= 2 {
			out[k] = ls
		}
	}
	return out
}

// GroupModes are the distinct modes of a group's loads, in order.
func GroupModes(g []Load) []mode.Mode {
	var out []mode.Mode
	for _, l := range g {
		if !slices.Contains(out, l.Mode) {
			out = append(out, l.Mode)
		}
	}
	return out
}

// GroupWall is a group's wall time: its loads run at once, so the
// longest, not the sum.
func GroupWall(g []Load) time.Duration {
	var d time.Duration
	for _, l := range g {
		d = max(d, l.Duration)
	}
	return d
}

// othersIn are the names of g's loads other than l.
func othersIn(g []Load, l Load) []string {
	var out []string
	for _, x := range g {
		if x != l {
			out = append(out, x.Name)
		}
	}
	return out
}
