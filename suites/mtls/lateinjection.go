package mtls

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Injection is not retroactive (HYBRID: pods already running must be
// restarted to get the sidecar): Istio's injector is a mutating webhook on
// pod creation, so labelling a namespace changes nothing for the pods it
// already runs. The spec shows each part in its own namespace
// (fixtures.LateInjectionNamespace): a pod started before the label, a pod
// created after it (the positive control: the injector does act on the
// namespace now), the first pod still as it was, and the pod its restart
// makes, injected.

// lateInjection runs the scenario above and judges it (judgeLateInjection).
func lateInjection(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	run, img := r.Env.Config.RunID, m.Options.Images
	t := fixtures.Target{Namespace: fixtures.LateInjectionNamespace, Run: run}
	timeouts := r.Env.Config.Timeouts
	echo := fixtures.LateEcho(t, img)
	before, err := steps.RunningEcho(ctx, r, fixtures.LateNamespace(run, false, m.Options.SidecarRevision), echo)
	if err != nil {
		return verdict.Measurement{}, err
	}
	// Re-applying the namespace with the label: the field manager owns the
	// namespace's labels, so the label is added and nothing else changes.
	if err := m.Applier.Apply(ctx, fixtures.LateNamespace(run, true, m.Options.SidecarRevision)); err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("labelled %s %v while pod %s runs", t.Namespace, fixtures.RevisionLabels(mode.Sidecar, m.Options.SidecarRevision), before.Name)
	control := fixtures.LateControl(t, img)
	if err := scenario.Apply(ctx, r, control); err != nil {
		return verdict.Measurement{}, err
	}
	if err := m.Kube.WaitAvailable(ctx, t.Namespace, timeouts.WorkloadsReady, control.Name); err != nil {
		return verdict.Measurement{}, err
	}
	created, err := steps.OnlyPod(ctx, r, t.Namespace, fixtures.LateControlName, "")
	if err != nil {
		return verdict.Measurement{}, err
	}
	again, restarted, err := steps.KeptAndRestarted(ctx, r, t.Namespace, echo.Name, before, "the pod started before the label")
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeLateInjection(before, again, created, restarted)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("late injection: %s", got.Detail)
	return got, nil
}

// judgeLateInjection: verified when the pod started before the label is,
// read again after it, the same pod (UID) still without istio-proxy, and
// the pod its restart made carries one. The preconditions are errors: the
// first pod must have had no proxy (otherwise something injects the
// namespace without its label), and the pod created after the label must
// carry one (otherwise the injector does not act there and nothing is
// shown).
func judgeLateInjection(before, again, created, restarted *corev1.Pod) (verdict.Measurement, error) {
	if steps.DataPlaneOf(before).Proxy {
		return verdict.Measurement{}, fmt.Errorf("pod %s, started before the label, already has %s: this namespace is injected without istio-injection=enabled (a mesh-wide injection policy?), so a late label shows nothing", before.Name, steps.ProxyContainer)
	}
	if !steps.DataPlaneOf(created).Proxy {
		return verdict.Measurement{}, fmt.Errorf("pod %s, created after the label, has no %s: the injector does not act on this namespace, so an uninjected old pod shows nothing", created.Name, steps.ProxyContainer)
	}
	if again.UID != before.UID {
		return verdict.Measurement{}, fmt.Errorf("pod %s was replaced (UID %s, then %s) before it was read again", before.Name, before.UID, again.UID)
	}
	detail := fmt.Sprintf("started before the label: %s istio-proxy=%v; created after: %s istio-proxy=%v; after its restart: %s istio-proxy=%v",
		again.Name, steps.DataPlaneOf(again).Proxy, created.Name, steps.DataPlaneOf(created).Proxy, restarted.Name, steps.DataPlaneOf(restarted).Proxy)
	out := "verified"
	switch {
	case steps.DataPlaneOf(again).Proxy:
		out = "running pod injected"
	case !steps.DataPlaneOf(restarted).Proxy:
		out = "restarted pod not injected"
	}
	return verdict.Measurement{Outcome: out, Detail: detail}, nil
}
