package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

var mark = map[verdict.Result]string{
	verdict.Reproduced:    "✅ reproduced",
	verdict.NotReproduced: "❌ not reproduced",
	verdict.Inconclusive:  "⚠️ inconclusive",
	verdict.Recorded:      "📝 recorded",
}

// Markdown renders the report: where it ran, a decision matrix in the shape
// of GUIDE's summary (claims x modes), then one table per mode setting the
// documented value beside the measured one with the verdict's reason.
func Markdown(w io.Writer, res *Results, reg *claims.Registry) error {
	r := &markdownRun{res: res, reg: reg, env: res.Environment, modes: res.Environment.Modes}
	if len(r.modes) == 0 {
		r.modes = mode.All()
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	for _, s := range markdownSections {
		s.write(p, r)
	}
	return nil
}

// markdownRun is what report.md's sections are written from.
type markdownRun struct {
	res *Results
	reg *claims.Registry // nil: no registry to compare with
	env Environment
	// modes are the run's modes, every mode when it names none.
	modes []mode.Mode
}

// markdownSections are report.md's sections, in its order; a section with
// nothing to say writes nothing.
var markdownSections = []struct {
	name  string
	write func(p func(string, ...any), r *markdownRun)
}{
	{"title", markdownTitle},
	{"GUIDE's decision summary", func(p func(string, ...any), r *markdownRun) {
		if g := GuideSummary(r.res, r.reg); g != nil {
			guideMarkdown(p, g)
		}
	}},
	{"requirements", func(p func(string, ...any), r *markdownRun) {
		if r.res.Requirements != nil {
			requirementsMarkdown(p, r.res.Requirements)
		}
	}},
	{"where it ran", markdownWhere},
	{"images", markdownImages},
	{"proxy", markdownProxy},
	{"verdict counts", markdownCounts},
	{"decision summary", markdownDecisionSummary},
	{"modes", markdownModes},
	{"sources", markdownSources},
	{"loads", func(p func(string, ...any), r *markdownRun) { loadsTable(p, r.res.Entries, r.reg) }},
	{"not measured", markdownMissing},
}

// markdownTitle is the run's id and, when the set-up failed, why.
func markdownTitle(p func(string, ...any), r *markdownRun) {
	p("# meshclaims report — run %s\n\n", r.env.RunID)
	if r.env.SetupError != "" {
		p("> **Set-up failed: no claim was measured.** %s\n\n", strings.ReplaceAll(strings.TrimSpace(r.env.SetupError), "\n", "\n> "))
	}
}

// markdownWhere is the environment table and the run's notes.
func markdownWhere(p func(string, ...any), r *markdownRun) {
	env := r.env
	p("| where | value |\n|---|---|\n")
	p("| provider | %s |\n| cluster | %s |\n| Kubernetes | %s |\n| Istio | %s |\n| fortio | %s |\n",
		dash(env.Provider), dash(env.Cluster), dash(env.Kubernetes), dash(env.Istio), dash(env.Fortio))
	if env.NodeImage != "" {
		p("| node image | %s |\n", env.NodeImage)
	}
	p("| modes | %s |\n| duration scale | %g (1 = documented setups) |\n| repeats | %d |\n| registry | %s |\n",
		joinModes(env.Modes), env.DurationScale, env.Repeats, dash(env.Registry))
	if !env.Started.IsZero() {
		p("| started | %s |\n", env.Started.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if !env.Finished.IsZero() {
		p("| finished | %s |\n", env.Finished.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if r := Resumed(env); r != "" {
		p("| resumed | %s |\n", cell(r))
	}
	if env.Planned > 0 {
		p("| wall time, planned / actual | %s (plan.txt) |\n", wallTime(env))
	}
	if env.SetUp > 0 {
		p("| suite set-up | %s |\n", env.SetUp.Round(time.Second))
	}
	if env.ClusterChanges != "" {
		p("| cluster inventory, before and after | %s (%s) |\n", cell(env.ClusterChanges), env.ClusterChangesFile)
	}
	for _, n := range env.Notes {
		p("\n> %s\n", n)
	}
}

// markdownImages lists the images the run's pods ran with.
func markdownImages(p func(string, ...any), r *markdownRun) {
	if len(r.env.Images) == 0 {
		return
	}
	p("\n| image | where | id |\n|---|---|---|\n")
	for _, im := range r.env.Images {
		p("| %s | %s | %s |\n", im.Image, im.Where, im.ID)
	}
}

// markdownProxy names the proxy, ztunnel and istio-cni the meshed modes
// ran with.
func markdownProxy(p func(string, ...any), r *markdownRun) {
	env := r.env
	if pr := env.Proxy; pr != nil {
		p("\n| proxy | value |\n|---|---|\n| kind | %s |\n| image | %s |\n| Envoy | %s |\n| Envoy from | %s |\n| pilot-agent | %s |\n| Istio commit | %s |\n| istiod settings | %s |\n",
			pr.Kind, pr.Image, dash(pr.Envoy), dash(pr.EnvoySource), dash(pr.PilotAgent), dash(pr.IstioCommit), cell(strings.Join(pr.IstiodSettings, "; ")))
		if len(pr.Waypoint) > 0 {
			p("| waypoint (ambient-l7) | %s |\n", cell(strings.Join(pr.Waypoint, "; ")))
		}
	}
	if env.Ztunnel != "" {
		p("\n| ztunnel | %s |\n|---|---|\n", cell(env.Ztunnel))
	}
	if env.IstioCNI != "" {
		p("\n| istio-cni | %s |\n|---|---|\n", cell(env.IstioCNI))
	}
}

// markdownCounts is the count of each verdict, what a scaled run's
// intervals mean, and where the report's words are defined.
func markdownCounts(p func(string, ...any), r *markdownRun) {
	res, env := r.res, r.env
	p("\n**%d reproduced, %d not reproduced, %d inconclusive, %d recorded.**\n\n",
		res.Summary[verdict.Reproduced], res.Summary[verdict.NotReproduced], res.Summary[verdict.Inconclusive], res.Summary[verdict.Recorded])
	if env.DurationScale != 0 && env.DurationScale != 1 {
		p("Durations were scaled by %g: rates and counts come from fewer requests than documented, so their intervals are wider.\n\n", env.DurationScale)
	}
	p("The verdicts, claim kinds, bands, intervals and other words of this report are defined in [%s](%s).\n\n", GlossaryFile, GlossaryFile)
}

// markdownDecisionSummary is the claims x modes matrix: each cell the
// verdict and the measured value, cut short.
func markdownDecisionSummary(p func(string, ...any), r *markdownRun) {
	byKey := map[string]Entry{}
	var ids []string
	seen := map[string]bool{}
	for _, e := range r.res.Entries {
		byKey[e.Claim+"|"+string(e.Mode)] = e
		if !seen[e.Claim] {
			seen[e.Claim] = true
			ids = append(ids, e.Claim)
		}
	}
	p("## Decision summary\n\n| claim |")
	for _, m := range r.modes {
		p(" %s |", m)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(r.modes)))
	for _, id := range ids {
		p("| `%s` |", id)
		for _, m := range r.modes {
			e, ok := byKey[id+"|"+string(m)]
			if !ok {
				p(" |")
				continue
			}
			p(" %s |", cell(mark[e.Result]+" "+short(e.MeasuredText, 48)))
		}
		p("\n")
	}
}

// markdownModes is one table per mode with entries: documented beside
// measured with the verdict and why, then the setups, raw results and
// evidence behind them.
func markdownModes(p func(string, ...any), r *markdownRun) {
	env := r.env
	for _, m := range r.modes {
		var rows []Entry
		for _, e := range r.res.Entries {
			if e.Mode == m {
				rows = append(rows, e)
			}
		}
		if len(rows) == 0 {
			continue
		}
		p("\n## Mode %s\n\n", m)
		if env.Proxy != nil && ThroughProxy(m) {
			// Beside every measurement of the mode: which Envoy, which
			// istiod settings.
			p("Measured through %s.\n\n", env.Proxy.SummaryFor(m))
		}
		if env.Ztunnel != "" && m.Ambient() {
			p("Measured with %s.\n\n", env.Ztunnel)
		}
		if env.IstioCNI != "" && m.Ambient() {
			p("Measured with istio-cni: %s.\n\n", env.IstioCNI)
		}
		p("| claim | source | documented | measured | verdict | why |\n|---|---|---|---|---|---|\n")
		for _, e := range rows {
			p("| `%s` | %s | %s | %s | %s | %s |\n", e.Claim, cell(e.Source), cell(e.Documented), cell(e.MeasuredText), mark[e.Result]+decidedText(e.Verdict), cell(whyText(e.Verdict)))
		}
		markdownDetails(p, m, rows)
	}
}

// markdownDetails is a mode's setups, waits, raw results and evidence,
// folded.
func markdownDetails(p func(string, ...any), m mode.Mode, rows []Entry) {
	var details []Entry
	for _, e := range rows {
		if e.Setup != "" || e.Where != "" || e.Declared != "" || len(e.Raw) > 0 || len(e.Evidence) > 0 || len(e.Waits) > 0 {
			details = append(details, e)
		}
	}
	if len(details) == 0 {
		return
	}
	p("\n<details><summary>setups, raw results and evidence (%s)</summary>\n\n", m)
	for _, e := range details {
		p("- `%s`: %s", e.Claim, dash(e.Setup))
		if e.Declared != "" {
			p("; declared in `%s`", e.Declared)
		}
		for _, w := range e.Waits {
			bounded := ""
			if w.Bounded {
				bounded = " (bounded: " + w.Seen + ")"
			}
			p("; waited %s for %s%s", w.Took.Round(time.Millisecond), w.For, bounded)
		}
		if e.Where != "" {
			p("; ran on %s", e.Where)
		}
		if len(e.Raw) > 0 {
			p("; raw: %s", strings.Join(e.Raw, ", "))
		}
		if len(e.Evidence) > 0 {
			p("; evidence: %s", strings.Join(e.Evidence, ", "))
		}
		p("\n")
	}
	p("\n</details>\n")
}

// markdownSources are the documents the source column's keys name.
func markdownSources(p func(string, ...any), r *markdownRun) {
	if len(r.res.Sources) == 0 {
		return
	}
	p("\n## Sources\n\nEach claim's source column is a key below and the section in that document.\n\n| key | title | date | version | measured on |\n|---|---|---|---|---|\n")
	for _, s := range r.res.Sources {
		p("| %s | %s | %s | %s | %s |\n", s.Key, cell(s.Title), cell(s.Date), cell(s.Version), cell(dash(s.Platform)))
	}
}

// markdownMissing lists the claims the registry applies to the run's
// modes that the run did not measure.
func markdownMissing(p func(string, ...any), r *markdownRun) {
	if r.reg == nil {
		return
	}
	if missing := Missing(r.res, r.reg); len(missing) > 0 {
		p("\n## Not measured in this run\n\nApplicable to the selected modes but without a measurement (spec skipped, filtered out, or failed before recording): %s.\n", strings.Join(missing, ", "))
	}
}

// decidedText names the part that decided a compound claim's verdict.
func decidedText(v verdict.Verdict) string {
	if v.DecidedBy == "" {
		return ""
	}
	return " (decided by " + v.DecidedBy + ")"
}

// whyText is a verdict's reason, or for a compound claim each part's
// verdict and reason, an unconfirmable part labelled as such.
func whyText(v verdict.Verdict) string {
	if len(v.Parts) == 0 {
		return v.Reason
	}
	var out []string
	for _, pt := range v.Parts {
		label := string(pt.Result)
		if pt.Unconfirmable {
			label += ", documented count too small to confirm"
		}
		out = append(out, fmt.Sprintf("%s: %s: %s", pt.Name, label, pt.Reason))
	}
	return strings.Join(out, "; ")
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinModes(ms []mode.Mode) string { return dash(mode.Join(ms, ", ")) }

// Missing lists "`claim` (mode)" for every claim the registry applies to the
// run's modes that has no entry in res.
func Missing(res *Results, reg *claims.Registry) []string {
	modes := res.Environment.Modes
	if len(modes) == 0 {
		modes = mode.All()
	}
	have := map[string]bool{}
	for _, e := range res.Entries {
		have[e.Claim+"|"+string(e.Mode)] = true
	}
	var missing []string
	for _, m := range modes {
		for _, c := range reg.ForMode(m) {
			if !have[c.ID+"|"+string(m)] {
				missing = append(missing, fmt.Sprintf("`%s` (%s)", c.ID, m))
			}
		}
	}
	return missing
}

// short cuts s to at most n runes, marking the cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// loadsTable is each claim's loads, planned against actual: duration,
// requests (planned: the paced rate times the duration) and restart
// cycles, beside the source's documented requests and cycles, and why the
// load stopped (its full duration, or the sequential rule).
func loadsTable(p func(string, ...any), entries []Entry, reg *claims.Registry) {
	var rows []string
	for _, e := range entries {
		source := "-"
		if reg != nil {
			if c, ok := reg.Get(e.Claim); ok {
				if doc, ok := c.DocumentedFor(e.Mode); ok && doc.Total != nil {
					source = fmt.Sprintf("%d requests", *doc.Total)
					if doc.Cycles != nil {
						source += fmt.Sprintf(", %d cycles", *doc.Cycles)
					}
				}
			}
		}
		for _, l := range e.Loads {
			planned := "-"
			if l.QPS > 0 {
				planned = fmt.Sprintf("%.0f", l.QPS*l.Duration.Seconds())
			}
			stopped := l.Stopped
			if l.Shared {
				stopped = "shared: " + stopped
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s / %s | %d / %s | %d | %s | %s |\n", e.Claim, e.Mode, l.Name,
				l.Took.Round(time.Second), l.Duration, l.Requests, planned, l.Cycles, source, cell(stopped)))
		}
	}
	if len(rows) == 0 {
		return
	}
	p("\n## Loads: actual against planned\n\n| claim | mode | load | ran / planned | requests / planned | cycles | source's | stopped |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("%s", r)
	}
}

// wallTime is the run's planned wall time against its actual one.
func wallTime(env Environment) string {
	actual := "unfinished"
	if !env.Finished.IsZero() {
		actual = env.Finished.Sub(env.Started).Round(time.Second).String()
	}
	return env.Planned.Round(time.Second).String() + " / " + actual
}
