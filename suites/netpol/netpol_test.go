package netpol

import "testing"

// NetworkPolicy enforcement is the cluster's need, not the run's mode
// selection's: unmet, it is reported below the qualification gate.
func TestNetPolNeedIsTheClusters(t *testing.T) {
	if NeedNetPol.Selection {
		t.Error("NetworkPolicy enforcement is the cluster's need, not the selection's")
	}
}
