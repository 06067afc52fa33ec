package all

import (
	"context"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Which rollout loads may stop early, decided from the plan's readers: the
// hardened run (read by rollout.hardened alone, judged on its rates against
// [0, max_rate]) may; the baseline run may not (rollout.no-response-cause
// reads its -1 causes), nor the access-log run (attribution), nor anything
// with -sequential=false.
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
		"rollout-sidecar-accesslog": "rollout.503-attribution",
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
