package istiod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	securityapi "istio.io/api/security/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
)

// Istio's validating webhooks: the default revision's (base chart) and the
// revision's own (istiod chart). Both run istiod's validation.
var webhookNames = []string{`admission webhook "validation.istio.io"`, `admission webhook "rev.validation.istio.io"`}

// IsIstioDenial reports whether err is istiod's validating webhook refusing
// an object (not the API server's schema, nor a webhook that cannot be
// reached, which the API server reports as "failed calling webhook").
func IsIstioDenial(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, w := range webhookNames {
		if strings.Contains(msg, w+" denied the request") {
			return true
		}
	}
	return false
}

// DryRunner admits objects without storing them (apply.Applier.DryRun).
type DryRunner interface {
	DryRun(ctx context.Context, objs ...client.Object) error
}

// Admitted dry-runs each object alone, so one refusal does not hide the
// next, and returns every refusal, each naming its object; nil means all
// were admitted.
func Admitted(ctx context.Context, a DryRunner, objs []client.Object) error {
	var errs []error
	for _, o := range objs {
		if err := a.DryRun(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", describe(o), err))
		}
	}
	return errors.Join(errs...)
}

// ExpectDenied dry-runs obj and returns nil only if istiod's webhook denied
// it, with a message containing want (what istiod's validation says about
// the breakage).
func ExpectDenied(ctx context.Context, a DryRunner, obj client.Object, want string) error {
	err := a.DryRun(ctx, obj)
	switch {
	case err == nil:
		return fmt.Errorf("%s was admitted; istiod's validation should have denied it (%q)", describe(obj), want)
	case !IsIstioDenial(err):
		return fmt.Errorf("%s refused, but not by istiod's validating webhook: %w", describe(obj), err)
	case !strings.Contains(err.Error(), want):
		return fmt.Errorf("%s denied by istiod for another reason than %q: %w", describe(obj), want, err)
	}
	return nil
}

// BrokenVirtualService is the retry claim's VirtualService with a negative
// attempt count: valid YAML and valid against the CRD's schema (an int32),
// refused by istiod's validation.
func BrokenVirtualService(t fixtures.Target) (client.Object, string) {
	vs := fixtures.OrderRetries(t)
	vs.Name += "-broken"
	vs.Spec.Http[0].Retries.Attempts = -3
	return vs, "attempts cannot be negative"
}

// BrokenAuthorizationPolicy is the authz claims' ALLOW policy turned into a
// DENY without rules, which istiod refuses as one that can never match.
func BrokenAuthorizationPolicy(t fixtures.Target) (client.Object, string) {
	p := fixtures.AuthzAllowGood(t)
	p.Name += "-broken"
	p.Spec.Action = securityapi.AuthorizationPolicy_DENY
	p.Spec.Rules = nil
	return p, "DENY action without `rules` is meaningless"
}

func describe(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", o)
	}
	if ns := o.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + o.GetName()
	}
	return kind + " " + o.GetName()
}
