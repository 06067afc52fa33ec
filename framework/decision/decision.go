// Package decision regenerates GUIDE's Decision Summary from a run: its four
// requirements (mTLS, NetworkPolicy, P50 latency over the no-mesh baseline,
// zero-downtime rollout) as rows, the meshed modes that ran as columns, each
// cell the measured figure with its interval, GUIDE's figure beside it, and a
// mark set by a stated rule that reads the run's verdicts and measurements:
//
//	✅ pass   ⚠️ pass with a condition   ❌ fail   ❔ undecided (the cell says why)
//
// The same rules applied to GUIDE's documented values give GUIDE's own mark
// beside each cell, so a reader sees where the run and GUIDE part. Nothing
// is guessed: a claim that was not measured, or whose verdict is
// inconclusive, leaves the cell undecided with the reason.
//
// The functions are pure: they read judged entries and the registry, and
// touch no file.
package decision

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Mark is a cell's judgement.
type Mark string

const (
	Pass      Mark = "✅"
	Caveat    Mark = "⚠️"
	Fail      Mark = "❌"
	Undecided Mark = "❔"
)

// Requirement is one of GUIDE's four rows.
type Requirement string

const (
	MTLS          Requirement = "mTLS"
	NetworkPolicy Requirement = "NetworkPolicy"
	Latency       Requirement = "Latency (P50 over no-mesh baseline)"
	Rollout       Requirement = "Zero-downtime rollout"
)

// rows are GUIDE's requirements in its order, each with the rule that
// marks its cell in a mode.
var rows = []struct {
	name Requirement
	cell func(*run, mode.Mode) Cell
}{
	{MTLS, (*run).mtls},
	{NetworkPolicy, (*run).netpol},
	{Latency, (*run).latency},
	{Rollout, (*run).rollout},
}

// The claims that feed each row.
var (
	MTLSClaims    = []string{"mtls.plaintext-blocked", "mtls.in-mesh-ok", "mtls.spiffe-identity"}
	NetPolClaims  = []string{"netpol.app-port-only", "netpol.hbone-allowed", "netpol.hbone-opens-unlisted-ports"}
	LatencyClaims = []string{"latency.p50-overhead"}
	RolloutClaims = []string{"rollout.baseline", "rollout.hardened"}
	// L7Claims are the in-mesh routing claims a tier's "needs L7 routing"
	// reads (package requirements' recommendation).
	L7Claims = []string{"canary.east-west-needs-l7", "l7.header-routing", "l7.path-routing"}
)

// Rules states each row's rules, as the report prints them.
var Rules = map[Requirement]string{
	MTLS: "✅ when mtls.plaintext-blocked, mtls.in-mesh-ok and mtls.spiffe-identity are all reproduced (STRICT blocks plaintext, " +
		"the mesh answers 200, every workload holds its SPIFFE identity); ❌ when any is not reproduced; ❔ otherwise. No ⚠️: STRICT holds or it does not.",
	NetworkPolicy: "✅ when an ingress policy allowing 8080 only lets in-mesh traffic through (netpol.app-port-only answers 200): existing rules work as-is; " +
		"⚠️ when it is blocked and the policy allowing 8080 and 15008 answers (netpol.hbone-allowed 200): the HBONE port must be allowed; " +
		"❌ when it is blocked and 15008 does not help (or there is no 15008 variant: sidecar); ❔ when either is inconclusive or not measured.",
	Latency: "the P50 overhead's interval against latency.p50-overhead's bands: ✅ within the top of the band of GUIDE's smallest overhead (negligible); " +
		"⚠️ above it (an overhead to budget for); ❌ above the band of GUIDE's largest overhead (more than any mode in GUIDE); ❔ when the interval straddles the first edge.",
	Rollout: "503 and -1 rates during rollout restarts (rollout.baseline, as deployed), zero judged as rollout.baseline judges it (95% upper bound at most its max_rate): " +
		"✅ both zero; ⚠️ errors as deployed, none in the hardened run (rollout.hardened: preStop sleep, grace period, sidecar drain); " +
		"❌ errors as deployed and in the hardened run (or the hardened run not measured); ❔ when the as-deployed rates are neither shown zero nor shown above it.",
}

