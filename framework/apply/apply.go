// Package apply writes the suite's typed objects to a cluster by server-side
// apply (field manager "meshclaims"), asking a WriteGuard before every write
// so a run never writes to a cluster other than the one it started on.
package apply

import (
	"context"
	"encoding/json"
	"fmt"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// FieldManager owns every field the suite applies.
const FieldManager = "meshclaims"

// WriteGuard is asked before every write. The cluster package's Guard
// satisfies it: it fails when the cluster is no longer the one the run
// started on. A nil WriteGuard means no guard (unit tests, a fresh envtest).
type WriteGuard interface {
	Check(ctx context.Context) error
}

// Scheme knows every type the fixtures build: Kubernetes' built-in types,
// Istio networking, security and telemetry v1 (and networking v1alpha3 for
// EnvoyFilter, which has no v1), Gateway API v1 and v1beta1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(networkingv1.AddToScheme(s))
	utilruntime.Must(networkingv1alpha3.AddToScheme(s))
	utilruntime.Must(securityv1.AddToScheme(s))
	utilruntime.Must(telemetryv1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	utilruntime.Must(gatewayv1beta1.Install(s))
	return s
}

// Applier applies objects to one cluster.
type Applier struct {
	client client.Client
	scheme *runtime.Scheme
	guard  WriteGuard
}

// New makes an Applier for the cluster at cfg (the run's pinned config).
func New(cfg *rest.Config, guard WriteGuard) (*Applier, error) {
	s := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return &Applier{client: c, scheme: s, guard: guard}, nil
}

// Client is the Applier's controller-runtime client (for reads; writes
// should go through Apply or Phase so the guard sees them).
func (a *Applier) Client() client.Client { return a.client }

// Apply server-side applies objs in order, forcing ownership of conflicting
// fields (the suite owns what it deployed). The guard is asked before each
// object; the first refusal or error stops the apply and names the object.
func (a *Applier) Apply(ctx context.Context, objs ...client.Object) error {
	return a.apply(ctx, false, objs)
}

// DryRun is Apply with dryRun=All: the server validates and admits every
// object (schema, CEL rules, defaulting) but stores nothing.
func (a *Applier) DryRun(ctx context.Context, objs ...client.Object) error {
	return a.apply(ctx, true, objs)
}

// Phase runs fn, a write that is not an apply (scale, restart, delete), after
// asking the guard. name says what the phase is, for the error.
func (a *Applier) Phase(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if err := a.check(ctx, name); err != nil {
		return err
	}
	return fn(ctx)
}

func (a *Applier) check(ctx context.Context, what string) error {
	if a.guard == nil {
		return nil
	}
	if err := a.guard.Check(ctx); err != nil {
		return fmt.Errorf("write guard refused %s: %w", what, err)
	}
	return nil
}

func (a *Applier) apply(ctx context.Context, dryRun bool, objs []client.Object) error {
	for _, obj := range objs {
		u, err := ToUnstructured(obj, a.scheme)
		if err != nil {
			return err
		}
		ref := Describe(u)
		if err := a.check(ctx, "apply of "+ref); err != nil {
			return err
		}
		opts := []client.ApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
			return fmt.Errorf("apply %s: %w", ref, err)
		}
	}
	return nil
}

// Describe names an object as kind/namespace/name for errors and logs.
func Describe(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", u.GetKind(), ns, u.GetName())
	}
	return fmt.Sprintf("%s %s", u.GetKind(), u.GetName())
}

// ToUnstructured turns a typed object into the apply body: apiVersion and
// kind from the scheme, and none of the fields an apply must not carry.
//
// It goes through JSON, not the reflection converter, because Istio's spec
// types are protobuf messages whose JSON form (enum names, "2s" durations)
// comes from their own MarshalJSON. Only nulls and the server-owned fields
// are dropped: an explicit zero such as replicas: 0 or emptyDir: {} stays,
// since it is intent.
func ToUnstructured(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("%T %s: type not in the apply scheme: %w", obj, obj.GetName(), err)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	// apimachinery's json keeps integers as int64 (encoding/json would make
	// them float64, which unstructured helpers and the server read badly).
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "generation", "managedFields", "creationTimestamp", "deletionTimestamp", "selfLink"} {
			delete(md, k)
		}
	}
	pruneNulls(m)
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			pruneNulls(e)
		}
	case []any:
		for _, e := range t {
			pruneNulls(e)
		}
	}
}
