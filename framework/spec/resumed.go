package spec

import "github.com/meshclaims/meshclaims/framework/loadplan"

// LabelMeasured marks, in a resumed run (-resume), a spec an earlier part
// of the run measured: ExcludeMeasured leaves it out, so it is skipped
// and "spec N of M" counts only what runs.
const LabelMeasured = "measured-earlier"

// BuildResumed is Build for a resumed run: the specs keyed (loadplan.Key)
// in measured carry LabelMeasured.
func BuildResumed(planned []Planned, env func() *Env, measured map[string]bool) {
	build(planned, env, func(p Planned) []string {
		if measured[loadplan.Key(p.Claim.ID, p.Mode)] {
			return []string{LabelMeasured}
		}
		return nil
	})
}

// ExcludeMeasured is the label filter that runs what filter runs, less
// the specs LabelMeasured marks.
func ExcludeMeasured(filter string) string {
	if filter == "" {
		return "!" + LabelMeasured
	}
	return "(" + filter + ") && !" + LabelMeasured
}
