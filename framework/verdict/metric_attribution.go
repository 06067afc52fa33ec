package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// judgeAttribution judges what a run's events (fortio -1s, 503s) were
// caused by against the categories the source attributes them to: the
// share of the explained events in those categories, with its Wilson
// interval, against the claim's band (at_least 0.5: the source's cause is
// the dominant one).
//
// Unexplained events (claims.Unattributed) count neither way in the
// estimate; the interval counts them against the source at its low end and
// for it at its high end, so only events explained by another cause can
// make the verdict "not reproduced". A run without any such event cannot
// show a cause at all: inconclusive, never reproduced and never not.
func judgeAttribution(c *claims.Claim, doc claims.Value, got Measurement) (Result, string) {
	a := doc.Attribution
	if a == nil || len(a.To) == 0 {
		return Inconclusive, "the registry attributes nothing for this mode"
	}
	var n, named, unexplained int64
	for cat, k := range got.Attribution {
		n += k
		switch {
		case cat == claims.Unattributed:
			unexplained += k
		case slices.Contains(a.To, cat):
			named += k
		}
	}
	src := strings.Join(a.To, " or ")
	counts := attributionText(got.Attribution)
	if n == 0 {
		return Inconclusive, fmt.Sprintf("no event to attribute in this run, so no cause can be observed (documented: %d attributed to %s)", a.Of, src)
	}
	explained := n - unexplained
	if explained == 0 || unexplained > explained {
		return Inconclusive, fmt.Sprintf("only %d of %d events are explained (%s): too few to say what caused them", explained, n, counts)
	}
	low, err := stats.Wilson(named, n, Confidence)
	if err != nil {
		return Inconclusive, err.Error()
	}
	high, err := stats.Wilson(named+unexplained, n, Confidence)
	if err != nil {
		return Inconclusive, err.Error()
	}
	est := float64(named) / float64(explained)
	lo, hi, how := band(1, c.Tolerance)
	res := classify(est, low.CI.Low, high.CI.High, lo, hi)
	return res, fmt.Sprintf("dominant cause %s (%s); share attributed to %s %s [%s, %s] of %d explained, vs documented %d of %d (%s: [%s, %s])",
		Dominant(got.Attribution), counts, src, pct(est), pct(low.CI.Low), pct(high.CI.High), explained, a.Of, a.Of, how, pct(lo), pct(min(hi, 1)))
}

// Dominant is the explained category with the most events ("" when none is
// explained); a tie is named with both, "eof=reset".
func Dominant(counts map[string]int64) string {
	var best []string
	var top int64
	for cat, k := range counts {
		if cat == claims.Unattributed || k == 0 {
			continue
		}
		switch {
		case k > top:
			top, best = k, []string{cat}
		case k == top:
			best = append(best, cat)
		}
	}
	sort.Strings(best)
	return strings.Join(best, "=")
}

// attributionText is "reset 5, eof 2, unattributed 1", largest first.
func attributionText(counts map[string]int64) string {
	cats := make([]string, 0, len(counts))
	for c := range counts {
		cats = append(cats, c)
	}
	sort.Slice(cats, func(i, j int) bool {
		if counts[cats[i]] != counts[cats[j]] {
			return counts[cats[i]] > counts[cats[j]]
		}
		return cats[i] < cats[j]
	})
	parts := make([]string, len(cats))
	for i, c := range cats {
		parts[i] = fmt.Sprintf("%s %d", c, counts[c])
	}
	return strings.Join(parts, ", ")
}

// attribution is events of one kind (fortio -1s, 503s) counted per cause,
// judged by the share of the causes the source names (judgeAttribution).
type attributionMetric struct{ plain }

func (attributionMetric) Judge(c *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	res, reason := judgeAttribution(c, doc, got)
	return res, reason, nil
}

// Bands: the source attributes all its events to its categories (share 1).
func (attributionMetric) Bands(c *claims.Claim, _ mode.Mode, doc claims.Value) ([]Band, int) {
	if doc.Attribution == nil {
		return nil, 0
	}
	return []Band{bandOf("share attributed to "+strings.Join(doc.Attribution.To, " or "), 1, c.Tolerance)}, 1
}

// AsMeasured: the source's events, all in its first category: the source
// does not split them between its categories (GUIDE's "reset/EOF").
func (attributionMetric) AsMeasured(_ *claims.Claim, doc claims.Value, got *Measurement) {
	if a := doc.Attribution; a != nil {
		got.Attribution = map[string]int64{a.To[0]: a.Of}
	}
}
