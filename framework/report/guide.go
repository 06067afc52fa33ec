package report

import (
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/decision"
)

// GuideSummary is GUIDE's Decision Summary regenerated from res (package
// decision); nil for a run without a meshed mode or without a registry.
func GuideSummary(res *Results, reg *claims.Registry) *decision.Summary {
	if reg == nil {
		return nil
	}
	s, ok := decision.Summarize(DecisionInput(res), reg)
	if !ok {
		return nil
	}
	return s
}

// DecisionInput is what package decision reads of a run's results.
func DecisionInput(res *Results) decision.Input {
	in := decision.Input{Modes: res.Environment.Modes, NotMeasured: map[string]string{}}
	for _, e := range res.Entries {
		in.Entries = append(in.Entries, decision.Judged{Verdict: e.Verdict, Measurement: e.Measurement})
	}
	for _, n := range res.NotMeasured {
		in.NotMeasured[n.Claim+"|"+string(n.Mode)] = n.Why
	}
	return in
}

// guideMarkdown writes the regenerated Decision Summary: one row per
// requirement, one column per meshed mode, each cell the run's mark and
// figure with GUIDE's beside, then the rules, the notes and the conclusion.
func guideMarkdown(p func(string, ...any), s *decision.Summary) {
	p("## GUIDE's decision summary, from this run\n\n| requirement |")
	for _, m := range s.Modes {
		p(" %s |", m)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(s.Modes)))
	for _, row := range s.Rows {
		p("| %s |", row.Requirement)
		for _, c := range row.Cells {
			p(" %s |", cell(guideCellText(c)))
		}
		p("\n")
	}
	p("\n**%s**\n\n", s.Conclusion)
	for _, n := range s.Notes {
		p("- %s\n", n)
	}
	p("\n<details><summary>the rules behind the marks</summary>\n\n")
	p("✅ meets the requirement, ⚠️ meets it with a condition, ❌ does not, ❔ undecided (the cell says why). GUIDE's figure follows each cell, marked by the same rule applied to GUIDE's documented values.\n\n")
	for _, row := range s.Rows {
		p("- %s: %s\n", row.Requirement, row.Rule)
	}
	p("\n</details>\n\n")
}

func guideCellText(c decision.Cell) string {
	s := fmt.Sprintf("%s %s", c.Mark, c.Measured)
	if c.Why != "" {
		s += " — " + c.Why
	}
	return s + fmt.Sprintf(" · GUIDE: %s %s", c.GuideMark, c.Guide)
}

var fitMark = map[decision.Fit]string{decision.Meets: "✅", decision.Misses: "❌", decision.Unknown: "❔"}

// requirementsMarkdown writes each tier's recommendation: which modes meet
// every requirement, and per requirement and mode the evidence.
func requirementsMarkdown(p func(string, ...any), r *RequirementsResult) {
	p("## Recommendation per tier (%s)\n\n", r.File)
	for _, t := range r.Tiers {
		p("**%s.**\n\n", cell(upperFirst(t.Sentence())))
		if len(t.Modes) == 0 {
			continue
		}
		p("| requirement |")
		for _, f := range t.Modes {
			p(" %s |", f.Mode)
		}
		p("\n|---|%s\n", strings.Repeat("---|", len(t.Modes)))
		for i, c := range t.Modes[0].Checks {
			p("| %s |", c.Requirement)
			for _, f := range t.Modes {
				ch := f.Checks[i]
				p(" %s |", cell(fmt.Sprintf("%s %s: %s", fitMark[ch.Fit], ch.Fit, ch.Evidence)))
			}
			p("\n")
		}
		p("\n")
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
