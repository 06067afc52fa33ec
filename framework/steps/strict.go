package steps

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// WithoutStrict removes the namespace's STRICT PeerAuthentication for the
// rest of the spec (PERMISSIVE, Istio's default) and puts it back after.
func WithoutStrict(ctx context.Context, r *spec.Run) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	pa := fixtures.PeerAuthStrict(scenario.Target(r))
	if err := m.Applier.Phase(ctx, "remove STRICT for "+r.Claim.ID, func(ctx context.Context) error {
		return client.IgnoreNotFound(m.Applier.Client().Delete(ctx, pa))
	}); err != nil {
		return err
	}
	r.Defer(func(ctx context.Context) error {
		if err := m.Applier.Apply(ctx, fixtures.PeerAuthStrict(scenario.Target(r))); err != nil {
			return err
		}
		// STRICT is the base set: the next spec needs plaintext refused
		// and in-mesh calls answered (which also shows no TLS DISABLE rule
		// of this spec is left), not just the object back.
		for _, c := range scenario.StrictRestored() {
			if err := scenario.WaitRestored(ctx, r, c); err != nil {
				return err
			}
		}
		return nil
	})
	return scenario.AwaitRemoved(ctx, r, pa)
}
