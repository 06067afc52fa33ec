package steps

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Needs of the run's mode selection are marked so (reported, not failed,
// below the qualification gate); the cluster's are not.
func TestSelectionNeeds(t *testing.T) {
	if !NeedModes(mode.None, mode.Sidecar).Selection || !NeedMeshedModes(2).Selection {
		t.Error("mode-selection needs are not marked Selection")
	}
	if NeedNetPol.Selection {
		t.Error("NetworkPolicy enforcement is the cluster's need, not the selection's")
	}
}
