package loadplan

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Spec is one planned (claim, mode) spec and the loads it declares.
type Spec struct {
	Claim    string
	Mode     mode.Mode
	Declared string // suite file:line
	Loads    []Load
	// Undeclared: the spec declares no loads (spec.Def.Loads nil), so the
	// plan knows its duration only from an earlier run's record.
	Undeclared bool
	// Unmet is a -mode selection need the spec will find unmet: it runs no
	// load.
	Unmet string
}

// Costs are what an earlier run measured besides its loads: the suite's
// set-up and each spec's wall time beyond the loads it ran itself.
type Costs struct {
	Run   string  // its run id and results directory
	Scale float64 // its -duration-scale
	SetUp time.Duration
	// Beyond is each "claim [mode]" spec's wall time minus the loads it
	// ran itself (waits, deployments, probes).
	Beyond map[string]time.Duration
	// Whole is each spec's whole wall time, its own loads included: the
	// cost of a spec that does not declare its loads, since the plan does
	// not count those loads (sidecar's HYBRID specs run 20 s and 25 s
	// loads of their own; counted by Beyond alone, a plan of sidecar at
	// scale 1 came out 5 min short of the run).
	Whole map[string]time.Duration
	// From says where the costs come from when that is more than one run
	// of this plan's scale (the project's records, report.ShippedCosts),
	// one line per record; Notes what those records do not tell this
	// plan (another provider, another scale).
	From, Notes []string
}

// cost is what the plan adds for s: its whole wall time when its loads
// are not declared (the plan counts none of them), else its time beyond
// loads. Records without Whole (before it was kept) give Beyond.
func (c *Costs) cost(s Spec) (d time.Duration, what string, ok bool) {
	k := Key(s.Claim, s.Mode)
	if s.Undeclared {
		if d, ok := c.Whole[k]; ok {
			return d, "wall time with its loads", true
		}
	}
	d, ok = c.Beyond[k]
	return d, "beyond loads", ok
}

// Key is a spec's key in Costs.Beyond.
func Key(claim string, m mode.Mode) string { return fmt.Sprintf("%s [%s]", claim, m) }

// Estimate is the plan's sum.
type Estimate struct {
	Loads time.Duration // every distinct load once, at its declared length (the run's -duration-scale)
	// Known are the set-up and per-spec costs an earlier run measured.
	Known time.Duration
	// Unknown counts specs (and the suite set-up) with no measured cost.
	Unknown int
	// Shared counts load uses served by a load another spec runs.
	Shared int
	// AtOnce counts distinct loads that run at once with another
	// (-concurrent-modes), in Groups groups: Loads counts each group's
	// longest once. Reference is the interference check's run alone.
	AtOnce, Groups int
	Reference      time.Duration
}

// Total is the estimated wall time: loads, the interference check's
// reference run and the known costs.
func (e Estimate) Total() time.Duration { return e.Loads + e.Reference + e.Known }

