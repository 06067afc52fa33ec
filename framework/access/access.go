// Package access checks, before a run writes anything, that its
// credentials may do what each of its phases will do: one
// SelfSubjectAccessReview per verb and resource, so a kubeconfig that lacks
// one fails in seconds naming it, with nothing written, instead of
// failing half-way with a cluster half set up.
package access

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Need is one thing a phase of the run does to the cluster.
type Need struct {
	// Phase names the part of the run that needs it ("Istio install").
	Phase       string
	Verb        string
	Group       string
	Resource    string
	Subresource string
	// Namespace is where; "" for a cluster-scoped resource.
	Namespace string
}

// String reads as RBAC does: "create admissionregistration.k8s.io/mutatingwebhookconfigurations".
func (n Need) String() string {
	res := n.Resource
	if n.Group != "" {
		res = n.Group + "/" + res
	}
	if n.Subresource != "" {
		res += "/" + n.Subresource
	}
	where := ""
	if n.Namespace != "" {
		where = " in namespace " + n.Namespace
	}
	return n.Verb + " " + res + where
}

// Writes are the verbs a phase uses on what it creates, changes and
// removes (Helm's install, upgrade and uninstall; server-side apply).
var Writes = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// Object is what ForObjects needs of an object.
type Object interface {
	GetNamespace() string
	GetObjectKind() schema.ObjectKind
}

// ForObjects are the needs of writing objs with verbs, their resources
// found through mapper (nil, or a kind it does not know yet, such as a CRD
// the same phase creates: the kind's lower-case plural).
func ForObjects(phase string, objs []Object, mapper meta.RESTMapper, verbs ...string) []Need {
	var out []Need
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		res, namespaced := guessResource(gvk.Kind), o.GetNamespace() != ""
		if mapper != nil {
			if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				res, namespaced = m.Resource.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
			}
		}
		ns := ""
		if namespaced {
			ns = o.GetNamespace()
		}
		for _, v := range verbs {
			out = append(out, Need{Phase: phase, Verb: v, Group: gvk.Group, Resource: res, Namespace: ns})
		}
	}
	return out
}

// guessResource is the plural Kubernetes and Istio give a kind.
func guessResource(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "y") && !strings.ContainsAny(k[len(k)-2:len(k)-1], "aeiou"):
		// policy -> policies, but gateway -> gateways
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"):
		return k + "es"
	}
	return k + "s"
}

// Dedup drops repeated needs (the same verb on the same resource and
// namespace), keeping the first phase that named it, in a stable order.
func Dedup(needs []Need) []Need {
	seen := map[string]bool{}
	var out []Need
	for _, n := range needs {
		k := n.Verb + " " + n.Group + "/" + n.Resource + "/" + n.Subresource + " " + n.Namespace
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, n)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Phase < out[j].Phase })
	return out
}

// Check asks the API server, for each need, whether the run's credentials
// may; it returns those denied.
func Check(ctx context.Context, cs kubernetes.Interface, needs []Need) ([]Need, error) {
	needs = Dedup(needs)
	allowed := make([]bool, len(needs))
	errs := make([]error, len(needs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, n := range needs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
				Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
					Namespace: n.Namespace, Verb: n.Verb, Group: n.Group, Resource: n.Resource, Subresource: n.Subresource}},
			}, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("access: asking whether the run may %s: %w", n, err)
				return
			}
			allowed[i] = r.Status.Allowed
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var denied []Need
	for i, n := range needs {
		if !allowed[i] {
			denied = append(denied, n)
		}
	}
	return denied, nil
}

// DeniedError is the refusal for denied needs, grouped by phase.
func DeniedError(denied []Need) error {
	if len(denied) == 0 {
		return nil
	}
	byPhase := map[string][]string{}
	var phases []string
	for _, n := range denied {
		if _, ok := byPhase[n.Phase]; !ok {
			phases = append(phases, n.Phase)
		}
		byPhase[n.Phase] = append(byPhase[n.Phase], n.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the run's credentials may not do %d things it would need (checked with SelfSubjectAccessReview before any write; nothing was written):", len(denied))
	for _, p := range phases {
		fmt.Fprintf(&b, "\n  %s: %s", p, strings.Join(byPhase[p], "; "))
	}
	b.WriteString("\nGrant them (README: Permissions and what a run creates), or run with a kubeconfig that has them")
	return fmt.Errorf("%s", b.String())
}
