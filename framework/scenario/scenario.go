// Package scenario is the engine claim specs are written in: the run's
// cluster, clients and URLs, apply these objects for the length of the spec
// and await their effect in the proxies (pushed), undo them and wait until
// a probe shows the effect gone (restore), the preconditions of a run
// (needs), and measurements shared by the specs that read the same run.
// Suites read as declarations because this machinery (clean-up, waits,
// positive controls) lives here; reusable traffic (loads, rollouts) is in
// framework/steps, each claim's measurement beside its declaration.
package scenario

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ClusterOf returns the cluster handle of a run, or an error if the
// set-up did not provide one.
func ClusterOf(r *spec.Run) (*spec.Cluster, error) {
	if r.Env == nil {
		return nil, errors.New("no suite environment: the suite's set-up did not run")
	}
	m := r.Env.Cluster
	if m == nil || m.Kube == nil {
		return nil, errors.New("the suite's set-up provided no cluster")
	}
	return m, nil
}

// Target is the run's mode namespace as a fixtures target.
func Target(r *spec.Run) fixtures.Target {
	return fixtures.Target{Namespace: r.Namespace(), Run: r.Env.Config.RunID}
}

// Apply applies claim-specific objects for the rest of the spec: they are
// deleted when the spec ends (pass or fail), and the undo waits until a
// probe shows their effect gone (RestoredAfterDelete), so one claim's policy
// never leaks into the next claim's measurement.
func Apply(ctx context.Context, r *spec.Run, objs ...client.Object) error {
	m, err := ClusterOf(r)
	if err != nil {
		return err
	}
	if err := m.Applier.Apply(ctx, objs...); err != nil {
		return err
	}
	r.Defer(func(ctx context.Context) error {
		if err := m.Applier.Phase(ctx, "delete claim objects of "+r.Claim.ID, func(ctx context.Context) error {
			var errs []error
			for i := len(objs) - 1; i >= 0; i-- {
				if err := client.IgnoreNotFound(m.Applier.Client().Delete(ctx, objs[i])); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}); err != nil {
			return err
		}
		return restoreAfterDelete(ctx, r, objs)
	})
	r.Logf("applied %d claim object(s)", len(objs))
	return nil
}

// InMesh is the mode's fortio client (service account default).
func InMesh(r *spec.Run) probe.Client {
	return probe.Client{Namespace: r.Namespace(), Selector: fixtures.LabelApp + "=" + fixtures.ClientName, Port: fixtures.ClientHTTPPort}
}

// ClientAs is the mode's fortio client running as service account "good" or "bad".
func ClientAs(r *spec.Run, name string) probe.Client {
	return probe.Client{Namespace: r.Namespace(), Selector: fixtures.LabelApp + "=" + name, Port: fixtures.ClientHTTPPort}
}

// Outside is the plaintext client in the namespace outside the mesh.
func Outside() probe.Client {
	return probe.Client{Namespace: fixtures.OutsideNamespace, Selector: fixtures.LabelApp + "=" + fixtures.PlaintextName, Port: fixtures.ClientHTTPPort}
}

// EchoURL is the echo Service as in-mesh clients call it.
func EchoURL(r *spec.Run) string {
	return fmt.Sprintf("http://%s.%s:%d/", fixtures.EchoName, r.Namespace(), fixtures.EchoHTTPPort)
}

// EchoPodURL is one ready echo pod's IP on the app port: what GUIDE's
// plaintext client called, bypassing the Service.
func EchoPodURL(ctx context.Context, r *spec.Run, port int) (string, error) {
	m, err := ClusterOf(r)
	if err != nil {
		return "", err
	}
	pod, err := m.Kube.OneReadyPod(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%d/", pod.Status.PodIP, port), nil
}

// Probe makes one request from client c to url inside the cluster.
func Probe(ctx context.Context, r *spec.Run, c probe.Client, url string) (probe.Result, error) {
	m, err := ClusterOf(r)
	if err != nil {
		return probe.Result{}, err
	}
	res, err := probe.From(ctx, m.Kube, c, url, r.Env.Config.Timeouts.Probe)
	if err != nil {
		return res, err
	}
	r.Logf("probe %s/%s -> %s: %s %s", c.Namespace, c.Selector, url, res.Outcome, res.Detail)
	return res, nil
}

// ProbeOutcome is Probe as a measurement.
func ProbeOutcome(ctx context.Context, r *spec.Run, c probe.Client, url string) (verdict.Measurement, error) {
	res, err := Probe(ctx, r, c, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return verdict.Measurement{Outcome: res.Outcome, Detail: res.Detail}, nil
}

// InMeshOf is mode m's fortio client (for baselines measured from a spec of
// another mode).
func InMeshOf(r *spec.Run, m mode.Mode) probe.Client {
	r.Touch(m.Namespace())
	return probe.Client{Namespace: m.Namespace(), Selector: fixtures.LabelApp + "=" + fixtures.ClientName, Port: fixtures.ClientHTTPPort}
}

// EchoURLOf is mode m's echo Service URL.
func EchoURLOf(m mode.Mode) string {
	return fmt.Sprintf("http://%s.%s:%d/", fixtures.EchoName, m.Namespace(), fixtures.EchoHTTPPort)
}

// RunName names the i-th repeat of a load ("none-run1").
func RunName(what string, i int) string { return fmt.Sprintf("%s-run%d", what, i+1) }

// SelectedSpecs are the specs the run's selection runs (Env.Selected) or,
// where it is nil, every planned spec of the configured modes.
func SelectedSpecs(r *spec.Run) ([]spec.Planned, error) {
	if r.Env.Selected != nil {
		return r.Env.Selected, nil
	}
	return spec.Plan(r.Env.Registry, spec.Defs(), r.Env.Config.Modes)
}
