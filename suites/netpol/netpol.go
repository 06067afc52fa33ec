package netpol

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// NeedNetPol proves the CNI enforces NetworkPolicy before a netpol claim is
// judged. It is itself a detector with its own negative control: the probe
// from outside the mesh to the no-mesh echo pod must first answer 200 (the
// probe can see success), then be blocked under a deny-all ingress policy.
// Without enforcement every netpol claim would "pass" for the wrong reason.
var NeedNetPol = spec.Need{Name: "networkpolicy-enforcement", Check: func(ctx context.Context, r *spec.Run) error {
	if preflight.done {
		return preflight.err
	}
	preflight.done = true
	preflight.err = netpolPreflight(ctx, r)
	return preflight.err
}}

var preflight struct {
	done bool
	err  error
}

func netpolPreflight(ctx context.Context, r *spec.Run) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	base := fixtures.Target{Namespace: mode.None.Namespace(), Run: r.Env.Config.RunID}
	pod, err := m.Kube.OneReadyPod(ctx, base.Namespace, fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return fmt.Errorf("preflight needs the no-mesh baseline's echo: %w", err)
	}
	url := fmt.Sprintf("http://%s:%d/", pod.Status.PodIP, fixtures.EchoHTTPPort)
	before, err := scenario.Probe(ctx, r, scenario.Outside(), url)
	if err != nil {
		return err
	}
	if before.Outcome != "http-200" {
		return fmt.Errorf("preflight probe without any policy got %s (%s), not 200: cannot tell enforcement from a broken path", before.Outcome, before.Detail)
	}
	deny := fixtures.NetpolDenyAll(base)
	if err := m.Applier.Apply(ctx, deny); err != nil {
		return err
	}
	undone := false
	undo := func() error {
		if undone {
			return nil
		}
		undone = true
		ctx := context.WithoutCancel(ctx)
		if err := client.IgnoreNotFound(m.Applier.Client().Delete(ctx, deny)); err != nil {
			return err
		}
		// The next spec may be the no-mesh namespace's own: wait until the
		// CNI has removed the deny-all rules and echo answers again.
		return scenario.PositiveControl(ctx, r, scenario.Outside(), url)
	}
	defer undo()
	if err := scenario.AwaitApplied(ctx, r, deny); err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	after, err := scenario.Probe(ctx, r, scenario.Outside(), url)
	if err != nil {
		return err
	}
	if err := undo(); err != nil {
		return fmt.Errorf("preflight: after removing the deny-all policy: %w", err)
	}
	if after.Outcome != "blocked" && after.Outcome != "no-http-response" {
		return fmt.Errorf("a deny-all ingress NetworkPolicy on %s/echo did not block traffic (got %s): this cluster's CNI does not enforce NetworkPolicy. "+
			"On EKS enable it (VPC CNI add-on enableNetworkPolicy: \"true\") and recreate the pods, since enforcement is not retroactive; "+
			"on kind use kindnet with network policy support (kind >= v0.24) or install an enforcing CNI", base.Namespace, after.Outcome)
	}
	r.Logf("preflight: NetworkPolicy is enforced (200 without policy, %s under deny-all)", after.Outcome)
	return nil
}

// underNetPol probes url from the mode's in-mesh client until it answers 200
// (the positive control: in this mode, on this path, the probe can see
// success, so a "blocked" after the policy is the policy's doing), then
// applies a NetworkPolicy for the spec, lets the CNI program it, and probes
// again. Removing the policy waits until echo is Ready and answering (Apply).
func underNetPol(ctx context.Context, r *spec.Run, policy *networkingv1.NetworkPolicy, url string) (verdict.Measurement, error) {
	if r.Mode.Ambient() {
		return underNetPolAmbient(ctx, r, policy, url)
	}
	if err := scenario.PositiveControl(ctx, r, scenario.InMesh(r), url); err != nil {
		return verdict.Measurement{}, err
	}
	if err := scenario.ApplyAndAwait(ctx, r, policy); err != nil {
		return verdict.Measurement{}, err
	}
	t0 := time.Now()
	got, err := scenario.ProbeOutcome(ctx, r, scenario.InMesh(r), url)
	if err != nil {
		return got, err
	}
	return netpolOutcome(ctx, r, got, t0), nil
}