// Judged is one judged entry of a run: the verdict with the measurement
// behind it.
type Judged struct {
	verdict.Verdict
	Measurement verdict.Measurement
}

// Input is what a summary is built from.
type Input struct {
	// Modes are the modes the run selected.
	Modes   []mode.Mode
	Entries []Judged
	// NotMeasured says why a "claim|mode" pair has no entry.
	NotMeasured map[string]string
}

// Interval is an estimate with its interval, in Unit.
type Interval struct {
	Estimate, Low, High float64
	// How says where the interval comes from.
	How string
}

// Cell is one requirement in one mode.
type Cell struct {
	Mode mode.Mode
	Mark Mark
	// Measured is the figure with its interval, or why there is none.
	Measured string
	// Why is the rule's reading of the verdicts, in words.
	Why string
	// Short is the figure alone (what GUIDE's cell is shown as).
	Short string
	// Guide is GUIDE's figure for the cell and GuideMark its mark by the
	// same rule.
	Guide     string
	GuideMark Mark
	// Figure is the cell's number where it has one (latency: ms over no
	// mesh; rollout: share of requests answered 503 or not at all).
	Figure *Interval
}

// Row is one requirement across the modes.
type Row struct {
	Requirement Requirement
	Rule        string
	Cells       []Cell
}

// Summary is the regenerated Decision Summary.
type Summary struct {
	Modes []mode.Mode
	Rows  []Row
	// Conclusion ranks the modes where intervals separate them and says so
	// where they do not.
	Conclusion string
	// Notes: GUIDE's modes not in the run, the no-mesh baseline's figures.
	Notes []string
}

// Cell returns the cell of requirement r in mode m.
func (s *Summary) Cell(r Requirement, m mode.Mode) (Cell, bool) {
	for _, row := range s.Rows {
		if row.Requirement != r {
			continue
		}
		for _, c := range row.Cells {
			if c.Mode == m {
				return c, true
			}
		}
	}
	return Cell{}, false
}

// run indexes an input's entries.
type run struct {
	in      Input
	reg     *claims.Registry
	entries map[string]*Judged
}

func (r *run) get(claim string, m mode.Mode) (*Judged, string) {
	if e, ok := r.entries[claim+"|"+string(m)]; ok {
		return e, ""
	}
	if why, ok := r.in.NotMeasured[claim+"|"+string(m)]; ok {
		return nil, fmt.Sprintf("%s not measured: %s", claim, why)
	}
	if c, ok := r.reg.Get(claim); ok && !c.AppliesTo(m) {
		return nil, fmt.Sprintf("%s does not apply to %s", claim, m)
	}
	return nil, fmt.Sprintf("%s not measured in %s", claim, m)
}

// Summarize builds the summary of a run; false when no meshed mode ran
// (nothing to decide between).
func Summarize(in Input, reg *claims.Registry) (*Summary, bool) {
	r := &run{in: in, reg: reg, entries: map[string]*Judged{}}
	for i := range in.Entries {
		e := &in.Entries[i]
		r.entries[e.Claim+"|"+string(e.Mode)] = e
	}
	s := &Summary{}
	for _, m := range in.Modes {
		if m.Meshed() {
			s.Modes = append(s.Modes, m)
		}
	}
	if len(s.Modes) == 0 {
		return nil, false
	}
	for _, req := range rows {
		row := Row{Requirement: req.name, Rule: Rules[req.name]}
		for _, m := range s.Modes {
			c := req.cell(r, m)
			c.Mode = m
			row.Cells = append(row.Cells, c)
		}
		s.Rows = append(s.Rows, row)
	}
	var absent []string
	for _, m := range mode.Meshed() {
		if !contains(s.Modes, m) {
			absent = append(absent, string(m))
		}
	}
	if len(absent) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("GUIDE's %s: not in this run (-mode), so no column.", strings.Join(absent, " and ")))
	}
	if e, _ := r.get("rollout.baseline", mode.None); e != nil {
		if f, ok := rolloutFigure(e.Measurement); ok {
			s.Notes = append(s.Notes, fmt.Sprintf("No mesh, the same rollouts: %s.", f))
		}
	}
	s.Conclusion = conclude(s)
	return s, true
}

// ---------------------------------------------------------------- mTLS

