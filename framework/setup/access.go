package setup

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/access"
	"github.com/meshclaims/meshclaims/framework/istio"
)

// Phases of a run, as the permission check names them.
const (
	PhaseIstio        = "Istio install and removal"
	PhaseWorkloads    = "workloads and their clean-up"
	PhaseMeasurements = "measurements"
)

// Needs are what a run of cfg does to a cluster, phase by phase: Istio's
// rendered charts and Helm's release Secrets (unless -istio-install=skip);
// beside a running Istio, the locks its revision's istiod leaves; the
// modes' namespaces and objects, and the claims' own; and what the
// measurements do to the run's pods (exec, port-forward, logs, restarts).
// The inventory and the look for a foreign Istio only list, and say so
// themselves when they may not.
func (s *Suite) Needs(ctx context.Context) ([]access.Need, error) {
	cfg := s.Cfg
	rc := s.Provider().RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	var needs []access.Need
	p, meshed, err := istio.ProfileForModes(cfg.Modes)
	if err != nil {
		return nil, err
	}
	if meshed && istio.Method(cfg.IstioInstall) != istio.MethodSkip {
		rs, err := istio.Render(istio.Options{Profile: p, Version: cfg.IstioVersion, Charts: s.chartSource(), Revision: cfg.IstioRevision, ValuesFile: cfg.IstioValues})
		if err != nil {
			return nil, fmt.Errorf("the permission check renders Istio's charts: %w", err)
		}
		var objs []access.Object
		for _, r := range rs {
			for _, o := range r.Objects {
				if o.GetNamespace() == "" && o.GetKind() != "CustomResourceDefinition" && !clusterScoped[o.GetKind()] {
					o.SetNamespace(istio.DefaultNamespace)
				}
				objs = append(objs, o)
			}
		}
		needs = append(needs, access.ForObjects(PhaseIstio, objs, mapper, access.Writes...)...)
		for _, v := range []string{"get", "list", "create", "update", "delete"} {
			needs = append(needs, access.Need{Phase: PhaseIstio, Verb: v, Resource: "secrets", Namespace: istio.DefaultNamespace})
		}
		if cfg.IstioRevision == "" {
			for _, v := range []string{"get", "create", "delete"} {
				needs = append(needs, access.Need{Phase: PhaseIstio, Verb: v, Resource: "namespaces"})
			}
			for _, v := range []string{"get", "list", "create", "patch", "delete"} {
				needs = append(needs, access.Need{Phase: PhaseIstio, Verb: v, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"})
			}
		} else {
			needs = append(needs,
				access.Need{Phase: PhaseIstio, Verb: "list", Resource: "configmaps", Namespace: istio.DefaultNamespace},
				access.Need{Phase: PhaseIstio, Verb: "delete", Resource: "configmaps", Namespace: istio.DefaultNamespace},
				access.Need{Phase: PhaseIstio, Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: istio.DefaultNamespace},
				access.Need{Phase: PhaseIstio, Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: istio.DefaultNamespace})
		}
	}
	// The objects' content does not change what they need; any image does.
	opts := fixtures.Options{Run: cfg.RunID, Images: fixtures.Images{Workload: "example.com/meshclaims/workload:" + WorkloadVersion}, SidecarRevision: s.sidecarRevision()}
	var objs []access.Object
	for _, m := range Modes(cfg.Modes) {
		set, err := fixtures.ForMode(m, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range set {
			objs = append(objs, o)
		}
		for _, o := range fixtures.ClaimObjects(fixtures.Target{Namespace: m.Namespace(), Run: cfg.RunID}, m) {
			objs = append(objs, o)
		}
		for _, v := range []string{"get", "list", "watch", "delete"} {
			needs = append(needs, access.Need{Phase: PhaseMeasurements, Verb: v, Resource: "pods", Namespace: m.Namespace()})
		}
		needs = append(needs,
			access.Need{Phase: PhaseMeasurements, Verb: "create", Resource: "pods", Subresource: "exec", Namespace: m.Namespace()},
			access.Need{Phase: PhaseMeasurements, Verb: "create", Resource: "pods", Subresource: "portforward", Namespace: m.Namespace()},
			access.Need{Phase: PhaseMeasurements, Verb: "get", Resource: "pods", Subresource: "log", Namespace: m.Namespace()})
	}
	outside, err := fixtures.OutsideSet(opts)
	if err != nil {
		return nil, err
	}
	for _, o := range outside {
		objs = append(objs, o)
	}
	needs = append(needs, access.ForObjects(PhaseWorkloads, objs, mapper, "get", "list", "create", "patch", "delete")...)
	return access.Dedup(needs), nil
}

// clusterScoped are the kinds Istio's charts render without a namespace
// that are cluster-scoped (the others go into Istio's namespace).
var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "MutatingWebhookConfiguration": true,
	"ValidatingWebhookConfiguration": true, "Namespace": true, "CustomResourceDefinition": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}

// checkAccess refuses, before any write, a run whose credentials lack
// something Needs lists (-provider=existing: a cluster the suite created
// is its own to administer).
func (s *Suite) checkAccess(ctx context.Context) error {
	if s.Cfg.Provider != "existing" {
		return nil
	}
	needs, err := s.Needs(ctx)
	if err != nil {
		return err
	}
	// Hundreds of small reviews: client-go's default 5 per second would
	// make the check take most of a minute.
	rc := rest.CopyConfig(s.Provider().RESTConfig())
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	denied, err := access.Check(ctx, cs, needs)
	if err != nil {
		return err
	}
	if err := access.DeniedError(denied); err != nil {
		return err
	}
	s.logf("access: the run's credentials may do all %d things it needs (SelfSubjectAccessReview)", len(needs))
	return nil
}
