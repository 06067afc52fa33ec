// Package inventory takes a snapshot of every object of every API resource
// type a cluster serves, and compares two snapshots: what a run on a
// cluster it did not create (-provider=existing) added, changed, removed or
// left behind. Not only namespaces: a cluster-scoped CRD, webhook or
// ClusterRole the suite created or touched shows up too.
//
// An object is identified by its resource, namespace and name, and counts
// as unchanged only when its UID and resourceVersion are the same: the API
// server bumps resourceVersion on every write, so an unchanged one means
// nobody wrote the object (byte-identical as stored).
package inventory

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/apiresources"
)

// Object is one object as the snapshot saw it.
type Object struct {
	Resource        string // group/version/resource, e.g. "apps/v1/deployments"
	Namespace, Name string
	UID             string
	ResourceVersion string
	Labels          map[string]string
	// Writers are the object's field managers, from managedFields: who
	// wrote it (kubelet, kube-controller-manager, helm, the suite's own
	// clients), how, and when last.
	Writers []Writer
}

// Writer is one managedFields entry.
type Writer struct {
	Manager, Operation, Subresource string
	Time                            time.Time
}

func (w Writer) String() string {
	s := w.Manager + " " + w.Operation
	if w.Subresource != "" {
		s += " " + w.Subresource
	}
	return s + " at " + w.Time.UTC().Format(time.RFC3339)
}

// WritersSince are the writers whose last write was at or after t
// (managedFields keep seconds, so t is truncated to the second).
func (o Object) WritersSince(t time.Time) []Writer {
	var out []Writer
	for _, w := range o.Writers {
		if !w.Time.Before(t.Truncate(time.Second)) {
			out = append(out, w)
		}
	}
	return out
}

// Key identifies the object across snapshots.
func (o Object) Key() string {
	return o.Resource + " " + o.Namespace + "/" + o.Name
}

// Snapshot is every object of every listable resource type.
type Snapshot struct {
	// TakenAt is when the listing began: a write after it shows up in the
	// next snapshot.
	TakenAt time.Time
	Objects map[string]Object
	// Resources are the resource types listed, in order.
	Resources []string
}

// volatile are resource types whose objects the cluster itself rewrites all
// the time, whoever runs: leader-election and node Leases, the
// EndpointSlices and Endpoints the control plane keeps current, Nodes (the
// kubelet's status) and APIServices (the availability controller). A
// change to one says nothing about who wrote it, so they are compared by
// existence only (added or removed), never by resourceVersion.
var volatile = map[string]bool{
	"coordination.k8s.io/v1/leases":         true,
	"v1/events":                             true,
	"events.k8s.io/v1/events":               true,
	"discovery.k8s.io/v1/endpointslices":    true,
	"v1/endpoints":                          true,
	"v1/nodes":                              true,
	"apiregistration.k8s.io/v1/apiservices": true,
}

// skipped are resource types whose list is not an inventory:
// componentstatuses is deprecated and synthesized; Events are written by
// every controller about everything and expire after an hour, so a new
// one says nothing about who left what (the suite's own Events go with
// its namespaces).
var skipped = map[string]bool{"v1/componentstatuses": true, "v1/events": true, "events.k8s.io/v1/events": true}

// Take lists every object of every resource type that supports list.
func Take(ctx context.Context, cfg *rest.Config) (*Snapshot, error) {
	// Listing v1 Endpoints draws a deprecation warning on every call.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A partial discovery failure fails the snapshot: an inventory that
	// missed a group cannot vouch that nothing of a run is left in it.
	all, err := apiresources.Preferred(dc, "list")
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	s := &Snapshot{TakenAt: time.Now(), Objects: map[string]Object{}}
	for _, r := range all {
		res := resourceString(r.GroupVersionResource)
		if skipped[res] {
			continue
		}
		s.Resources = append(s.Resources, res)
		items, err := listAll(ctx, dyn.Resource(r.GroupVersionResource))
		if err != nil {
			return nil, fmt.Errorf("inventory: listing %s: %w", res, err)
		}
		for _, u := range items {
			o := Object{Resource: res, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()),
				ResourceVersion: u.GetResourceVersion(), Labels: u.GetLabels()}
			for _, m := range u.GetManagedFields() {
				w := Writer{Manager: m.Manager, Operation: string(m.Operation), Subresource: m.Subresource}
				if m.Time != nil {
					w.Time = m.Time.Time
				}
				o.Writers = append(o.Writers, w)
			}
			s.Objects[o.Key()] = o
		}
	}
	sort.Strings(s.Resources)
	return s, nil
}

func listAll(ctx context.Context, ri dynamic.NamespaceableResourceInterface) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.GetContinue() == "" {
			return out, nil
		}
		opts.Continue = l.GetContinue()
	}
}

func resourceString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// Diff is what changed between two snapshots.
type Diff struct {
	// Added are objects in after that were not in before.
	Added []Object
	// Removed are objects of before that after lacks.
	Removed []Object
	// Changed are objects in both whose UID or resourceVersion differ
	// (volatile resource types excepted).
	Changed []Object
}

// Compare returns what changed from before to after.
func Compare(before, after *Snapshot) Diff {
	var d Diff
	for k, a := range after.Objects {
		b, ok := before.Objects[k]
		switch {
		case !ok && volatile[a.Resource] && a.Namespace != "" && before.has("v1/namespaces /"+a.Namespace):
			// The cluster's own bookkeeping in a namespace that was there
			// before (a node's Lease appearing in kube-node-lease); the
			// run's volatile objects live in its own namespaces, which are
			// reported themselves.
		case !ok:
			d.Added = append(d.Added, a)
		case volatile[a.Resource]:
		case a.UID != b.UID || a.ResourceVersion != b.ResourceVersion:
			d.Changed = append(d.Changed, a)
		}
	}
	for k, b := range before.Objects {
		if _, ok := after.Objects[k]; !ok {
			d.Removed = append(d.Removed, b)
		}
	}
	for _, l := range [][]Object{d.Added, d.Removed, d.Changed} {
		sort.Slice(l, func(i, j int) bool { return l[i].Key() < l[j].Key() })
	}
	return d
}

func (s *Snapshot) has(key string) bool { _, ok := s.Objects[key]; return ok }

// Filter keeps the objects keep says yes to.
func Filter(objs []Object, keep func(Object) bool) []Object {
	var out []Object
	for _, o := range objs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// Keys lists the objects' keys, for messages.
func Keys(objs []Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key()
	}
	return out
}