func (r *run) mtls(m mode.Mode) Cell {
	var got []outcomeOf
	for _, id := range MTLSClaims {
		e, why := r.get(id, m)
		got = append(got, outcomeOf{id, e, why})
	}
	c := mtlsRule(got)
	var doc []outcomeOf
	for _, id := range MTLSClaims {
		doc = append(doc, r.documented(id, m))
	}
	g := mtlsRule(doc)
	c.Guide, c.GuideMark = g.Short, g.Mark
	return c
}

// outcomeOf is one claim's judged entry in a mode, or why there is none.
type outcomeOf struct {
	claim string
	e     *Judged
	why   string
}

func (o outcomeOf) outcome() string {
	if o.e == nil {
		return ""
	}
	return o.e.Measurement.Outcome
}

// documented is claim's documented value in m as if it were measured and
// judged: GUIDE's cell by the run's rules.
func (r *run) documented(claim string, m mode.Mode) outcomeOf {
	c, ok := r.reg.Get(claim)
	if !ok {
		return outcomeOf{claim: claim, why: claim + " is not in the registry"}
	}
	d, ok := c.DocumentedFor(m)
	if !ok {
		return outcomeOf{claim: claim, why: fmt.Sprintf("%s: nothing documented for %s", claim, m)}
	}
	got := verdict.Measurement{Outcome: d.Outcome, Count: d.Count, Total: d.Total, NoResponse: d.Unanswered, Value: d.Value}
	v := verdict.Judge(c, m, got)
	return outcomeOf{claim: claim, e: &Judged{Verdict: v, Measurement: got}}
}

func mtlsRule(got []outcomeOf) Cell {
	var failed, undecided, seen []string
	for _, o := range got {
		switch {
		case o.e == nil:
			undecided = append(undecided, o.why)
		case o.e.Result == verdict.NotReproduced:
			failed = append(failed, fmt.Sprintf("%s: %s", o.claim, o.e.MeasuredText))
		case o.e.Result != verdict.Reproduced:
			undecided = append(undecided, fmt.Sprintf("%s %s: %s", o.claim, o.e.Result, o.e.Reason))
		default:
			seen = append(seen, o.outcome())
		}
	}
	switch {
	case len(failed) > 0:
		return Cell{Mark: Fail, Short: "STRICT not shown", Measured: "STRICT not shown: " + strings.Join(failed, "; "), Why: "a check of GUIDE §1 not reproduced"}
	case len(undecided) > 0:
		return Cell{Mark: Undecided, Short: "undecided", Measured: "undecided: " + strings.Join(undecided, "; "), Why: "not every check of GUIDE §1 decided"}
	}
	return Cell{Mark: Pass, Short: "STRICT verified", Measured: "STRICT verified: plaintext " + seen[0] + ", in-mesh " + seen[1] + ", SPIFFE identity " + seen[2],
		Why: "all three checks of GUIDE §1 reproduced"}
}

// ---------------------------------------------------------------- NetworkPolicy

func (r *run) netpol(m mode.Mode) Cell {
	var got, doc []outcomeOf
	for _, id := range NetPolClaims {
		e, why := r.get(id, m)
		got = append(got, outcomeOf{id, e, why})
		doc = append(doc, r.documented(id, m))
	}
	c := netpolRule(m, got[0], got[1], got[2])
	g := netpolRule(m, doc[0], doc[1], outcomeOf{}) // istio/istio#56659 is not GUIDE's
	c.Guide, c.GuideMark = g.Short, g.Mark
	return c
}

func decided(o outcomeOf) (string, string) {
	if o.e == nil {
		return "", o.why
	}
	if o.e.Result == verdict.Inconclusive {
		return "", fmt.Sprintf("%s inconclusive: %s", o.claim, o.e.Reason)
	}
	if o.outcome() == "" {
		return "", o.claim + ": no outcome observed"
	}
	return o.outcome(), ""
}

