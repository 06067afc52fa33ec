// Package cleanup deletes everything one run created, found by its run label
// (fixtures.LabelRun), namespaces last, and waits until it is gone. It finds
// objects through discovery, not a list of kinds, so an object of a kind the
// fixtures add later is not forgotten. OnSignal runs it on SIGINT/SIGTERM.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiresources"
	"github.com/meshclaims/meshclaims/framework/apply"
)

// DefaultTimeout bounds the wait for deleted objects to disappear.
const DefaultTimeout = 3 * time.Minute

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Options configure a Cleaner.
type Options struct {
	// Run is the run id whose objects are deleted (required).
	Run string
	// Guard is asked before every delete; nil means none.
	Guard apply.WriteGuard
	// Timeout bounds the wait until everything is gone; 0 = DefaultTimeout.
	Timeout time.Duration
	// Poll is the wait's interval; 0 = 500 ms.
	Poll time.Duration
	// TerminatingNamespaceIsGone counts a namespace that is being deleted
	// (deletionTimestamp set) and holds no labelled object as gone. Set it
	// under envtest: envtest runs no controllers, so no namespace controller
	// ever empties a namespace and removes its "kubernetes" finalizer, and
	// its namespaces stay Terminating forever. A real cluster should leave
	// it false so the next run never creates into a namespace still going.
	TerminatingNamespaceIsGone bool
}

// Ref names one object.
type Ref struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
}

func (r Ref) String() string {
	res := r.Resource.Resource
	if r.Resource.Group != "" {
		res += "." + r.Resource.Group
	}
	if r.Namespace == "" {
		return res + " " + r.Name
	}
	return res + " " + r.Namespace + "/" + r.Name
}

// Report is what a clean-up did.
type Report struct {
	Deleted   []Ref // delete requests the server accepted
	Remaining []Ref // labelled objects still present when the wait ended
}

// Cleaner deletes one run's objects from one cluster.
type Cleaner struct {
	opts Options
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	sel  string
}

// New makes a Cleaner for the cluster at cfg.
func New(cfg *rest.Config, o Options) (*Cleaner, error) {
	if err := fixtures.ValidateRun(o.Run); err != nil {
		return nil, fmt.Errorf("cleanup: %w", err)
	}
	if o.Timeout < 0 || o.Poll < 0 {
		return nil, fmt.Errorf("cleanup: Timeout=%s Poll=%s; accepted: 0 (default) or positive", o.Timeout, o.Poll)
	}
	if cfg == nil {
		return nil, fmt.Errorf("cleanup: nil REST config; pass the run's pinned config")
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll == 0 {
		o.Poll = 500 * time.Millisecond
	}
	// Sweeping every resource lists deprecated ones too (v1 Endpoints);
	// their warnings would bury the run's own log.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cleaner{opts: o, dyn: dyn, disc: disc, sel: fixtures.RunSelector(o.Run)}, nil
}

// resources lists every listable, deletable resource the server serves, in
// its preferred version (one version per kind, so nothing is listed twice).
func (c *Cleaner) resources() (namespaced, cluster []schema.GroupVersionResource, err error) {
	// A partial failure (one aggregated API down) still leaves the rest to
	// clean; the error is returned so nobody believes the sweep was complete.
	all, err := apiresources.Preferred(c.disc, "list", "delete")
	if len(all) == 0 && err != nil {
		return nil, nil, err
	}
	for _, r := range all {
		switch {
		case r.Namespaced:
			namespaced = append(namespaced, r.GroupVersionResource)
		case r.GroupVersionResource != namespacesGVR:
			cluster = append(cluster, r.GroupVersionResource)
		}
	}
	sortGVRs(namespaced)
	sortGVRs(cluster)
	return namespaced, cluster, err
}

func sortGVRs(g []schema.GroupVersionResource) {
	sort.Slice(g, func(i, j int) bool { return g[i].String() < g[j].String() })
}

// list returns the labelled objects of gvr in every namespace.
func (c *Cleaner) list(ctx context.Context, gvr schema.GroupVersionResource) ([]Ref, error) {
	l, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: c.sel})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil, nil // resource went away since discovery
		}
		return nil, fmt.Errorf("list %s: %w", gvr, err)
	}
	refs := make([]Ref, 0, len(l.Items))
	for _, it := range l.Items {
		refs = append(refs, Ref{Resource: gvr, Namespace: it.GetNamespace(), Name: it.GetName()})
	}
	return refs, nil
}

func (c *Cleaner) delete(ctx context.Context, r Ref) error {
	if c.opts.Guard != nil {
		if err := c.opts.Guard.Check(ctx); err != nil {
			return &guardRefusal{fmt.Errorf("write guard refused delete of %s: %w", r, err)}
		}
	}
	// Background: the garbage collector removes dependants (ReplicaSets,
	// pods) after; foreground would add a finalizer that only the collector
	// clears, which envtest does not run.
	bg := metav1.DeletePropagationBackground
	var ri dynamic.ResourceInterface = c.dyn.Resource(r.Resource)
	if r.Namespace != "" {
		ri = c.dyn.Resource(r.Resource).Namespace(r.Namespace)
	}
	err := ri.Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", r, err)
	}
	return nil
}

// guardRefusal marks an error as the guard's: it stops the clean-up at once.
type guardRefusal struct{ err error }

