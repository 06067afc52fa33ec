package all

import (
	"context"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Which rollout loads may stop early, decided from the plan's readers: the
// hardened run (read by rollout.hardened alone, judged on its rates against
// [0, max_rate]) may; the baseline run may not (rollout.no-response-cause
// reads its -1 causes, rollout.503-attribution its 503s' access log lines),
// nor anything with -sequential=false. The access-log run of its own that
// rollout.503-attribution once had is declared by no spec any more.
func TestStoppableLoadsFollowTheirReaders(t *testing.T) {
	reg := registry(t)
	cfg := &config.Config{ModesFlag: "none,sidecar", Modes: []mode.Mode{mode.None, mode.Sidecar}, DurationScale: 1, Sequential: true}
	env := &spec.Env{Config: cfg, Registry: reg}
	r := spec.NewRun(reg.MustGet("rollout.hardened"), mode.Sidecar, env, nil)
	ctx := context.Background()
	names, bands, noResp, why := steps.Stoppable(ctx, r, "rollout-sidecar-prestop-grace-drain")
	if why != "" || len(bands) != 2 || bands[0].Low != 0 || bands[0].High <= 0 || !noResp[1] || noResp[0] {
		t.Fatalf("hardened sidecar run: %v %v %v, why %q", names, bands, noResp, why)
	}
	t.Logf("hardened sidecar run stops against %v %v", names, bands)
	for load, want := range map[string]string{
		"rollout-sidecar-baseline":  "rollout.",
		"rollout-sidecar-accesslog": "no spec declares it",
		"rollout-sidecar-prestop":   "other loads",
	} {
		if _, _, _, why := steps.Stoppable(ctx, r, load); !strings.Contains(why, want) {
			t.Errorf("%s: why %q, want it to name %q", load, why, want)
		}
	}
	cfg.Sequential = false
	if _, _, _, why := steps.Stoppable(ctx, r, "rollout-sidecar-prestop-grace-drain"); why != "-sequential=false" {
		t.Errorf("-sequential=false: why %q", why)
	}
}

// Sidecar's baseline run always runs in full, in every mode set with
// sidecar: even in -mode=sidecar alone (no rollout.l7-vs-sidecar) its
// readers rollout.no-response-cause and rollout.503-attribution are not
// judged on its rates against bands, and the attribution alone would
// keep it from stopping (rollout.hardened, which is so judged, is the
// positive control of that check).
func TestSidecarBaselineRunsInFull(t *testing.T) {
	reg := registry(t)
	ctx := context.Background()
	for _, set := range []string{"sidecar", "none,sidecar", "sidecar,ambient-l7", "all"} {
		modes, err := mode.Parse(set)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{ModesFlag: set, Modes: modes, DurationScale: 1, Sequential: true}
		r := spec.NewRun(reg.MustGet("rollout.baseline"), mode.Sidecar, &spec.Env{Config: cfg, Registry: reg}, nil)
		_, _, _, why := steps.Stoppable(ctx, r, "rollout-sidecar-baseline")
		if why == "" || !strings.Contains(why, "rollout.") {
			t.Errorf("-mode=%s: the sidecar baseline run may stop early (why %q)", set, why)
		}
		t.Logf("-mode=%s: the sidecar baseline run runs in full: %s", set, why)
	}
	// rollout.503-attribution alone disqualifies a stop: it is judged on
	// an attribution, not on the run's rates.
	c := reg.MustGet("rollout.503-attribution")
	if _, _, ok := verdict.RateBands(c, mode.Sidecar); ok {
		t.Errorf("rollout.503-attribution is judged on rate bands: the shared run could stop under it")
	}
	if _, _, ok := verdict.RateBands(reg.MustGet("rollout.hardened"), mode.Sidecar); !ok {
		t.Errorf("positive control: rollout.hardened is not judged on rate bands")
	}
}