func netpolRule(m mode.Mode, app, hbone, unlisted outcomeOf) Cell {
	a, why := decided(app)
	if a == "" {
		return Cell{Mark: Undecided, Measured: "undecided: " + why, Why: "the 8080-only policy's effect is not known"}
	}
	switch a {
	case "http-200":
		return Cell{Mark: Pass, Short: "existing rules work as-is", Measured: "8080-only policy: 200 (existing rules work as-is)", Why: "netpol.app-port-only answered 200"}
	case "blocked":
	default:
		return Cell{Mark: Undecided, Measured: "undecided: 8080-only policy: " + a, Why: "neither 200 nor blocked"}
	}
	if !m.Ambient() {
		return Cell{Mark: Fail, Short: "8080-only policy blocks", Measured: "8080-only policy: blocked; no HBONE variant applies to " + string(m), Why: "netpol.app-port-only blocked in-mesh traffic"}
	}
	h, why := decided(hbone)
	if h == "" {
		return Cell{Mark: Undecided, Measured: "8080-only policy: blocked; with 15008: undecided: " + why, Why: "the 15008 variant is not known"}
	}
	if h != "http-200" {
		return Cell{Mark: Fail, Short: "blocked even with 15008", Measured: "8080-only policy: blocked; with 15008 allowed: " + h, Why: "blocked even with HBONE allowed"}
	}
	c := Cell{Mark: Caveat, Short: "must allow HBONE port 15008", Measured: "8080-only policy: blocked; with 15008 (HBONE) allowed: 200 (must allow 15008)",
		Why: "netpol.app-port-only blocked, netpol.hbone-allowed answered 200"}
	if u, _ := decided(unlisted); u == "http-200" {
		c.Measured += "; 15008 then also reaches ports the policy does not list (istio/istio#56659)"
	}
	return c
}

// ---------------------------------------------------------------- latency

func (r *run) latency(m mode.Mode) Cell {
	cl, ok := r.reg.Get("latency.p50-overhead")
	if !ok {
		return Cell{Mark: Undecided, Measured: "latency.p50-overhead is not in the registry"}
	}
	neg, max, ok := latencyEdges(cl)
	if !ok {
		return Cell{Mark: Undecided, Measured: "latency.p50-overhead's bands are not stated"}
	}
	var c Cell
	e, why := r.get(cl.ID, m)
	switch {
	case e == nil:
		c = Cell{Mark: Undecided, Measured: "undecided: " + why}
	case e.Measurement.Unmet != "":
		c = Cell{Mark: Undecided, Measured: "undecided: " + e.Reason}
	default:
		iv, problem := OverheadInterval(e.Measurement)
		if problem != "" {
			c = Cell{Mark: Undecided, Measured: "undecided: " + problem}
		} else {
			c = latencyRule(iv, neg, max)
			c.Figure = &iv
			c.Why += fmt.Sprintf("; against GUIDE's %s: %s", describeDocValue(cl, m), e.Result)
		}
	}
	if d, ok := cl.DocumentedFor(m); ok && d.Value != nil {
		g := latencyRule(Interval{Estimate: *d.Value, Low: *d.Value, High: *d.Value}, neg, max)
		c.Guide, c.GuideMark = signedMs(*d.Value), g.Mark
	} else {
		c.Guide, c.GuideMark = "-", Undecided
	}
	return c
}

// latencyEdges are the top of the band of the smallest documented
// overhead (GUIDE's "negligible") and the top of the band of the largest.
func latencyEdges(c *claims.Claim) (neg, max float64, ok bool) {
	small, big := math.Inf(1), math.Inf(-1)
	neg, max = math.NaN(), math.NaN()
	for _, m := range c.Modes {
		d, has := c.DocumentedFor(m)
		bands := verdict.Bands(c, m)
		if !has || d.Value == nil || len(bands) == 0 {
			continue
		}
		if *d.Value < small {
			small, neg = *d.Value, bands[0].High
		}
		if *d.Value > big {
			big, max = *d.Value, bands[0].High
		}
	}
	return neg, max, !math.IsNaN(neg) && !math.IsNaN(max)
}

