package verdict

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// outcome is what a probe observed (http-200, no-http-response, blocked,
// ...), judged equal to the documented outcome or not; it has no band.
type outcomeMetric struct{ plain }

// ValidateDocumented: a requirement states the outcome of every mode it
// judges.
func (outcomeMetric) ValidateDocumented(c *claims.Claim, add func(string, ...any)) {
	if c.Kind != claims.Requirement {
		return
	}
	for _, m := range c.Modes {
		if v, ok := c.Documented[m]; !ok || v.Outcome == "" {
			add("requirement has no documented outcome for mode %s", m)
		}
	}
}

func (outcomeMetric) Judge(_ *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	if got.Outcome == "" {
		// A detector that could not decide (e.g. a split whose interval
		// contains both candidate shares) says why in Detail.
		if got.Detail != "" {
			return Inconclusive, "no outcome was observed: " + got.Detail, nil
		}
		return Inconclusive, "no outcome was observed", nil
	}
	how := ""
	if got.Detail != "" {
		how = " (" + got.Detail + ")"
	}
	if got.Outcome == doc.Outcome {
		return Reproduced, fmt.Sprintf("observed %s%s as documented", got.Outcome, how), nil
	}
	return NotReproduced, fmt.Sprintf("observed %s%s, documented %s", got.Outcome, how, doc.Outcome), nil
}

func (outcomeMetric) Bands(*claims.Claim, mode.Mode, claims.Value) ([]Band, int) { return nil, 0 }
