package scenario

import (
	"context"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/spec"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Needs of the run's mode selection are marked so (reported, not failed,
// below the qualification gate).
func TestSelectionNeeds(t *testing.T) {
	if !NeedModes(mode.None, mode.Sidecar).Selection || !NeedMeshedModes(2).Selection {
		t.Error("mode-selection needs are not marked Selection")
	}
}

// The layer need fires only with sidecar and an ambient mode side by side
// on a layer without sidecar HBONE (the negative control); Istio's
// defaults, or no ambient mode, or no sidecar meet it.
func TestNeedSidecarHBONE(t *testing.T) {
	if !NeedSidecarHBONE.Layer || NeedSidecarHBONE.Selection {
		t.Error("sidecar HBONE is the layer's need")
	}
	const why = "the sidecars are upstream Envoy"
	for _, c := range []struct {
		modes   []mode.Mode
		noHBONE string
		unmet   bool
	}{
		{[]mode.Mode{mode.Sidecar, mode.AmbientL4}, why, true},
		{[]mode.Mode{mode.None, mode.Sidecar, mode.AmbientL7}, why, true},
		{[]mode.Mode{mode.Sidecar, mode.AmbientL4}, "", false},
		{[]mode.Mode{mode.AmbientL4, mode.AmbientL7}, why, false},
		{[]mode.Mode{mode.None, mode.Sidecar}, why, false},
	} {
		r := spec.NewRun(&claims.Claim{ID: "mtls.mixed-namespaces"}, c.modes[0], &spec.Env{Config: &config.Config{Modes: c.modes}, NoSidecarHBONE: c.noHBONE}, nil)
		err := NeedSidecarHBONE.Check(context.Background(), r)
		if (err != nil) != c.unmet {
			t.Errorf("modes %v, no HBONE %q: %v, want unmet %v", c.modes, c.noHBONE, err, c.unmet)
		}
		if err != nil && !strings.Contains(err.Error(), why) {
			t.Errorf("unmet without the layer's reason: %v", err)
		}
	}
}
