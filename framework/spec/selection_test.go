package spec

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

func TestCheckSelection(t *testing.T) {
	reg := claimstest.Registry(t)
	defs := []Def{
		{Claim: "netpol.hbone-allowed", Area: "netpol", Measure: measure, Needs: []Need{{Name: "networkpolicy-enforcement"}}},
		{Claim: "latency.percentiles", Area: "latency", Measure: measure},
	}
	modes := []mode.Mode{mode.None}
	planned, err := Plan(reg, defs, modes)
	if err != nil {
		t.Fatal(err)
	}
	// Positive controls: selections that match a planned spec pass.
	for _, ok := range []Selection{
		{},
		{LabelFilter: "claim:latency.percentiles"},
		{LabelFilter: "area:latency && mode:none"},
		{Focus: []string{"latency.percentiles"}},
		{Skip: []string{"netpol"}},
	} {
		if err := CheckSelection(reg, planned, modes, ok); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	refused := map[string]Selection{
		// a typo of an id: the closest ids are named
		`claim id "latency.percentile" is not known; closest: latency.percentiles`: {LabelFilter: "claim:latency.percentile"},
		// an id of another mode
		`claim "netpol.hbone-allowed" applies to -mode=ambient-l4`: {LabelFilter: "claim:netpol.hbone-allowed"},
		`mode "sidcar" is not known; closest: sidecar`:             {LabelFilter: "mode:sidcar"},
		`area "latncy" is not known; closest: latency`:             {LabelFilter: "area:latncy"},
		// a filter of known words that selects nothing
		`-ginkgo.label-filter="area:latency && slow" match none of the 1 specs planned for -mode=none`: {LabelFilter: "area:latency && slow"},
		`-ginkgo.focus="nothing-like-this" match none`:                                                 {Focus: []string{"nothing-like-this"}},
		`-ginkgo.skip="latency" match none`:                                                            {Skip: []string{"latency"}},
		`-ginkgo.label-filter="claim:(": `:                                                             {LabelFilter: "claim:("},
	}
	for want, sel := range refused {
		err := CheckSelection(reg, planned, modes, sel)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want it to contain %q", sel, err, want)
		}
	}
	if err := CheckSelection(reg, nil, modes, Selection{}); err == nil || !strings.Contains(err.Error(), "no spec is planned") {
		t.Errorf("empty plan: %v", err)
	}
}
