package decision

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/requirements"
)

// Fit is how a mode's measurements stand against one requirement.
type Fit string

const (
	Meets   Fit = "meets"
	Misses  Fit = "misses"
	Unknown Fit = "not shown" // undecided or not measured: never counted as met
)

// Check is one requirement of a tier in one mode, with its evidence.
type Check struct {
	Requirement string `json:"requirement"`
	Fit         Fit    `json:"fit"`
	Evidence    string `json:"evidence"`
}

// ModeFit is one mode against a tier.
type ModeFit struct {
	Mode   mode.Mode `json:"mode"`
	Checks []Check   `json:"checks"`
}

// Meets reports whether the mode meets every requirement.
func (f ModeFit) Meets() bool {
	for _, c := range f.Checks {
		if c.Fit != Meets {
			return false
		}
	}
	return true
}

// Recommendation is a tier's requirements against every meshed mode that
// ran.
type Recommendation struct {
	Tier  requirements.Tier `json:"tier"`
	Modes []ModeFit         `json:"modes"`
	// Meets lists the modes that meet every requirement (Meeting).
	Meets []mode.Mode `json:"meets"`
}

// Meeting lists the modes that meet every requirement of the tier.
func (r Recommendation) Meeting() []mode.Mode {
	var out []mode.Mode
	for _, f := range r.Modes {
		if f.Meets() {
			out = append(out, f.Mode)
		}
	}
	return out
}