func latencyRule(iv Interval, neg, max float64) Cell {
	c := Cell{Measured: fmt.Sprintf("%s [%s, %s]", signedMs(iv.Estimate), signedMs(iv.Low), signedMs(iv.High))}
	if iv.How != "" {
		c.Measured += " (" + iv.How + ")"
	}
	switch {
	case iv.High <= neg:
		c.Mark, c.Why = Pass, fmt.Sprintf("negligible: the interval lies at or below %s, the top of the band of GUIDE's smallest overhead", signedMs(neg))
	case iv.Low > max:
		c.Mark, c.Why = Fail, fmt.Sprintf("above %s, the top of the band of GUIDE's largest overhead: more than any mode in GUIDE", signedMs(max))
	case iv.Low > neg:
		c.Mark, c.Why = Caveat, fmt.Sprintf("an overhead: the interval lies above %s (not negligible)", signedMs(neg))
	default:
		c.Mark, c.Why = Undecided, fmt.Sprintf("the interval straddles %s: negligible or not cannot be told", signedMs(neg))
	}
	return c
}

// Extra keys of latency.p50-overhead's record.
const (
	ExtraCILow           = "ci_low_ms" // the overhead's 95% interval, from both histograms
	ExtraCIHigh          = "ci_high_ms"
	ExtraP50             = "p50_ms"
	ExtraP50Bucket       = "p50_bucket_ms"
	ExtraBaselineP50     = "baseline_p50_ms"
	ExtraBaselineBucket  = "baseline_p50_bucket_ms"
	bucketIntervalHow    = "each P50 within its histogram bucket; the record holds no sampling interval"
	repeatsIntervalHowFm = "t interval over %d runs"
)

// OverheadInterval is a P50 overhead with its interval: the record's own
// (both histograms' order-statistic intervals), the t interval of repeats,
// or, for a record holding neither, the bounds fortio's buckets put on each
// P50. problem says why there is none.
func OverheadInterval(m verdict.Measurement) (Interval, string) {
	if m.Value == nil {
		return Interval{}, "no P50 overhead was measured"
	}
	v := *m.Value
	if lo, ok := m.Extra[ExtraCILow]; ok {
		if hi, ok := m.Extra[ExtraCIHigh]; ok && lo <= v && v <= hi {
			return Interval{Estimate: v, Low: lo, High: hi, How: "95% interval from both histograms"}, ""
		}
	}
	if len(m.Runs) > 1 {
		s, err := stats.Summarize(m.Runs, verdict.Confidence)
		if err == nil {
			return Interval{Estimate: s.Mean, Low: s.CI.Low, High: s.CI.High, How: fmt.Sprintf(repeatsIntervalHowFm, s.N)}, ""
		}
	}
	p, pw := m.Extra[ExtraP50], m.Extra[ExtraP50Bucket]
	b, bw := m.Extra[ExtraBaselineP50], m.Extra[ExtraBaselineBucket]
	if pw <= 0 || bw <= 0 || p <= 0 || b <= 0 {
		return Interval{}, "the record holds no interval for the P50 overhead (no repeats, no histogram buckets)"
	}
	plo, phi := bucketOf(p, pw)
	blo, bhi := bucketOf(b, bw)
	return Interval{Estimate: v, Low: plo - bhi, High: phi - blo, How: bucketIntervalHow}, ""
}

// bucketOf is the fortio histogram bucket of width w holding v: fortio's
// bucket edges are multiples of their bucket's width.
func bucketOf(v, w float64) (float64, float64) {
	lo := math.Floor(v/w+1e-9) * w
	return lo, lo + w
}

// ---------------------------------------------------------------- rollout

// rates are a rollout run's 503 and -1 shares with their intervals.
type rates struct {
	unavailable, noResponse, failed stats.Proportion
}

func rolloutRates(m verdict.Measurement) (rates, bool) {
	if m.Count == nil || m.Total == nil || *m.Total == 0 || m.NoResponse == nil {
		return rates{}, false
	}
	u, err1 := stats.Wilson(*m.Count, *m.Total, verdict.Confidence)
	n, err2 := stats.Wilson(*m.NoResponse, *m.Total, verdict.Confidence)
	f, err3 := stats.Wilson(min(*m.Count+*m.NoResponse, *m.Total), *m.Total, verdict.Confidence)
	if err1 != nil || err2 != nil || err3 != nil {
		return rates{}, false
	}
	return rates{u, n, f}, true
}

func rolloutFigure(m verdict.Measurement) (string, bool) {
	r, ok := rolloutRates(m)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("503 %d/%d = %s, -1 %d = %s", r.unavailable.Count, r.unavailable.Total, pctCI(r.unavailable), r.noResponse.Count, pctCI(r.noResponse)), true
}

