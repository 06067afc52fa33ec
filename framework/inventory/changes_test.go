package inventory

import (
	"strings"
	"testing"
	"time"
)

// Summarize sorts each difference by who made it: a clean run on a busy
// cluster (the kubelet rewriting a pod's status, a node's Lease) reads "0
// foreign objects changed ... 0 of the run's left"; a run that wrote a
// foreign object, removed one and left one of its own reads each, with
// the writer named.
func TestSummarizeNamesWhoChangedWhat(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	obj := func(res, ns, name, rv string, labels map[string]string, writers ...Writer) Object {
		return Object{Resource: res, Namespace: ns, Name: name, UID: "u-" + name, ResourceVersion: rv, Labels: labels, Writers: writers}
	}
	snap := func(at time.Time, objs ...Object) *Snapshot {
		s := &Snapshot{TakenAt: at, Objects: map[string]Object{}, Resources: []string{"v1/pods", "v1/configmaps"}}
		for _, o := range objs {
			s.Objects[o.Key()] = o
		}
		return s
	}
	later := t0.Add(time.Minute)
	kubelet := Writer{Manager: "kubelet", Operation: "Update", Subresource: "status", Time: later}
	helm := Writer{Manager: "helm", Operation: "Update", Time: later}
	before := snap(t0,
		obj("v1/pods", "team", "ledger", "1", nil),
		obj("v1/configmaps", "team", "settings", "1", nil),
		obj("v1/configmaps", "team", "old", "1", nil))

	clean := Summarize(before, snap(later,
		obj("v1/pods", "team", "ledger", "2", nil, kubelet),
		obj("v1/configmaps", "team", "settings", "1", nil),
		obj("v1/configmaps", "team", "old", "1", nil)), "meshclaims.io/run", "r1")
	if s := clean.Summary(); !strings.Contains(s, "0 foreign objects changed by others than the cluster's own components; 1 changed by the cluster itself; 0 removed; 0 of the run's left") {
		t.Errorf("a clean run: %s", s)
	}

	dirty := Summarize(before, snap(later,
		obj("v1/pods", "team", "ledger", "2", nil, kubelet),
		obj("v1/configmaps", "team", "settings", "2", nil, helm),
		obj("v1/configmaps", "meshclaims-none", "left", "1", map[string]string{"meshclaims.io/run": "r1"}, kubelet)), "meshclaims.io/run", "r1")
	s := dirty.Summary()
	for _, w := range []string{
		"1 foreign objects changed by others than the cluster's own components: v1/configmaps team/settings (by helm Update at 2026-12-07T10:01:00Z)",
		"1 removed: v1/configmaps team/old",
		"1 of the run's left: v1/configmaps meshclaims-none/left",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("a run that wrote, removed and left: %q does not say %q", s, w)
		}
	}

	// A lock its holder renewed, shown to be so, is its owner's change,
	// not the run's; the same change not shown stays the run's (above).
	dirty.Attribute(func(c Change) string {
		if c.Key == "v1/configmaps team/settings" {
			return "a leader-election lock renewed by its holder ledger-0"
		}
		return ""
	})
	if s := dirty.Summary(); !strings.Contains(s, "0 foreign objects changed by others than the cluster's own components; 1 changed by their owner: v1/configmaps team/settings (a leader-election lock renewed by its holder ledger-0)") {
		t.Errorf("an attributed change: %s", s)
	}
}
