package istio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side apply field manager of everything this
// package applies.
const FieldManager = "meshclaims"

// applier server-side applies unstructured objects through the pinned REST
// config.
type applier struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
}

func newApplier(cfg *rest.Config) (*applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

func (a *applier) resource(u *unstructured.Unstructured, defaultNS string) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A CRD applied a moment ago: forget what discovery said and retry.
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := u.GetNamespace()
		if ns == "" {
			ns = defaultNS
		}
		return a.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

// apply server-side applies u (force: this suite owns what it applies).
// dryRun asks the server to validate and admit without persisting.
func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, defaultNS string, dryRun bool) error {
	ri, err := a.resource(u, defaultNS)
	if err != nil {
		return err
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// DryRunApply server-side applies objs with dryRun=All: the API server runs
// its full validation and admission (CRD schemas included) and persists
// nothing. Namespaced objects without a namespace go to namespace.
func DryRunApply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, namespace string) error {
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	var errs []string
	for _, u := range objs {
		if err := a.apply(ctx, u, namespace, true); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("server-side dry run refused %d of %d objects:\n  %s", len(errs), len(objs), strings.Join(errs, "\n  "))
	}
	return nil
}

// readYAMLDir reads every .yaml/.yml file of dir (sorted) as objects.
func readYAMLDir(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		objs, err := DecodeObjects(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objects in %s", dir)
	}
	return out, nil
}