// zeroness: 1 shown zero, -1 shown above zero, 0 neither.
func zeroness(r rates, max float64) int {
	switch {
	case r.unavailable.CI.High <= max && r.noResponse.CI.High <= max:
		return 1
	case r.unavailable.CI.Low > max || r.noResponse.CI.Low > max:
		return -1
	}
	return 0
}

func (r *run) rollout(m mode.Mode) Cell {
	base, why := r.get("rollout.baseline", m)
	hard, hwhy := r.get("rollout.hardened", m)
	cl, ok := r.reg.Get("rollout.baseline")
	if !ok || cl.Tolerance.MaxRate == nil {
		return Cell{Mark: Undecided, Measured: "rollout.baseline states no zero threshold (max_rate)"}
	}
	max := *cl.Tolerance.MaxRate
	c := rolloutRule(base, why, hard, hwhy, max)
	db, dh := r.documented("rollout.baseline", m), r.documented("rollout.hardened", m)
	g := rolloutRule(db.e, db.why, dh.e, dh.why, max)
	c.Guide, c.GuideMark = g.Short, g.Mark
	return c
}

func rolloutRule(base *Judged, why string, hard *Judged, hwhy string, max float64) Cell {
	if base == nil {
		return Cell{Mark: Undecided, Measured: "undecided: " + why}
	}
	if base.Measurement.Unmet != "" {
		return Cell{Mark: Undecided, Measured: "undecided: " + base.Reason}
	}
	br, ok := rolloutRates(base.Measurement)
	if !ok {
		return Cell{Mark: Undecided, Measured: "undecided: rollout.baseline holds no 503 and -1 counts"}
	}
	fig, _ := rolloutFigure(base.Measurement)
	c := Cell{Measured: fig, Short: fmt.Sprintf("503 %s, -1 %s", pct(br.unavailable.Estimate), pct(br.noResponse.Estimate)), Figure: &Interval{Estimate: br.failed.Estimate, Low: br.failed.CI.Low, High: br.failed.CI.High, How: "503 or -1, Wilson 95%"}}
	hardText, hz := "hardened: "+hwhy, 0
	if hard != nil {
		if hr, ok := rolloutRates(hard.Measurement); ok && hard.Measurement.Unmet == "" {
			f, _ := rolloutFigure(hard.Measurement)
			hardText, hz = "hardened: "+f, zeroness(hr, max)
			c.Short += fmt.Sprintf("; hardened: 503 %s, -1 %s", pct(hr.unavailable.Estimate), pct(hr.noResponse.Estimate))
		} else {
			hardText = "hardened: undecided: " + hard.Reason
		}
	}
	switch zeroness(br, max) {
	case 1:
		c.Mark, c.Why = Pass, fmt.Sprintf("no errors as deployed: both upper bounds at most %s", pct(max))
	case 0:
		c.Mark, c.Why = Undecided, fmt.Sprintf("as deployed the rates are neither shown at most %s nor above it (too few requests)", pct(max))
	default:
		switch hz {
		case 1:
			c.Mark, c.Why = Caveat, fmt.Sprintf("errors as deployed; none with GUIDE's hardening (upper bounds at most %s)", pct(max))
		case -1:
			c.Mark, c.Why = Fail, "errors as deployed and with GUIDE's hardening"
		default:
			c.Mark, c.Why = Fail, "errors as deployed; the hardened run does not show zero"
			if hard != nil && hardText != "hardened: undecided: "+hard.Reason {
				c.Why = fmt.Sprintf("errors as deployed; the hardened run's upper bounds are above %s (too few requests to show zero)", pct(max))
			}
		}
	}
	c.Measured += "; " + hardText
	return c
}

// ---------------------------------------------------------------- conclusion