// Write prints the plan: per mode and spec its loads with their durations,
// shared loads once, loads that run at once (under at.On) with the group
// they run in, the costs measured in an earlier run where known and the
// estimated total, and returns the estimate.
func Write(w io.Writer, modes []mode.Mode, scale float64, specs []Spec, costs *Costs, at Concurrency) Estimate {
	var e Estimate
	var groups map[string][]Load
	if at.On {
		groups = Groups(specs)
	}
	counted := map[string]string{} // group key -> the load it was counted with
	var reference string           // the load of the first group, run alone too
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	fmt.Fprintf(w, "plan: -mode=%s -duration-scale=%g, %d specs\n", strings.Join(names, ","), scale, len(specs))
	if costs != nil {
		if len(costs.From) > 0 {
			fmt.Fprintf(w, "  set-up and costs beyond loads from the project's records (no earlier run of this scale under -results to read them from; -plan-costs names others):\n")
			for _, f := range costs.From {
				fmt.Fprintf(w, "    %s\n", f)
			}
		} else {
			fmt.Fprintf(w, "  costs beyond loads from run %s (-duration-scale=%g)\n", costs.Run, costs.Scale)
			if costs.Scale != scale {
				// Some work beyond loads scales too (kubeproxy.service-scale's
				// extra Services, 10,000 at scale 1): a record of another
				// scale misjudges it.
				fmt.Fprintf(w, "  note: that run's -duration-scale (%g) is not this plan's (%g); costs that scale with it (e.g. kubeproxy.service-scale's extra Services) will differ\n", costs.Scale, scale)
			}
		}
		for _, n := range costs.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if costs.SetUp > 0 {
			fmt.Fprintf(w, "  suite set-up: %s (measured)\n", costs.SetUp.Round(time.Second))
			e.Known += costs.SetUp
		} else {
			fmt.Fprintf(w, "  suite set-up: unknown (that run did not record it)\n")
			e.Unknown++
		}
	} else {
		fmt.Fprintf(w, "  suite set-up and per-spec costs beyond loads: unknown (no earlier run's results to read them from, nor a record the project keeps of these modes)\n")
		e.Unknown++
	}
	seen := map[Load]string{}
	for _, m := range modes {
		fmt.Fprintf(w, "mode %s\n", m)
		for _, s := range specs {
			if s.Mode != m {
				continue
			}
			var cost string
			if costs != nil {
				if b, what, ok := costs.cost(s); ok {
					cost = fmt.Sprintf("; %s %s (measured)", what, b.Round(time.Second))
					e.Known += b
				} else {
					cost = "; beyond loads unknown"
					e.Unknown++
				}
			} else {
				e.Unknown++
			}
			switch {
			case s.Unmet != "":
				fmt.Fprintf(w, "  %s: no load (%s)%s\n", s.Claim, s.Unmet, cost)
			case s.Undeclared:
				fmt.Fprintf(w, "  %s: loads not declared (spec.Def.Loads)%s\n", s.Claim, cost)
			case len(s.Loads) == 0:
				fmt.Fprintf(w, "  %s: no load%s\n", s.Claim, cost)
			default:
				fmt.Fprintf(w, "  %s%s\n", s.Claim, cost)
				for _, l := range s.Loads {
					if by, ok := seen[l]; ok {
						fmt.Fprintf(w, "    %s (shared with %s)\n", l.Name, by)
						e.Shared++
						continue
					}
					seen[l] = Key(s.Claim, s.Mode)
					g, atOnce := groups[l.Alongside]
					switch {
					case !atOnce:
						e.Loads += l.Duration
						fmt.Fprintf(w, "    %s\n", l)
					case counted[l.Alongside] == "":
						counted[l.Alongside] = l.Name
						wall := GroupWall(g)
						e.Loads += wall
						e.Groups++
						e.AtOnce += len(g)
						if e.Groups == 1 && at.Reference != nil {
							e.Reference, reference = at.Reference(l.Duration), l.Name
						}
						fmt.Fprintf(w, "    %s (at once with %s: %s for the %d; -concurrent-modes)\n", l, strings.Join(othersIn(g, l), ", "), wall, len(g))
					default:
						fmt.Fprintf(w, "    %s (at once with %s, counted there)\n", l, counted[l.Alongside])
					}
				}
			}
		}
	}
	if reference != "" {
		fmt.Fprintf(w, "interference check: one reference run alone of the first group to run (in this order: %s), %s\n", reference, e.Reference)
	}
	if e.Groups > 0 {
		fmt.Fprintf(w, "estimated total: %s = loads %s at -duration-scale=%g, each to its end (%d distinct, %d uses shared; %d run at once in %d groups, each counted at its longest) + interference reference %s + measured costs %s",
			e.Total().Round(time.Second), e.Loads, scale, len(seen), e.Shared, e.AtOnce, e.Groups, e.Reference, e.Known.Round(time.Second))
	} else {
		fmt.Fprintf(w, "estimated total: %s = loads %s at -duration-scale=%g, each to its end (%d distinct, %d uses shared) + measured costs %s",
			e.Total().Round(time.Second), e.Loads, scale, len(seen), e.Shared, e.Known.Round(time.Second))
	}
	if e.Unknown > 0 {
		fmt.Fprintf(w, "; %d costs unknown, not included", e.Unknown)
	}
	fmt.Fprintln(w)
	// The estimate ends where the last spec does (a run's recorded
	// finish); what go test adds around it is not measured by any record.
	fmt.Fprintf(w, "  not included: building the test binary, the clean-up after the last spec and writing the report\n")
	return e
}

// Absorb takes from o what c lacks: the cost of each spec c has none for
// (its Whole from the same run as its Beyond, or none), and o's set-up
// where it is longer. c's Beyond and Whole must not be nil.
func (c *Costs) Absorb(o *Costs) {
	c.SetUp = max(c.SetUp, o.SetUp)
	for k, d := range o.Beyond {
		if _, ok := c.Beyond[k]; ok {
			continue
		}
		c.Beyond[k] = d
		if w, ok := o.Whole[k]; ok {
			c.Whole[k] = w
		}
	}
}

// MergeCosts joins the costs of several earlier runs into one, so a plan
// of modes measured in separate runs (one mode per run, as the scale-1
// bench records are kept) knows every spec's cost: each "claim [mode]"
// takes its cost from the first run, in the order given, that measured it.
// The set-up is the longest of theirs: a run of several modes sets up once
// what its most demanding mode needs (istiod and its images), and the
// shorter set-ups are part of it. Runs at different -duration-scale values
// are refused, since their costs beyond loads need not agree.
func MergeCosts(cs []*Costs) (*Costs, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	out := &Costs{Scale: cs[0].Scale, Beyond: map[string]time.Duration{}, Whole: map[string]time.Duration{}}
	var runs []string
	for _, c := range cs {
		if c.Scale != out.Scale {
			return nil, fmt.Errorf("run %s is at -duration-scale=%g and run %s at %g; give runs of one scale", cs[0].Run, cs[0].Scale, c.Run, c.Scale)
		}
		runs = append(runs, c.Run)
		out.Absorb(c)
	}
	out.Run = strings.Join(runs, " + ")
	return out, nil
}
