package report

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Direction says what a change means for the claim.
type Direction string

const (
	NoChange    Direction = "no change"
	Regression  Direction = "regression"
	Improvement Direction = "improvement"
	// Changed is a change with no better or worse (an outcome other than
	// the documented one either way, a scalar of unknown sense).
	Changed Direction = "changed"
	// Added and Removed: the claim and mode is in only one run.
	Added   Direction = "only in new"
	Removed Direction = "only in old"
)

// Comparison is one claim in one mode across two runs.
type Comparison struct {
	Claim     string         `json:"claim"`
	Mode      string         `json:"mode"`
	Old       verdict.Result `json:"old,omitempty"`
	New       verdict.Result `json:"new,omitempty"`
	Flipped   bool           `json:"flipped"`
	Direction Direction      `json:"direction"`
	// Changes are the measured quantities that moved beyond their noise
	// (or, without an interval, moved at all, marked so).
	Quantities []Quantity `json:"quantities,omitempty"`
}

// Quantity is one measured number in both runs.
type Quantity struct {
	Name   string          `json:"name"` // "503 rate", "-1 rate", "P99 ms", "value", "outcome"
	Old    string          `json:"old"`
	New    string          `json:"new"`
	Delta  float64         `json:"delta,omitempty"`
	CI     *stats.Interval `json:"ci,omitempty"`     // 95% interval of the delta; nil = none (one run)
	Change bool            `json:"change"`           // the interval excludes 0 (or, for an outcome, it differs)
	Worse  bool            `json:"worse,omitempty"`  // a significant change in the bad direction
	Better bool            `json:"better,omitempty"` // a significant change in the good direction
	Note   string          `json:"note,omitempty"`
}

// Diff is the comparison of two runs.
type Diff struct {
	OldRun      string            `json:"old_run"`
	NewRun      string            `json:"new_run"`
	Registry    string            `json:"registry"`
	Comparisons []Comparison      `json:"comparisons"` // flipped verdicts first
	Counts      map[Direction]int `json:"counts"`
}

// Regressions counts comparisons that got worse.
func (d *Diff) Regressions() int { return d.Counts[Regression] }

// Compare compares two runs' results. It refuses runs judged with different
// registries: their verdicts and even their claim ids need not mean the same.
// (Different schema versions are refused by LoadResults.)
func Compare(old, cur *Results) (*Diff, error) {
	if old.SchemaVersion != cur.SchemaVersion {
		return nil, fmt.Errorf("cannot compare: schema_version %d (old) and %d (new)", old.SchemaVersion, cur.SchemaVersion)
	}
	if old.Environment.Registry != cur.Environment.Registry {
		return nil, fmt.Errorf("cannot compare: old run %q was judged with registry %q, new run %q with %q; re-judge both with one registry (meshclaims report --file F DIR) first",
			old.Environment.RunID, old.Environment.Registry, cur.Environment.RunID, cur.Environment.Registry)
	}
	d := &Diff{OldRun: old.Environment.RunID, NewRun: cur.Environment.RunID, Registry: cur.Environment.Registry, Counts: map[Direction]int{}}
	oldBy := map[string]Entry{}
	for _, e := range old.Entries {
		oldBy[e.Claim+"|"+string(e.Mode)] = e
	}
	seen := map[string]bool{}
	for _, n := range cur.Entries {
		k := n.Claim + "|" + string(n.Mode)
		seen[k] = true
		o, ok := oldBy[k]
		if !ok {
			d.Comparisons = append(d.Comparisons, Comparison{Claim: n.Claim, Mode: string(n.Mode), New: n.Result, Direction: Added})
			continue
		}
		d.Comparisons = append(d.Comparisons, compareEntry(o, n))
	}
	for _, o := range old.Entries {
		if !seen[o.Claim+"|"+string(o.Mode)] {
			d.Comparisons = append(d.Comparisons, Comparison{Claim: o.Claim, Mode: string(o.Mode), Old: o.Result, Direction: Removed})
		}
	}
	sort.SliceStable(d.Comparisons, func(i, j int) bool { return d.Comparisons[i].Flipped && !d.Comparisons[j].Flipped })
	for _, c := range d.Comparisons {
		d.Counts[c.Direction]++
	}
	return d, nil
}