// Rank orders modes by their figures where intervals separate them:
// groups in ascending order, each group's modes not told apart from one
// another (adjacent groups are merged until every group's intervals lie
// wholly above the previous group's).
func Rank(figs map[mode.Mode]Interval) [][]mode.Mode {
	var ms []mode.Mode
	for m := range figs {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		if figs[ms[i]].Estimate != figs[ms[j]].Estimate {
			return figs[ms[i]].Estimate < figs[ms[j]].Estimate
		}
		return ms[i] < ms[j]
	})
	var groups [][]mode.Mode
	for _, m := range ms {
		groups = append(groups, []mode.Mode{m})
	}
	span := func(g []mode.Mode) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, m := range g {
			lo, hi = math.Min(lo, figs[m].Low), math.Max(hi, figs[m].High)
		}
		return lo, hi
	}
	for merged := true; merged; {
		merged = false
		for i := 0; i+1 < len(groups); i++ {
			_, hi := span(groups[i])
			lo, _ := span(groups[i+1])
			if hi >= lo {
				groups[i] = append(groups[i], groups[i+1]...)
				groups = append(groups[:i+1], groups[i+2:]...)
				merged = true
				break
			}
		}
	}
	return groups
}

func conclude(s *Summary) string {
	var parts []string
	for _, req := range []Requirement{Latency, Rollout} {
		figs := map[mode.Mode]Interval{}
		var undecided []string
		for _, row := range s.Rows {
			if row.Requirement != req {
				continue
			}
			for _, c := range row.Cells {
				if c.Figure != nil {
					figs[c.Mode] = *c.Figure
				} else {
					undecided = append(undecided, string(c.Mode))
				}
			}
		}
		what, format := "P50 overhead over no mesh", func(iv Interval) string {
			return fmt.Sprintf("%s [%s, %s]", signedMs(iv.Estimate), signedMs(iv.Low), signedMs(iv.High))
		}
		if req == Rollout {
			what, format = "Errors during rollouts as deployed (503 or -1)", func(iv Interval) string {
				return fmt.Sprintf("%s [%s, %s]", pct(iv.Estimate), pct(iv.Low), pct(iv.High))
			}
		}
		var b strings.Builder
		b.WriteString(what + ": ")
		switch len(figs) {
		case 0:
			b.WriteString("no mode measured")
		case 1:
			for m, iv := range figs {
				fmt.Fprintf(&b, "%s %s, the only meshed mode measured, so nothing is ranked", m, format(iv))
			}
		default:
			groups := Rank(figs)
			var gs []string
			var ties []string
			for _, g := range groups {
				var names []string
				for _, m := range g {
					names = append(names, fmt.Sprintf("%s %s", m, format(figs[m])))
				}
				gs = append(gs, strings.Join(names, " ≈ "))
				if len(g) > 1 {
					ties = append(ties, mode.Join(g, " and "))
				}
			}
			b.WriteString(strings.Join(gs, " < "))
			if len(groups) == 1 {
				b.WriteString(" (the intervals overlap: not ranked)")
			} else if len(ties) > 0 {
				fmt.Fprintf(&b, " (%s: intervals overlap, not told apart)", strings.Join(ties, "; "))
			}
		}
		if len(undecided) > 0 {
			fmt.Fprintf(&b, "; %s without a figure", strings.Join(undecided, ", "))
		}
		parts = append(parts, b.String())
	}
	var all []string
	for _, m := range s.Modes {
		ok := true
		for _, req := range rows {
			if c, _ := s.Cell(req.name, m); c.Mark != Pass {
				ok = false
			}
		}
		if ok {
			all = append(all, string(m))
		}
	}
	tail := "no measured mode is ✅ on all four rows"
	if len(all) > 0 {
		tail = strings.Join(all, ", ") + " ✅ on all four rows"
	}
	return "From this run: " + strings.Join(parts, ". ") + ". " + strings.ToUpper(tail[:1]) + tail[1:] + "."
}

// ---------------------------------------------------------------- words

func describeDocValue(c *claims.Claim, m mode.Mode) string {
	d, ok := c.DocumentedFor(m)
	if !ok || d.Value == nil {
		return "figure (none documented)"
	}
	return signedMs(*d.Value)
}

func signedMs(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if v >= 0 {
		s = "+" + s
	}
	return s + " ms"
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'g', 3, 64) + "%" }

func pctCI(p stats.Proportion) string {
	return fmt.Sprintf("%s [%s, %s]", pct(p.Estimate), pct(p.CI.Low), pct(p.CI.High))
}

func contains(ms []mode.Mode, m mode.Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}
