package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: echo with ONE hardening setting at a time — preStop sleep 10 s;
// grace period 40 s; and, in sidecar mode, the drain settings.
// Scenario: the T1 load and restart loop once per setting.
// Expectation: GUIDE's "preStop sleep 10 alone eliminated errors entirely
// for sidecar and ambient-L4": the preStop-alone run is judged (zero 503s
// and -1s); the other factors' rates are recorded beside it (REVIEW asks
// for them), and ambient-l7's preStop run is recorded.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.hardening-factors",
	Area:     "rollout",
	Scenario: "the T1 run once per hardening setting alone",
	Slow:     true,
	Loads: func(r *spec.Run) ([]loadplan.Load, error) {
		var runs []steps.RolloutRun
		for _, f := range fixtures.HardeningFactors(r.Mode) {
			runs = append(runs, steps.RolloutRun{Hardening: f.Hardening})
		}
		return steps.RolloutLoads(runs...)(r)
	},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		factors := fixtures.HardeningFactors(r.Mode)
		m := verdict.Measurement{Extra: map[string]float64{}}
		var parts []string
		var results []*steps.RolloutResult
		for _, f := range factors {
			res, err := steps.RolloutLoad(ctx, r, r.Mode, f.Hardening)
			if err != nil {
				return verdict.Measurement{}, err
			}
			results = append(results, res)
			fm := res.Measurement()
			if f.Hardening == (fixtures.Hardening{PreStopSleep: true}) { // the judged run
				m.Count, m.Total, m.NoResponse = fm.Count, fm.Total, fm.NoResponse
			}
			m.Extra[f.Name+"_503"] = float64(*fm.Count)
			m.Extra[f.Name+"_no_response"] = float64(*fm.NoResponse)
			m.Extra[f.Name+"_requests"] = float64(*fm.Total)
			m.Extra[f.Name+"_cycles"] = fm.Extra["cycles"]
			m.Extra[f.Name+"_sockets"] = fm.Extra["sockets"]
			parts = append(parts, fmt.Sprintf("%s: 503 %d, -1 %d of %d (%v cycles)", f.Name, *fm.Count, *fm.NoResponse, *fm.Total, fm.Extra["cycles"]))
		}
		m.Detail = strings.Join(parts, "; ")
		names := make([]string, len(factors))
		for i, f := range factors {
			names[i] = f.Name
		}
		s, err := steps.SetupLoad(r, scenario.EchoURLOf(r.Mode), steps.RolloutFloor)
		if err != nil {
			return verdict.Measurement{}, err
		}
		r.SetSetup("one T1 run per setting alone (%s), each %s, restart loop with %s limit",
			strings.Join(names, ", "), steps.DescribeLoad(r, s), r.Env.Config.Timeouts.RolloutComplete)
		// The setup above is the claim's own: the settings' loads that
		// ran at once with other modes' (-concurrent-modes) say so again.
		steps.StateAtOnce(r, m.Extra, names, results)
		return m, nil
	},
})