// rank orders verdicts from worst to best for a flip's direction.
var rank = map[verdict.Result]int{verdict.NotReproduced: 0, verdict.Inconclusive: 1, verdict.Reproduced: 2, verdict.Recorded: 2}

func compareEntry(o, n Entry) Comparison {
	c := Comparison{Claim: n.Claim, Mode: string(n.Mode), Old: o.Result, New: n.Result, Flipped: o.Result != n.Result}
	c.Quantities = quantities(n.Metric, o.Measurement, n.Measurement)
	worse, better, changed := false, false, false
	for _, q := range c.Quantities {
		if q.Change {
			changed = true
			worse = worse || q.Worse
			better = better || q.Better
		}
	}
	switch {
	case c.Flipped && rank[n.Result] < rank[o.Result]:
		c.Direction = Regression
	case c.Flipped && rank[n.Result] > rank[o.Result]:
		c.Direction = Improvement
	case worse:
		c.Direction = Regression
	case better:
		c.Direction = Improvement
	case c.Flipped || changed:
		c.Direction = Changed
	default:
		c.Direction = NoChange
	}
	return c
}

// quantities compares what both runs measured: rates by a two-proportion
// interval, repeated values by Welch's interval, single values and
// percentiles without an interval (reported, never called a change), and
// outcomes as equal or not.
func quantities(metric claims.Metric, o, n verdict.Measurement) []Quantity {
	var qs []Quantity
	rate := func(name string, oc, ot, nc, nt *int64) {
		if oc == nil || ot == nil || nc == nil || nt == nil || *ot == 0 || *nt == 0 {
			return
		}
		a, err1 := stats.Wilson(*oc, *ot, verdict.Confidence)
		b, err2 := stats.Wilson(*nc, *nt, verdict.Confidence)
		if err1 != nil || err2 != nil {
			return
		}
		q := Quantity{Name: name, Old: a.String(), New: b.String()}
		if dd, err := stats.ProportionDifference(a, b); err == nil {
			ci := dd.CI
			q.Delta, q.CI, q.Change = dd.Estimate, &ci, dd.Significant()
			// Every rate the registry counts is a failure rate (503s,
			// non-200s, -1s, duplicates): up is worse.
			q.Worse, q.Better = q.Change && dd.Estimate > 0, q.Change && dd.Estimate < 0
		}
		qs = append(qs, q)
	}
	reading := verdict.MetricOf(metric).Reading()
	label := reading.Rate
	if label == "" {
		label = "rate"
	}
	rate(label, o.Count, o.Total, n.Count, n.Total)
	rate("no-response (-1) rate", o.NoResponse, o.Total, n.NoResponse, n.Total)
	if o.Outcome != "" || n.Outcome != "" {
		qs = append(qs, Quantity{Name: "outcome", Old: dashIfEmpty(o.Outcome), New: dashIfEmpty(n.Outcome), Change: o.Outcome != n.Outcome})
	}
	if o.Value != nil && n.Value != nil {
		q := Quantity{Name: string(metric), Old: fmt.Sprintf("%.4g", *o.Value), New: fmt.Sprintf("%.4g", *n.Value), Delta: *n.Value - *o.Value}
		if dd, err := stats.MeanDifference(o.Runs, n.Runs, verdict.Confidence); err == nil {
			ci := dd.CI
			q.CI, q.Change = &ci, dd.Significant()
			q.Old = fmt.Sprintf("%.4g (%d runs)", *o.Value, len(o.Runs))
			q.New = fmt.Sprintf("%.4g (%d runs)", *n.Value, len(n.Runs))
			if reading.Better == 0 {
				if q.Change {
					q.Note = "direction unknown"
				}
			} else {
				up := float64(reading.Better) * dd.Estimate
				q.Worse, q.Better = q.Change && up < 0, q.Change && up > 0
			}
		} else {
			q.Note = "one run each: no interval, not judged a change"
		}
		qs = append(qs, q)
	}
	if o.VCPU != nil && n.VCPU != nil {
		// A footprint is one load's window each: no interval.
		qs = append(qs, Quantity{Name: "vCPU", Old: fmt.Sprintf("%.4g", *o.VCPU), New: fmt.Sprintf("%.4g", *n.VCPU), Delta: *n.VCPU - *o.VCPU,
			Note: "one load's kubelet readings each: no interval, not judged a change"})
	}
	qs = append(qs, repeatedExtras(o.Extra, n.Extra)...)
	for _, k := range verdict.SortedPercentiles(n.Percentiles) {
		ov, ok := o.Percentiles[k]
		if !ok {
			continue
		}
		nv := n.Percentiles[k]
		qs = append(qs, Quantity{Name: "P" + k + " ms", Old: fmt.Sprintf("%.4g", ov), New: fmt.Sprintf("%.4g", nv), Delta: nv - ov,
			Note: "one run's histogram: no interval, not judged a change"})
	}
	return qs
}

