package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/decision"
	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ContentSecurityPolicy is report.html's policy: nothing is loaded from
// anywhere (no scripts at all, styles and plots inline, images only as data:
// URIs), so the report reads the same offline and cannot leak that it was
// opened. Links to the raw files beside it still work (navigation is not a
// fetch).
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// htmlPage is what the template draws.
type htmlPage struct {
	CSP      string
	Env      Environment
	Modes    []mode.Mode
	Summary  map[verdict.Result]int
	Scaled   bool
	Rows     []summaryRow
	Claims   []claimSection
	Latency  []figure
	Rollouts []rolloutRow
	Missing  []string
	Sources  []CitedSource
	Problems []string // raw files that could not be drawn, said plainly
	Files    []string // results directory files present (links)
	// EnvOther are environment.json fields the table above does not name
	// (added by later versions: images, Istio settings...), shown as JSON.
	EnvOther []envField
	// Guide is GUIDE's Decision Summary regenerated from the run (nil
	// without a meshed mode), shown first; Requirements the tiers' fit.
	Guide        *decision.Summary
	Requirements *RequirementsResult
}

type envField struct{ Key, Value string }

// shownEnv are the environment.json keys the template names.
var shownEnv = map[string]bool{"run_id": true, "started": true, "finished": true, "provider": true, "cluster": true,
	"kubernetes": true, "node_image": true, "istio": true, "fortio": true, "modes": true, "duration_scale": true,
	"repeats": true, "registry": true, "notes": true, "setup_error": true, "planned_ns": true, "set_up_ns": true,
	"cluster_changes": true, "cluster_changes_file": true}

