package verdict

import (
	"math"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/sequential"
)

// Names of the rates RateBands returns.
const (
	UnavailableRate = "503 rate"
	NoResponseRate  = "no-response rate"
)

// RateBands are the bands a rollout load's rates are judged against for
// claim c in mode m, as judgeRates judges them: the 503 rate's, and the
// no-response rate's where one is documented; for a documented zero, [0,
// max_rate], and for a count too small to confirm, [0, its bound]. ok is false when the verdict is not a plain comparison of
// those rates with bands (another metric, nothing documented, variants,
// a reduction against a reference run): such a load is never stopped
// early.
func RateBands(c *claims.Claim, m mode.Mode) (names []string, bands []sequential.Band, ok bool) {
	doc, found := c.DocumentedFor(m)
	if !found || !c.AppliesTo(m) || c.Metric != claims.ErrorRate || doc.Count == nil || doc.Total == nil || *doc.Total <= 0 ||
		len(doc.ByKubeProxy) > 0 || len(doc.ByConntrackMax) > 0 || len(doc.Variants()) > 1 {
		return nil, nil, false
	}
	if ref := c.Reference; ref != nil && ref.AppliesTo(m) {
		return nil, nil, false
	}
	add := func(name string, count int64) bool {
		var b sequential.Band
		if count == 0 {
			if c.Tolerance.MaxRate == nil {
				return false
			}
			b = sequential.Band{Low: 0, High: *c.Tolerance.MaxRate}
		} else if bound, _, small := unconfirmable(count, *doc.Total, c.Tolerance); small {
			// Judged only as an upper bound, as judgeRate does.
			b = sequential.Band{Low: 0, High: bound}
		} else {
			lo, hi, _ := band(float64(count)/float64(*doc.Total), c.Tolerance)
			b = sequential.Band{Low: math.Max(lo, 0), High: math.Min(hi, 1)}
		}
		if !(b.High > b.Low) {
			return false
		}
		names, bands = append(names, name), append(bands, b)
		return true
	}
	if !add(UnavailableRate, *doc.Count) {
		return nil, nil, false
	}
	if doc.Unanswered != nil && !add(NoResponseRate, *doc.Unanswered) {
		return nil, nil, false
	}
	return names, bands, true
}
