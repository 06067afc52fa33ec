package all

import (
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/inventory"
)

// writesAfter's rules on snapshots shaped as the API server fills them.
// The first real run (CI, 2026-12-02) found the blind spot: the negative
// control's empty ConfigMap, created after the switch, carried no
// managedFields entry and was not reported.
func TestWritesAfterReportsEveryNewObject(t *testing.T) {
	switchAt := time.Date(2026, 12, 2, 10, 48, 17, 769e6, time.UTC)
	cm := func(name string, ws ...inventory.Writer) inventory.Object {
		return inventory.Object{Resource: "v1/configmaps", Namespace: "team-payments", Name: name, UID: name, ResourceVersion: "1", Writers: ws}
	}
	before := &inventory.Snapshot{Objects: map[string]inventory.Object{}}
	kept := cm("kept", inventory.Writer{Manager: "kubectl", Operation: "Update", Time: switchAt.Add(-time.Minute)})
	before.Objects[kept.Key()] = kept

	after := &inventory.Snapshot{Objects: map[string]inventory.Object{kept.Key(): kept}}
	lease := inventory.Object{Resource: "coordination.k8s.io/v1/leases", Namespace: "kube-node-lease", Name: "node", UID: "l",
		Writers: []inventory.Writer{{Manager: "kubelet", Operation: "Update", Time: switchAt.Add(time.Second)}}}
	after.Objects[lease.Key()] = lease
	if w := writesAfter(before, after, switchAt); len(w) != 0 {
		t.Fatalf("the cluster's own writes reported: %v", w)
	}

	for _, o := range []inventory.Object{
		cm("empty"), // no managedFields entry at all
		cm("by-test", inventory.Writer{Manager: "all.test", Operation: "Update", Time: switchAt.Add(2 * time.Second)}),
	} {
		again := &inventory.Snapshot{Objects: map[string]inventory.Object{kept.Key(): kept, o.Key(): o}}
		if w := writesAfter(before, again, switchAt); !strings.Contains(strings.Join(w, " "), "team-payments/"+o.Name) {
			t.Errorf("%s created after the switch not reported: %v", o.Name, w)
		}
	}
	// A change after the switch by someone else, and a deletion.
	changed := cm("kept", inventory.Writer{Manager: "all.test", Operation: "Update", Time: switchAt.Add(3 * time.Second)})
	changed.ResourceVersion = "2"
	if w := writesAfter(before, &inventory.Snapshot{Objects: map[string]inventory.Object{kept.Key(): changed}}, switchAt); len(w) != 1 {
		t.Errorf("a write after the switch: %v", w)
	}
	if w := writesAfter(before, &inventory.Snapshot{Objects: map[string]inventory.Object{}}, switchAt); len(w) != 1 || !strings.HasPrefix(w[0], "deleted ") {
		t.Errorf("a deletion: %v", w)
	}
}
