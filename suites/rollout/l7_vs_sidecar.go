package rollout

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Needs: sidecar selected in the same run. Scenario: the T1 baseline runs of
// ambient-l7 and sidecar (shared with rollout.baseline).
// Expectation: ambient-l7's 503 rate about 5x sidecar's, with an interval.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.l7-vs-sidecar",
	Area:     "rollout",
	Scenario: "ratio of the T1 503 rates, ambient-l7 over sidecar, same run",
	Needs:    []spec.Need{scenario.NeedModes(mode.Sidecar)},
	Slow:     true,
	Loads:    steps.RolloutLoads(steps.RolloutRun{Mode: mode.AmbientL7}, steps.RolloutRun{Mode: mode.Sidecar}),
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		l7, err := steps.RolloutLoad(ctx, r, mode.AmbientL7, fixtures.Hardening{})
		if err != nil {
			return verdict.Measurement{}, err
		}
		sc, err := steps.RolloutLoad(ctx, r, mode.Sidecar, fixtures.Hardening{})
		if err != nil {
			return verdict.Measurement{}, err
		}
		a, err := stats.Wilson(l7.Count503(), l7.Requests(), verdict.Confidence)
		if err != nil {
			return verdict.Measurement{}, err
		}
		b, err := stats.Wilson(sc.Count503(), sc.Requests(), verdict.Confidence)
		if err != nil {
			return verdict.Measurement{}, err
		}
		m := verdict.Measurement{Extra: map[string]float64{"ambient_l7_503": float64(l7.Count503()), "sidecar_503": float64(sc.Count503())}}
		// The setup is sidecar's load's (read last); ambient-l7's and
		// sidecar's placement under -concurrent-modes go in the record.
		steps.StateAtOnce(r, m.Extra, []string{"ambient_l7", "sidecar"}, []*steps.RolloutResult{l7, sc})
		ratio, err := stats.RateRatio(a, b)
		if err != nil {
			// Both rates zero: no ratio exists; the verdict says inconclusive.
			m.Detail = fmt.Sprintf("no ratio: %v", err)
			return m, nil
		}
		m.Ratio = &ratio
		return m, nil
	},
})