// otherEnv lists env's fields that the template does not name, so a field
// added to Environment shows up in the report without a template change.
func otherEnv(env Environment) []envField {
	b, err := json.Marshal(env)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []envField
	for k, v := range m {
		if shownEnv[k] {
			continue
		}
		if k == "parts" {
			out = append(out, envField{"resumed", Resumed(env)})
			continue
		}
		var str string
		var ns int64
		if json.Unmarshal(v, &str) == nil {
			out = append(out, envField{k, str})
		} else if strings.HasSuffix(k, "_ns") && json.Unmarshal(v, &ns) == nil {
			// A duration, stored in nanoseconds: shown as one.
			out = append(out, envField{strings.TrimSuffix(k, "_ns"), time.Duration(ns).Round(time.Millisecond).String()})
		} else {
			out = append(out, envField{k, string(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

type summaryRow struct {
	Claim string
	Cells []summaryCell
}

type summaryCell struct {
	Entry *Entry
	Class string
	Mark  string
}

type claimSection struct {
	ID, Title, Source string
	Entries           []Entry
	Figures           []string // anchors of the figures drawn from this claim's raw results
}

type figure struct {
	Anchor, Caption string
	SVG             template.HTML
}

type rolloutRow struct {
	Mode    mode.Mode
	Figures []figure
}

// HTML renders report.html for the results in directory dir: the decision
// summary (claims x modes, linked to each claim's section), latency CDFs per
// mode from the raw fortio histograms with the no-mesh baseline of the same
// run beside, rollout errors per restart cycle on a time axis, the
// environment and links to the raw results. It is one self-contained file.
func HTML(w io.Writer, dir string, res *Results, reg *claims.Registry) error {
	env := res.Environment
	pg := htmlPage{CSP: ContentSecurityPolicy, Env: env, Summary: res.Summary, Scaled: env.DurationScale != 0 && env.DurationScale != 1, EnvOther: otherEnv(env)}
	pg.Guide, pg.Requirements = GuideSummary(res, reg), res.Requirements
	pg.Modes = env.Modes
	if len(pg.Modes) == 0 {
		pg.Modes = mode.All()
	}
	byKey := map[string]*Entry{}
	var ids []string
	for i := range res.Entries {
		e := &res.Entries[i]
		if _, ok := byKey[e.Claim]; !ok {
			ids = append(ids, e.Claim)
			byKey[e.Claim] = nil
		}
		byKey[e.Claim+"|"+string(e.Mode)] = e
	}
	figs := map[string][]string{}

	// Latency: one CDF per mode for every latency-percentile claim, the
	// no-mesh baseline of the same run on the same axes.
	for _, id := range ids {
		base := byKey[id+"|"+string(mode.None)]
		for _, m := range pg.Modes {
			e := byKey[id+"|"+string(m)]
			if e == nil || e.Metric != claims.LatencyPercentiles {
				continue
			}
			var curves []cdfCurve
			add := func(e *Entry, label string) {
				h, problem := histogramOf(dir, e)
				if problem != "" {
					pg.Problems = append(pg.Problems, problem)
					return
				}
				c := cdfCurve{Label: label, Hist: h}
				if reg != nil {
					if cl, ok := reg.Get(e.Claim); ok {
						if doc, ok := cl.DocumentedFor(e.Mode); ok {
							c.Documented = doc.Percentiles
						}
					}
				}
				curves = append(curves, c)
			}
			add(e, string(m))
			if m != mode.None && base != nil {
				add(base, string(mode.None)+" (no-mesh baseline)")
			}
			if len(curves) == 0 {
				continue
			}
			svg, err := latencyCDF(fmt.Sprintf("%s — %s", id, m), curves)
			if err != nil {
				pg.Problems = append(pg.Problems, err.Error())
				continue
			}
			a := "fig-" + anchor(id, string(m))
			pg.Latency = append(pg.Latency, figure{Anchor: a, Caption: fmt.Sprintf("%s in %s: CDF of every request's latency from fortio's histogram; rings are the documented percentiles", id, m), SVG: template.HTML(svg)})
			figs[id] = append(figs[id], a)
		}
	}

	// Rollouts: every kept timeline, one row per mode (baseline and
	// hardened side by side).
	for _, m := range pg.Modes {
		row := rolloutRow{Mode: m}
		for _, id := range ids {
			e := byKey[id+"|"+string(m)]
			if e == nil {
				continue
			}
			for _, rel := range e.Raw {
				if !isTimeline(rel) {
					continue
				}
				tl, err := ReadTimeline(filepath.Join(dir, rel))
				if err != nil {
					pg.Problems = append(pg.Problems, err.Error())
					continue
				}
				svg, err := rolloutTimeline(fmt.Sprintf("%s — %s (%d cycles)", id, m, len(tl.Cycles)), tl)
				if err != nil {
					pg.Problems = append(pg.Problems, fmt.Sprintf("%s: %v", rel, err))
					continue
				}
				a := "fig-" + anchor(id, string(m), tl.Load)
				row.Figures = append(row.Figures, figure{Anchor: a, Caption: fmt.Sprintf("%s, load %s: 503 and -1 (by cause) per restart cycle; dashed lines are cycle starts, the bar under the axis each restart until complete", id, tl.Load), SVG: template.HTML(svg)})
				figs[id] = append(figs[id], a)
			}
		}
		if len(row.Figures) > 0 {
			pg.Rollouts = append(pg.Rollouts, row)
		}
	}

	for _, id := range ids {
		row := summaryRow{Claim: id}
		sec := claimSection{ID: id, Figures: figs[id]}
		for _, m := range pg.Modes {
			e := byKey[id+"|"+string(m)]
			cell := summaryCell{Entry: e}
			if e != nil {
				cell.Class, cell.Mark = resultClass(e.Result), string(e.Result)
				sec.Title, sec.Source = e.Title, e.Source
				shown := *e
				if len(e.Parts) > 0 {
					// A compound claim's row says which part decided it
					// and each part's verdict.
					shown.Reason = strings.TrimPrefix(decidedText(e.Verdict)+" ", " ") + whyText(e.Verdict)
				}
				sec.Entries = append(sec.Entries, shown)
			}
			row.Cells = append(row.Cells, cell)
		}
		pg.Rows = append(pg.Rows, row)
		pg.Claims = append(pg.Claims, sec)
	}
	if reg != nil {
		pg.Missing = Missing(res, reg)
	}
	pg.Sources = res.Sources
	for _, f := range []string{"environment.json", "results.json", "report.md", GlossaryFile, "junit.xml", "raw", "measured", "evidence"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			pg.Files = append(pg.Files, f)
		}
	}
	return htmlTemplate.Execute(w, pg)
}

// histogramOf reads the DurationHistogram of e's first raw fortio result.
func histogramOf(dir string, e *Entry) (*fortioresult.Histogram, string) {
	for _, rel := range e.Raw {
		if !isFortioResult(rel) {
			continue
		}
		r, err := fortioresult.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return nil, fmt.Sprintf("%s (%s): %v", e.Claim, e.Mode, err)
		}
		if r.DurationHistogram == nil || len(r.DurationHistogram.Data) == 0 {
			return nil, fmt.Sprintf("%s (%s): %s has no DurationHistogram buckets", e.Claim, e.Mode, rel)
		}
		return r.DurationHistogram, ""
	}
	return nil, fmt.Sprintf("%s (%s): no raw fortio result listed, so no latency distribution to draw", e.Claim, e.Mode)
}

func anchor(parts ...string) string {
	return unsafeName.ReplaceAllString(strings.Join(parts, "--"), "_")
}

// markWords name the decision marks in words (a headless browser may lack
// an emoji font), which are also the cells' classes; fitClasses are a
// requirement check's cell classes in the same words. Anything else is
// "undecided".
var (
	markWords  = map[decision.Mark]string{decision.Pass: "pass", decision.Caveat: "condition", decision.Fail: "fail"}
	fitClasses = map[decision.Fit]string{decision.Meets: "pass", decision.Misses: "fail"}
)

// wordFor is k's word in words, or "undecided".
func wordFor[K comparable](words map[K]string, k K) string {
	if w, ok := words[k]; ok {
		return w
	}
	return "undecided"
}

func resultClass(r verdict.Result) string {
	return strings.ReplaceAll(string(r), " ", "-")
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"anchor":  anchor,
	"short":   short,
	"mark":    func(r verdict.Result) string { return string(r) }, // words: headless browsers often lack an emoji font
	"class":   resultClass,
	"utc":     func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04:05Z07:00") },
	"count":   func(m map[verdict.Result]int, r string) int { return m[verdict.Result(r)] },
	"wall":    wallTime,
	"seconds": func(d time.Duration) string { return d.Round(time.Second).String() },
	"word":    func(m decision.Mark) string { return wordFor(markWords, m) },
	"fit":     func(f decision.Fit) string { return wordFor(fitClasses, f) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>meshclaims report — run {{.Env.RunID}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 76em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
td.reproduced { background: #e3f4e6; } td.not-reproduced { background: #fbe1e1; }
td.inconclusive { background: #fff3cd; } td.recorded { background: #eef1f7; }
code { font-size: 90%; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; } figcaption { font-size: 85%; color: #555; max-width: 40em; }
.note { color: #7a5b00; }
.failed { background: #fbe1e1; border: 1px solid #c33; padding: 0 .8em; }
.failed pre { white-space: pre-wrap; }
</style>
</head>
<body>
<h1>meshclaims report — run {{.Env.RunID}}</h1>
{{if .Env.SetupError}}<div id="setup-error" class="failed"><p><strong>Set-up failed: no claim was measured.</strong></p><pre>{{.Env.SetupError}}</pre></div>{{end}}
{{with .Guide}}<style>td.pass { background: #e3f4e6; } td.condition { background: #fff3cd; } td.fail { background: #fbe1e1; } td.undecided { background: #eef1f7; }</style>
<h2 id="guide-summary">GUIDE's decision summary, from this run</h2>
<table id="guide-decision-summary">
<tr><th>requirement</th>{{range .Modes}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Requirement}}</th>{{range .Cells}}<td class="{{word .Mark}}"><strong>{{.Mark}} {{word .Mark}}</strong>: {{.Measured}}{{if .Why}}<br><small>{{.Why}}</small>{{end}}<br>GUIDE: {{.GuideMark}} {{word .GuideMark}}: {{.Guide}}</td>{{end}}</tr>
{{end}}</table>
<p id="guide-conclusion"><strong>{{.Conclusion}}</strong></p>
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<details><summary>the rules behind the marks</summary><ul>{{range .Rows}}<li>{{.Requirement}}: {{.Rule}}</li>{{end}}</ul></details>
{{end}}
{{with .Requirements}}<h2 id="requirements">Recommendation per tier ({{.File}})</h2>
{{range .Tiers}}<p><strong>{{.Sentence}}.</strong></p>
{{if .Modes}}<table class="requirements"><tr><th>requirement</th>{{range .Modes}}<th>{{.Mode}}</th>{{end}}</tr>
{{$modes := .Modes}}{{range $i, $c := (index .Modes 0).Checks}}<tr><th>{{$c.Requirement}}</th>{{range $modes}}{{with index .Checks $i}}<td class="{{fit .Fit}}">{{.Fit}}: {{.Evidence}}</td>{{end}}{{end}}</tr>
{{end}}</table>{{end}}{{end}}{{end}}
<p><strong>{{count .Summary "reproduced"}} reproduced, {{count .Summary "not reproduced"}} not reproduced, {{count .Summary "inconclusive"}} inconclusive, {{count .Summary "recorded"}} recorded.</strong>
{{if .Scaled}}Durations were scaled by {{.Env.DurationScale}}: rates and counts come from fewer requests than documented, so their intervals are wider.{{end}}</p>
<p>The verdicts, claim kinds, bands, intervals and other words of this report are defined in <a id="glossary" href="glossary.md">glossary.md</a>.</p>

<h2 id="summary">Decision summary</h2>
<table id="decision-summary">
<tr><th>claim</th>{{range .Modes}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td><a href="#claim-{{anchor .Claim}}"><code>{{.Claim}}</code></a></td>{{range .Cells}}{{if .Entry}}<td class="{{.Class}}"><a href="#{{anchor .Entry.Claim (print .Entry.Mode)}}">{{.Mark}}</a><br>{{short .Entry.MeasuredText 60}}</td>{{else}}<td></td>{{end}}{{end}}</tr>
{{end}}</table>

<h2 id="environment">Environment</h2>
<table>
<tr><th>provider</th><td>{{.Env.Provider}}</td></tr>
<tr><th>cluster</th><td>{{.Env.Cluster}}</td></tr>
<tr><th>Kubernetes</th><td>{{.Env.Kubernetes}}</td></tr>
{{if .Env.NodeImage}}<tr><th>node image</th><td><code>{{.Env.NodeImage}}</code></td></tr>{{end}}
<tr><th>Istio</th><td>{{.Env.Istio}}</td></tr>
<tr><th>fortio</th><td>{{.Env.Fortio}}</td></tr>
<tr><th>modes</th><td>{{range $i, $m := .Env.Modes}}{{if $i}}, {{end}}{{$m}}{{end}}</td></tr>
<tr><th>duration scale</th><td>{{.Env.DurationScale}} (1 = documented setups)</td></tr>
<tr><th>repeats</th><td>{{.Env.Repeats}}</td></tr>
<tr><th>registry</th><td>{{.Env.Registry}}</td></tr>
{{if not .Env.Started.IsZero}}<tr><th>started</th><td>{{utc .Env.Started.UTC}}</td></tr>{{end}}
{{if not .Env.Finished.IsZero}}<tr><th>finished</th><td>{{utc .Env.Finished.UTC}}</td></tr>{{end}}
{{if .Env.Planned}}<tr><th>wall time, planned / actual</th><td>{{wall .Env}} (plan.txt)</td></tr>{{end}}
{{if .Env.SetUp}}<tr><th>suite set-up</th><td>{{seconds .Env.SetUp}}</td></tr>{{end}}
{{if .Env.ClusterChanges}}<tr><th>cluster inventory, before and after</th><td>{{.Env.ClusterChanges}} (<a href="{{.Env.ClusterChangesFile}}">{{.Env.ClusterChangesFile}}</a>)</td></tr>{{end}}
{{range .EnvOther}}<tr><th>{{.Key}}</th><td><code>{{.Value}}</code></td></tr>
{{end}}</table>
{{range .Env.Notes}}<p class="note">{{.}}</p>{{end}}
<p>Results beside this file: {{range $i, $f := .Files}}{{if $i}}, {{end}}<a href="{{$f}}">{{$f}}</a>{{end}}.</p>

{{if .Latency}}<h2 id="latency">Latency distributions</h2>
<div class="figs">{{range .Latency}}<figure id="{{.Anchor}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}</div>{{end}}

{{if .Rollouts}}<h2 id="rollouts">Rollouts: errors per restart cycle</h2>
{{range .Rollouts}}<h3>{{.Mode}}</h3>
<div class="figs">{{range .Figures}}<figure id="{{.Anchor}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}</div>{{end}}{{end}}

{{if .Problems}}<h2 id="not-drawn">Not drawn</h2>
<ul>{{range .Problems}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2 id="claims">Claims</h2>
{{range .Claims}}<section id="claim-{{anchor .ID}}">
<h3><code>{{.ID}}</code> — {{.Title}}</h3>
<p>Source: {{.Source}}{{if .Figures}} · plots: {{range $i, $f := .Figures}}{{if $i}}, {{end}}<a href="#{{$f}}">{{$f}}</a>{{end}}{{end}}</p>
<table>
<tr><th>mode</th><th>documented</th><th>measured</th><th>verdict</th><th>why</th><th>setup, raw results, evidence</th></tr>
{{range .Entries}}<tr id="{{anchor .Claim (print .Mode)}}"><td>{{.Mode}}</td><td>{{.Documented}}</td><td>{{.MeasuredText}}</td><td class="{{class .Result}}">{{mark .Result}}</td><td>{{.Reason}}</td>
<td>{{.Setup}}{{if .Declared}}<br>declared in <code>{{.Declared}}</code>{{end}}{{if .Where}}<br>ran on {{.Where}}{{end}}{{range .Waits}}<br>waited {{.Took}} for {{.For}}{{if .Bounded}} (bounded){{end}}{{end}}{{range .Raw}}<br><a href="{{.}}">{{.}}</a>{{end}}{{range .Evidence}}<br>evidence: <a href="{{.}}">{{.}}</a>{{end}}</td></tr>
{{end}}</table>
</section>
{{end}}
{{if .Sources}}<h2 id="sources">Sources</h2>
<p>Each claim's source is a key below and the section in that document.</p>
<table>
<tr><th>key</th><th>title</th><th>date</th><th>version</th><th>measured on</th></tr>
{{range .Sources}}<tr><td>{{.Key}}</td><td>{{.Title}}</td><td>{{.Date}}</td><td>{{.Version}}</td><td>{{.Platform}}</td></tr>
{{end}}</table>{{end}}

{{if .Missing}}<h2 id="not-measured">Not measured in this run</h2>
<p>Applicable to the selected modes but without a measurement (spec skipped, filtered out, or failed before recording): {{range $i, $m := .Missing}}{{if $i}}, {{end}}{{$m}}{{end}}.</p>{{end}}
</body>
</html>
`))