// runKey is steps.Repeat's per-run extra: "p50_ms_run3".
var runKey = regexp.MustCompile(`^(.+)_run([0-9]+)$`)

// repeatedExtras compares the numbers a repeated measurement kept per run
// (p50_ms_run1, baseline_p50_ms_run2, ...) by Welch's interval, where both
// runs have at least two repeats of them. Times (_ms) are worse higher.
func repeatedExtras(o, n map[string]float64) []Quantity {
	group := func(m map[string]float64) map[string][]float64 {
		g := map[string][]float64{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if sm := runKey.FindStringSubmatch(k); sm != nil {
				g[sm[1]] = append(g[sm[1]], m[k])
			}
		}
		return g
	}
	og, ng := group(o), group(n)
	names := make([]string, 0, len(ng))
	for name := range ng {
		if len(og[name]) >= 2 && len(ng[name]) >= 2 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var qs []Quantity
	for _, name := range names {
		dd, err := stats.MeanDifference(og[name], ng[name], verdict.Confidence)
		if err != nil {
			continue
		}
		ci := dd.CI
		q := Quantity{Name: name + " (mean of repeats)", Old: fmt.Sprintf("%.4g (%d runs)", mean(og[name]), len(og[name])),
			New: fmt.Sprintf("%.4g (%d runs)", mean(ng[name]), len(ng[name])), Delta: dd.Estimate, CI: &ci, Change: dd.Significant()}
		switch {
		case strings.HasSuffix(name, "_ms"):
			q.Worse, q.Better = q.Change && dd.Estimate > 0, q.Change && dd.Estimate < 0
		case q.Change:
			q.Note = "direction unknown"
		}
		qs = append(qs, q)
	}
	return qs
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Text writes the diff for a person: flipped verdicts first, then every
// other change, then a count of what did not change.
func (d *Diff) Text(w io.Writer) {
	fmt.Fprintf(w, "meshclaims diff: %s -> %s (registry %s)\n", d.OldRun, d.NewRun, d.Registry)
	fmt.Fprintf(w, "%d regression(s), %d improvement(s), %d changed, %d unchanged, %d only in old, %d only in new\n",
		d.Counts[Regression], d.Counts[Improvement], d.Counts[Changed], d.Counts[NoChange], d.Counts[Removed], d.Counts[Added])
	for _, c := range d.Comparisons {
		if c.Direction == NoChange {
			continue
		}
		flip := ""
		if c.Flipped {
			flip = fmt.Sprintf(": %s -> %s", c.Old, c.New)
		} else if c.Old != "" && c.New != "" {
			flip = fmt.Sprintf(": %s", c.New)
		}
		fmt.Fprintf(w, "\n%s  %s (%s)%s\n", strings.ToUpper(string(c.Direction)), c.Claim, c.Mode, flip)
		for _, q := range c.Quantities {
			ci := ""
			if q.CI != nil {
				ci = fmt.Sprintf(" [%+.4g, %+.4g]", q.CI.Low, q.CI.High)
			}
			mark := "  "
			if q.Change {
				mark = "* "
			}
			note := ""
			if q.Note != "" {
				note = " (" + q.Note + ")"
			}
			fmt.Fprintf(w, "  %s%s: %s -> %s, delta %+.4g%s%s\n", mark, q.Name, q.Old, q.New, q.Delta, ci, note)
		}
	}
	fmt.Fprintln(w, "\n* = beyond the 95% interval of the difference")
}
