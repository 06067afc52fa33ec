package loadplan

import (
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Budget is a plan's estimate as the run goes: what is left once the set-up
// and some specs have finished. It counts as Write does (each distinct load
// once, loads that run at once at their group's longest, the interference
// check's reference run with the first group, the measured costs), so
// before anything has run Left is Write's total.
type Budget struct {
	specs  []Spec
	costs  *Costs
	groups map[string][]Load
	// first is the Alongside key of the group the reference run goes with.
	first     string
	reference time.Duration
}

// NewBudget is the budget of the plan Write prints for the same arguments.
func NewBudget(modes []mode.Mode, specs []Spec, costs *Costs, at Concurrency) *Budget {
	b := &Budget{specs: specs, costs: costs}
	if at.On {
		b.groups = Groups(specs)
	}
	// The reference run goes with the first group in Write's order: by
	// mode, then as the specs are listed.
	for _, m := range modes {
		for _, s := range specs {
			if s.Mode != m || s.Unmet != "" || s.Undeclared || b.first != "" {
				continue
			}
			for _, l := range s.Loads {
				if _, ok := b.groups[l.Alongside]; ok && b.first == "" {
					b.first = l.Alongside
					if at.Reference != nil {
						b.reference = at.Reference(l.Duration)
					}
				}
			}
		}
	}
	return b
}

// Left is the plan's time for what has not run: the set-up unless
// setUpDone, and every spec whose key (Key) done does not hold, with each
// of their loads that no finished spec ran (a shared load runs once,
// whichever of its readers comes first; a group of loads at once runs
// whole). Unknown counts the costs the plan does not know (the set-up's,
// a spec's beyond its loads), which Left leaves out.
func (b *Budget) Left(setUpDone bool, done map[string]bool) (left time.Duration, unknown int) {
	if !setUpDone {
		if b.costs != nil && b.costs.SetUp > 0 {
			left += b.costs.SetUp
		} else {
			unknown++
		}
	}
	ran := map[Load]bool{}
	groupRan := map[string]bool{}
	for _, s := range b.specs {
		if !done[Key(s.Claim, s.Mode)] || s.Unmet != "" || s.Undeclared {
			continue
		}
		for _, l := range s.Loads {
			ran[l] = true
			if _, ok := b.groups[l.Alongside]; ok {
				groupRan[l.Alongside] = true
			}
		}
	}
	counted := map[Load]bool{}
	for _, s := range b.specs {
		if done[Key(s.Claim, s.Mode)] {
			continue
		}
		if b.costs != nil {
			if d, _, ok := b.costs.cost(s); ok {
				left += d
			} else {
				unknown++
			}
		} else {
			unknown++
		}
		if s.Unmet != "" || s.Undeclared {
			continue
		}
		for _, l := range s.Loads {
			if ran[l] || counted[l] {
				continue
			}
			counted[l] = true
			g, atOnce := b.groups[l.Alongside]
			switch {
			case !atOnce:
				left += l.Duration
			case !groupRan[l.Alongside]:
				groupRan[l.Alongside] = true
				left += GroupWall(g)
				if l.Alongside == b.first {
					left += b.reference
				}
			}
		}
	}
	return left, unknown
}