func (g *guardRefusal) Error() string { return g.err.Error() }
func (g *guardRefusal) Unwrap() error { return g.err }

// Run deletes every object labelled with the run: namespaced objects first,
// then cluster-scoped ones, then namespaces; and waits until none is left
// (see Options.TerminatingNamespaceIsGone). It keeps going past individual
// errors, so one failure leaves as little as possible behind, and returns
// them all. A guard refusal stops it at once: the cluster is not ours.
func (c *Cleaner) Run(ctx context.Context) (Report, error) {
	var rep Report
	var errs []error
	namespaced, cluster, derr := c.resources()
	if namespaced == nil && cluster == nil && derr != nil {
		return rep, derr
	}
	if derr != nil {
		errs = append(errs, derr)
	}
	for _, group := range [][]schema.GroupVersionResource{namespaced, cluster, {namespacesGVR}} {
		for _, gvr := range group {
			refs, err := c.list(ctx, gvr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, r := range refs {
				if err := c.delete(ctx, r); err != nil {
					var refused *guardRefusal
					if errors.As(err, &refused) {
						return rep, err
					}
					errs = append(errs, err)
					continue
				}
				rep.Deleted = append(rep.Deleted, r)
			}
		}
	}
	remaining, err := c.wait(ctx, namespaced, cluster)
	rep.Remaining = remaining
	if err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// Remaining lists the run's labelled objects still present, namespaces
// included (the wait's view, without the envtest allowance).
func (c *Cleaner) Remaining(ctx context.Context) ([]Ref, error) {
	namespaced, cluster, err := c.resources()
	if err != nil {
		return nil, err
	}
	return c.remaining(ctx, append(append(namespaced, cluster...), namespacesGVR), false)
}

func (c *Cleaner) remaining(ctx context.Context, gvrs []schema.GroupVersionResource, terminatingIsGone bool) ([]Ref, error) {
	var out []Ref
	var errs []error
	for _, gvr := range gvrs {
		if gvr == namespacesGVR && terminatingIsGone {
			continue
		}
		refs, err := c.list(ctx, gvr)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, refs...)
	}
	if terminatingIsGone {
		// Only a namespace that is being deleted AND holds no labelled
		// object counts as gone; any other namespace is still there.
		l, err := c.dyn.Resource(namespacesGVR).List(ctx, metav1.ListOptions{LabelSelector: c.sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("list namespaces: %w", err))
		} else {
			holding := map[string]bool{}
			for _, r := range out {
				holding[r.Namespace] = true
			}
			for _, ns := range l.Items {
				if ns.GetDeletionTimestamp() == nil || holding[ns.GetName()] {
					out = append(out, Ref{Resource: namespacesGVR, Name: ns.GetName()})
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

func (c *Cleaner) wait(ctx context.Context, namespaced, cluster []schema.GroupVersionResource) ([]Ref, error) {
	gvrs := append(append(append([]schema.GroupVersionResource{}, namespaced...), cluster...), namespacesGVR)
	deadline := time.Now().Add(c.opts.Timeout)
	for {
		left, err := c.remaining(ctx, gvrs, c.opts.TerminatingNamespaceIsGone)
		if err == nil && len(left) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return left, fmt.Errorf("after %s: %w", c.opts.Timeout, err)
			}
			return left, fmt.Errorf("after %s, %d object(s) of run %s remain: %s", c.opts.Timeout, len(left), c.opts.Run, joinRefs(left, 10))
		}
		select {
		case <-ctx.Done():
			return left, fmt.Errorf("waiting for run %s to be deleted: %w", c.opts.Run, ctx.Err())
		case <-time.After(c.opts.Poll):
		}
	}
}

func joinRefs(refs []Ref, max int) string {
	var parts []string
	for i, r := range refs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(refs)-max))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

// Interrupts subscribes to SIGINT and SIGTERM; call stop to unsubscribe.
func Interrupts() (sigs <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// OnSignal runs the clean-up once when a signal arrives on sigs (from
// Interrupts, or a channel a test feeds), then calls done with the signal,
// the report and the error; done decides what happens next (typically: dump,
// report and exit 130). The clean-up gets a fresh context bounded by the
// timeout, because the run's own context is usually cancelled by then.
// stop ends the watch; a clean-up already started runs to completion and
// stop waits for it.
func (c *Cleaner) OnSignal(sigs <-chan os.Signal, done func(os.Signal, Report, error)) (stop func()) {
	return Watch(sigs, c.opts.Timeout+time.Minute, func(ctx context.Context, sig os.Signal) {
		rep, err := c.Run(ctx)
		if done != nil {
			done(sig, rep, err)
		}
	})
}

// Watch runs work once, when the first signal arrives on sigs, with a fresh
// context bounded by timeout: whatever the run was doing has its own context
// cancelled by then, and the work is what must still happen (deleting what
// the run created). stop ends the watch; work already started runs to
// completion and stop waits for it. A run whose teardown is more than one
// Cleaner (Istio releases, CRDs, the cluster) watches with this.
func Watch(sigs <-chan os.Signal, timeout time.Duration, work func(ctx context.Context, sig os.Signal)) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case sig := <-sigs:
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			work(ctx, sig)
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-finished
	}
}
