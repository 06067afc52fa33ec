package inventory

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// ClusterComponents are the field managers of the cluster's own control
// plane and nodes, which keep writing objects whoever else runs.
var ClusterComponents = map[string]bool{"kubelet": true, "kube-controller-manager": true, "kube-scheduler": true, "kube-apiserver": true}

// Change is one object a run's before and after inventories differ on,
// with who wrote it since the first, where its managedFields say.
type Change struct {
	Key string `json:"key"`
	// Writers are the field managers that wrote it since the first
	// inventory ("kubelet Update status"), empty when none is recorded.
	Writers []string `json:"writers,omitempty"`
	// ByCluster: every writer is one of ClusterComponents.
	ByCluster bool `json:"by_cluster,omitempty"`
	// Run: it carries the run's label.
	Run bool `json:"run,omitempty"`
	// Owner says, where the run could tell, that the change was the
	// object's owner's own doing (a leader-election lock its holder
	// renewed), not the run's: set by Attribute.
	Owner string `json:"owner,omitempty"`
}

// Attribute sets each changed object's Owner to what owner says of it
// ("" leaves it), so a change the run can show is its owner's own (a
// lock renewed by the component holding it) is not counted as the run's.
func (c *Changes) Attribute(owner func(Change) string) {
	for i := range c.Changed {
		if !c.Changed[i].ByCluster {
			c.Changed[i].Owner = owner(c.Changed[i])
		}
	}
}

// Changes is what a run's inventories before and after show, for the
// results directory and the report.
type Changes struct {
	Before     time.Time `json:"before"`
	After      time.Time `json:"after"`
	Types      int       `json:"types"`
	ObjectsWas int       `json:"objects_before"`
	ObjectsNow int       `json:"objects_after"`
	// Added are objects that were not there before: the run's left-overs,
	// or what the cluster or someone else made meanwhile (see Writers).
	Added []Change `json:"added,omitempty"`
	// Removed are objects that were there before and are gone.
	Removed []Change `json:"removed,omitempty"`
	// Changed are objects there before and after whose UID or
	// resourceVersion moved (Leases, Endpoints and the like excepted).
	Changed []Change `json:"changed,omitempty"`
}

// Summarize is Compare(before, after) with each object's writers since
// before and whether it is the run's (carries runLabel=run).
func Summarize(before, after *Snapshot, runLabel, run string) Changes {
	d := Compare(before, after)
	c := Changes{Before: before.TakenAt, After: after.TakenAt, Types: len(after.Resources), ObjectsWas: len(before.Objects), ObjectsNow: len(after.Objects)}
	conv := func(objs []Object, since time.Time) []Change {
		var out []Change
		for _, o := range objs {
			ch := Change{Key: o.Key(), Run: o.Labels[runLabel] == run && run != ""}
			ws := o.WritersSince(since)
			ch.ByCluster = len(ws) > 0
			for _, w := range ws {
				ch.Writers = append(ch.Writers, w.String())
				ch.ByCluster = ch.ByCluster && ClusterComponents[w.Manager]
			}
			out = append(out, ch)
		}
		return out
	}
	c.Added = conv(d.Added, time.Time{})
	c.Removed = conv(d.Removed, time.Time{})
	c.Changed = conv(d.Changed, before.TakenAt)
	return c
}

// LeftByRun are the added objects that are the run's, by label or because
// someone other than the cluster's own components wrote them.
func (c Changes) LeftByRun() []Change {
	var out []Change
	for _, a := range c.Added {
		if a.Run || !a.ByCluster {
			out = append(out, a)
		}
	}
	return out
}

// ChangedByOthers are the foreign objects changed by someone other than
// the cluster's own components: the run, or whoever else writes to the
// cluster meanwhile (their writers say which).
func (c Changes) ChangedByOthers() []Change {
	var out []Change
	for _, a := range c.Changed {
		if !a.ByCluster && a.Owner == "" {
			out = append(out, a)
		}
	}
	return out
}

// ChangedByOwner are the foreign objects Attribute showed their owner
// changed.
func (c Changes) ChangedByOwner() []Change {
	var out []Change
	for _, a := range c.Changed {
		if !a.ByCluster && a.Owner != "" {
			out = append(out, a)
		}
	}
	return out
}

// Summary is the report's sentence.
func (c Changes) Summary() string {
	name := func(cs []Change) string {
		if len(cs) == 0 {
			return ""
		}
		var ks []string
		for i, x := range cs {
			if i == 5 {
				ks = append(ks, fmt.Sprintf("and %d more", len(cs)-5))
				break
			}
			k := x.Key
			if len(x.Writers) > 0 {
				k += " (by " + strings.Join(x.Writers, ", ") + ")"
			}
			ks = append(ks, k)
		}
		return ": " + strings.Join(ks, "; ")
	}
	others, left, owned := c.ChangedByOthers(), c.LeftByRun(), c.ChangedByOwner()
	sort.Slice(others, func(i, j int) bool { return others[i].Key < others[j].Key })
	byOwner := ""
	if len(owned) > 0 {
		var ks []string
		for _, o := range owned {
			ks = append(ks, o.Key+" ("+o.Owner+")")
		}
		byOwner = fmt.Sprintf("; %d changed by their owner: %s", len(owned), strings.Join(ks, "; "))
	}
	return fmt.Sprintf("%d objects of %d resource types before the run, %d after; %d foreign objects changed by others than the cluster's own components%s%s; "+
		"%d changed by the cluster itself; %d removed%s; %d of the run's left%s",
		c.ObjectsWas, c.Types, c.ObjectsNow, len(others), name(others), byOwner, len(c.Changed)-len(others)-len(owned), len(c.Removed), name(c.Removed), len(left), name(left))
}