// Sentence says which modes meet the tier's requirements, or that none
// does and what each misses.
func (r Recommendation) Sentence() string {
	if ms := r.Meeting(); len(ms) > 0 {
		return fmt.Sprintf("tier %s: %s meet%s every requirement (%s)", r.Tier.Name, mode.Join(ms, ", "), plural(len(ms)), r.Tier.Describe())
	}
	var why []string
	for _, f := range r.Modes {
		var short []string
		for _, c := range f.Checks {
			if c.Fit != Meets {
				short = append(short, c.Requirement+" "+string(c.Fit))
			}
		}
		why = append(why, fmt.Sprintf("%s: %s", f.Mode, strings.Join(short, ", ")))
	}
	if len(why) == 0 {
		why = append(why, "no meshed mode was measured")
	}
	return fmt.Sprintf("tier %s: no measured mode meets every requirement (%s): %s", r.Tier.Name, r.Tier.Describe(), strings.Join(why, "; "))
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// Recommend sets each tier of f against the summary's modes. s may be nil
// (no meshed mode ran): then no mode meets anything.
func Recommend(s *Summary, in Input, reg *claims.Registry, f *requirements.File) []Recommendation {
	r := &run{in: in, reg: reg, entries: map[string]*Judged{}}
	for i := range in.Entries {
		e := &in.Entries[i]
		r.entries[e.Claim+"|"+string(e.Mode)] = e
	}
	var out []Recommendation
	for _, t := range f.Tiers {
		rec := Recommendation{Tier: t}
		if s != nil {
			for _, m := range s.Modes {
				rec.Modes = append(rec.Modes, ModeFit{Mode: m, Checks: r.checks(s, t, m)})
			}
		}
		rec.Meets = rec.Meeting()
		if rec.Meets == nil {
			rec.Meets = []mode.Mode{}
		}
		out = append(out, rec)
	}
	return out
}

// Gate is the error a run's exit reports when a tier has no measured mode
// meeting its requirements; nil when every tier has one.
func Gate(recs []Recommendation) error {
	var failed []string
	for _, r := range recs {
		if len(r.Meeting()) == 0 {
			failed = append(failed, r.Sentence())
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("requirements not met: %s", strings.Join(failed, "; "))
}

func (r *run) checks(s *Summary, t requirements.Tier, m mode.Mode) []Check {
	var out []Check
	fromCell := func(name string, req Requirement, ok ...Mark) {
		c, _ := s.Cell(req, m)
		ch := Check{Requirement: name, Evidence: fmt.Sprintf("%s %s", c.Mark, c.Measured)}
		switch {
		case c.Mark == Undecided:
			ch.Fit = Unknown
		case slices.Contains(ok, c.Mark):
			ch.Fit = Meets
		default:
			ch.Fit = Misses
		}
		out = append(out, ch)
	}
	if t.MTLS {
		fromCell("mTLS", MTLS, Pass)
	}
	switch t.NetworkPolicy {
	case requirements.ExistingRules:
		fromCell("NetworkPolicy as is", NetworkPolicy, Pass)
	case requirements.HBONEAllowed:
		fromCell("NetworkPolicy with 15008", NetworkPolicy, Pass, Caveat)
	}
	if t.L7Routing {
		out = append(out, r.l7(m))
	}
	if t.MaxP50OverheadMs != nil {
		c, _ := s.Cell(Latency, m)
		evidence := c.Measured
		if c.Figure != nil {
			evidence = "latency.p50-overhead (" + c.Figure.How + ")"
		}
		out = append(out, bounded("P50 overhead", c.Figure, *t.MaxP50OverheadMs, evidence, signedMs))
	}
	if t.MaxRolloutErrorRate != nil {
		claim := "rollout.baseline"
		if t.Rollout == requirements.Hardened {
			claim = "rollout.hardened"
		}
		name := "rollout error rate (" + t.Rollout + ")"
		e, why := r.get(claim, m)
		switch {
		case e == nil:
			out = append(out, Check{Requirement: name, Fit: Unknown, Evidence: why})
		case e.Measurement.Unmet != "":
			out = append(out, Check{Requirement: name, Fit: Unknown, Evidence: e.Reason})
		default:
			rt, ok := rolloutRates(e.Measurement)
			if !ok {
				out = append(out, Check{Requirement: name, Fit: Unknown, Evidence: claim + " holds no 503 and -1 counts"})
				break
			}
			iv := &Interval{Estimate: rt.failed.Estimate, Low: rt.failed.CI.Low, High: rt.failed.CI.High}
			fig := fmt.Sprintf("%s: 503 or -1 %d/%d", claim, rt.failed.Count, rt.failed.Total)
			out = append(out, bounded(name, iv, *t.MaxRolloutErrorRate, fig, pct))
		}
	}
	return out
}

// bounded checks a figure's interval against "at most max": met when the
// interval lies at or below it, missed when it lies above, not shown when
// it straddles it or there is no figure.
func bounded(name string, iv *Interval, max float64, evidence string, unit func(float64) string) Check {
	ch := Check{Requirement: name, Evidence: evidence}
	switch {
	case iv == nil:
		ch.Fit = Unknown
	case iv.High <= max:
		ch.Fit = Meets
		ch.Evidence = fmt.Sprintf("%s: %s [%s, %s] at most %s", evidence, unit(iv.Estimate), unit(iv.Low), unit(iv.High), unit(max))
	case iv.Low > max:
		ch.Fit = Misses
		ch.Evidence = fmt.Sprintf("%s: %s [%s, %s] above %s", evidence, unit(iv.Estimate), unit(iv.Low), unit(iv.High), unit(max))
	default:
		ch.Fit = Unknown
		ch.Evidence = fmt.Sprintf("%s: %s [%s, %s] straddles %s", evidence, unit(iv.Estimate), unit(iv.Low), unit(iv.High), unit(max))
	}
	return ch
}

// l7 reads the in-mesh routing claims: met when every one was honoured,
// missed when one was observed not honoured.
func (r *run) l7(m mode.Mode) Check {
	ch := Check{Requirement: "L7 routing"}
	var seen, undecided []string
	for _, id := range L7Claims {
		e, why := r.get(id, m)
		o, why2 := decided(outcomeOf{id, e, why})
		switch {
		case o == "":
			undecided = append(undecided, why2)
		case o == "not-honoured":
			ch.Fit, ch.Evidence = Misses, fmt.Sprintf("%s: not-honoured (%s)", id, e.MeasuredText)
			return ch
		default:
			seen = append(seen, fmt.Sprintf("%s %s", id, o))
		}
	}
	if len(undecided) > 0 {
		ch.Fit, ch.Evidence = Unknown, strings.Join(undecided, "; ")
		return ch
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " honoured") {
			ch.Fit, ch.Evidence = Unknown, s
			return ch
		}
	}
	ch.Fit, ch.Evidence = Meets, strings.Join(seen, ", ")
	return ch
}
