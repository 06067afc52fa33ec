package istio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// ErrForeignIstio is wrapped by every refusal to touch an Istio the run
// did not install.
var ErrForeignIstio = errors.New("an Istio the run did not install runs on this cluster")

// LabelRevision is the namespace and object label naming an Istio revision.
const LabelRevision = "istio.io/rev"

// Component is one piece of an Istio found on a cluster.
type Component struct {
	// Kind is "Helm release", "Deployment", "DaemonSet",
	// "MutatingWebhookConfiguration" or "ValidatingWebhookConfiguration".
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Chart is a release's chart and version ("istiod 1.30.2"); HelmRevision
	// its Helm revision number.
	Chart        string `json:"chart,omitempty"`
	HelmRevision int    `json:"helm_revision,omitempty"`
	// Revision is the Istio revision it serves (istio.io/rev), "" where
	// it names none (the default revision).
	Revision string `json:"revision,omitempty"`
	// Images are a workload's container images, as its spec names them.
	Images []string `json:"images,omitempty"`
	// Values are a release's user-supplied values (helm get values).
	Values map[string]any `json:"values,omitempty"`
}

// String names the component as a refusal lists it.
func (c Component) String() string {
	var b strings.Builder
	b.WriteString(c.Kind + " ")
	if c.Namespace != "" {
		b.WriteString(c.Namespace + "/")
	}
	b.WriteString(c.Name)
	var detail []string
	if c.Chart != "" {
		detail = append(detail, "chart "+c.Chart)
	}
	if c.HelmRevision > 0 {
		detail = append(detail, fmt.Sprintf("Helm revision %d", c.HelmRevision))
	}
	rev := c.Revision
	if rev == "" {
		rev = "default"
	}
	detail = append(detail, "Istio revision "+rev)
	if len(c.Images) > 0 {
		detail = append(detail, "images "+strings.Join(c.Images, ", "))
	}
	return b.String() + " (" + strings.Join(detail, ", ") + ")"
}

// NodeAgent says whether the component runs on every node (ztunnel,
// istio-cni): only one of each can serve a node.
func (c Component) NodeAgent() bool { return c.Kind == "DaemonSet" }

// Found is the Istio a cluster runs that this suite did not install.
type Found struct {
	Components []Component `json:"components,omitempty"`
	// Unseen names what could not be looked at (a list the run's
	// credentials may not make), so an empty Components is not taken for
	// proof of absence.
	Unseen []string `json:"unseen,omitempty"`
	// Notes say how far the look went where it was narrowed but not
	// blind (Helm releases in Istio's namespace only).
	Notes []string `json:"notes,omitempty"`
	// Ours are the releases an earlier run of this suite installed and
	// left (-keep-cluster): not foreign, but an Istio -istio-install=skip
	// can qualify.
	Ours []string `json:"ours,omitempty"`
}

// Any says whether anything of a foreign Istio was found.
func (f Found) Any() bool { return len(f.Components) > 0 }

// NodeAgents are the found ztunnel and istio-cni DaemonSets.
func (f Found) NodeAgents() []Component {
	var out []Component
	for _, c := range f.Components {
		if c.NodeAgent() {
			out = append(out, c)
		}
	}
	return out
}

// Revisions are the Istio revisions the found components serve, "default"
// for those naming none.
func (f Found) Revisions() []string {
	seen := map[string]bool{}
	for _, c := range f.Components {
		r := c.Revision
		if r == "" {
			r = "default"
		}
		seen[r] = true
	}
	return sortedKeys(seen)
}

// istioChartNames are the names Istio's Helm charts carry (Chart.yaml).
var istioChartNames = map[string]bool{"base": true, "istiod": true, "cni": true, "ztunnel": true, "gateway": true, "istiod-remote": true, "istio-discovery": true}

// isIstioChart tells Istio's charts from others of the same name (a chart
// called "base" is not rare): Istio's name istio.io as their home or source.
func isIstioChart(rel *release.Release) bool {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return false
	}
	md := rel.Chart.Metadata
	if !istioChartNames[md.Name] {
		return false
	}
	for _, s := range append([]string{md.Home}, md.Sources...) {
		if strings.Contains(s, "istio.io") || strings.Contains(s, "github.com/istio/") {
			return true
		}
	}
	return slices.Contains(md.Keywords, "istio")
}

// FindForeign looks, with lists only, for an Istio this suite did not
// install: releases of Istio's charts in any namespace, istiod Deployments,
// sidecar-injector and validation webhooks, ztunnel and istio-cni
// DaemonSets. What an earlier run of this suite installed (releases
// carrying LabelManagedBy, and the objects of those releases) is not
// foreign.
func FindForeign(ctx context.Context, cfg *rest.Config) (Found, error) {
	var f Found
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return f, err
	}
	ours := map[string]bool{} // namespace/release of this suite's releases
	rels, err := latestReleases(cs, "")
	if apierrors.IsForbidden(err) {
		f.Notes = append(f.Notes, "Helm releases looked for in "+DefaultNamespace+" only (the run's credentials may not list Secrets cluster-wide)")
		rels, err = latestReleases(cs, DefaultNamespace)
		if apierrors.IsForbidden(err) {
			f.Unseen = append(f.Unseen, "Helm releases in "+DefaultNamespace+" (may not list its Secrets)")
			rels, err = nil, nil
		}
	}
	if err != nil {
		return f, fmt.Errorf("istio: listing Helm releases: %w", err)
	}
	for _, r := range rels {
		if !isIstioChart(r) {
			continue
		}
		if r.Labels[LabelManagedBy] == ManagedBy {
			ours[r.Namespace+"/"+r.Name] = true
			f.Ours = append(f.Ours, r.Namespace+"/"+r.Name)
			continue
		}
		rev, _ := r.Config["revision"].(string)
		f.Components = append(f.Components, Component{Kind: "Helm release", Namespace: r.Namespace, Name: r.Name,
			Chart: r.Chart.Metadata.Name + " " + r.Chart.Metadata.Version, HelmRevision: r.Version, Revision: rev, Values: r.Config})
	}
	isOurs := func(m metav1.Object) bool {
		a := m.GetAnnotations()
		return ours[a["meta.helm.sh/release-namespace"]+"/"+a["meta.helm.sh/release-name"]]
	}
	unseen := func(what string, err error) error {
		if apierrors.IsForbidden(err) {
			f.Unseen = append(f.Unseen, what+" (forbidden)")
			return nil
		}
		if err != nil {
			return fmt.Errorf("istio: listing %s: %w", what, err)
		}
		return nil
	}

	deps, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"})
	if err := unseen("istiod Deployments", err); err != nil {
		return f, err
	}
	if deps != nil {
		for _, d := range deps.Items {
			if !isOurs(&d) {
				f.Components = append(f.Components, Component{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name,
					Revision: d.Labels[LabelRevision], Images: containerImages(d.Spec.Template.Spec.Containers)})
			}
		}
	}
	dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err := unseen("DaemonSets", err); err != nil {
		return f, err
	}
	if dss != nil {
		for _, d := range dss.Items {
			if nodeAgentDaemonSet(&d) && !isOurs(&d) {
				f.Components = append(f.Components, Component{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name,
					Revision: d.Labels[LabelRevision], Images: containerImages(d.Spec.Template.Spec.Containers)})
			}
		}
	}
	mw, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err := unseen("MutatingWebhookConfigurations", err); err != nil {
		return f, err
	}
	if mw != nil {
		for _, w := range mw.Items {
			var names []string
			for _, h := range w.Webhooks {
				names = append(names, h.Name)
			}
			if istioWebhook(w.Name, w.Labels, names, "sidecar-injector") && !isOurs(&w) {
				f.Components = append(f.Components, Component{Kind: "MutatingWebhookConfiguration", Name: w.Name, Revision: webhookRevision(w.Labels)})
			}
		}
	}
	vw, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err := unseen("ValidatingWebhookConfigurations", err); err != nil {
		return f, err
	}
	if vw != nil {
		for _, w := range vw.Items {
			var names []string
			for _, h := range w.Webhooks {
				names = append(names, h.Name)
			}
			if istioWebhook(w.Name, w.Labels, names, "validation") && !isOurs(&w) {
				f.Components = append(f.Components, Component{Kind: "ValidatingWebhookConfiguration", Name: w.Name, Revision: webhookRevision(w.Labels)})
			}
		}
	}
	return f, nil
}

// latestReleases are the newest Helm revision of every release in ns (""
// for every namespace), read from Helm's Secrets storage.
func latestReleases(cs kubernetes.Interface, ns string) ([]*release.Release, error) {
	d := driver.NewSecrets(cs.CoreV1().Secrets(ns))
	all, err := d.List(func(*release.Release) bool { return true })
	if err != nil {
		return nil, err
	}
	newest := map[string]*release.Release{}
	for _, r := range all {
		k := r.Namespace + "/" + r.Name
		if n, ok := newest[k]; !ok || r.Version > n.Version {
			newest[k] = r
		}
	}
	out := make([]*release.Release, 0, len(newest))
	for _, r := range newest {
		out = append(out, r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Namespace+"/"+out[a].Name < out[b].Namespace+"/"+out[b].Name })
	return out, nil
}

func containerImages(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Image)
	}
	return out
}

// nodeAgentDaemonSet says whether d is Istio's ztunnel or istio-cni node
// agent, by the labels Istio's charts give them or by their names.
func nodeAgentDaemonSet(d *appsv1.DaemonSet) bool {
	l := d.Labels
	return l["app"] == "ztunnel" || l["k8s-app"] == "istio-cni-node" || d.Name == "ztunnel" || d.Name == "istio-cni-node"
}

// istioWebhook says whether a webhook configuration is Istio's: by its
// chart labels, its name, or the names of its webhooks (which end in
// .istio.io: rev.namespace.sidecar-injector.istio.io,
// rev.validation.istio.io).
func istioWebhook(name string, labels map[string]string, hooks []string, kind string) bool {
	if labels["app"] == "sidecar-injector" || labels["app"] == "istiod" || labels[LabelRevision] != "" || labels["istio.io/tag"] != "" {
		return true
	}
	if strings.HasPrefix(name, "istio-sidecar-injector") || strings.HasPrefix(name, "istio-validator") || name == "istiod-default-validator" {
		return true
	}
	for _, h := range hooks {
		if strings.HasSuffix(h, ".istio.io") && strings.Contains(h, kind) {
			return true
		}
	}
	return false
}

// webhookRevision is the revision a webhook serves: a revision tag names
// the revision it points at in istio.io/rev and itself in istio.io/tag.
func webhookRevision(labels map[string]string) string {
	if t := labels["istio.io/tag"]; t != "" {
		return labels[LabelRevision] + " (tag " + t + ")"
	}
	return labels[LabelRevision]
}

// Beside is how a run goes on when a foreign Istio is there.
type Beside struct {
	// Method is -istio-install, Revision -istio-revision.
	Method   Method
	Revision string
	// Modes are the run's modes.
	Modes []mode.Mode
}

// Decide says whether a run may go on given what FindForeign found. It
// refuses, before any write, an install over a foreign Istio (the run would
// change someone's control plane), an ambient run beside a foreign
// ztunnel or istio-cni (one per node), and a revision with no Istio to
// stand beside; the error names what was found and the ways on.
func (b Beside) Decide(f Found) error {
	meshed, ambient := false, false
	for _, m := range b.Modes {
		meshed = meshed || m.Meshed()
		ambient = ambient || m.Ambient()
	}
	if !meshed {
		return nil
	}
	list := func(cs []Component) string {
		var out []string
		for _, c := range cs {
			out = append(out, "  - "+c.String())
		}
		return strings.Join(out, "\n")
	}
	unseen := ""
	if len(f.Unseen) > 0 {
		unseen = "\nNot looked at (the run's credentials may not list them): " + strings.Join(f.Unseen, "; ")
	}
	switch {
	case b.Method == MethodSkip:
		if !f.Any() && len(f.Ours) == 0 {
			return fmt.Errorf("istio: -istio-install=skip qualifies the Istio this cluster runs, and none was found (no Istio Helm release, istiod Deployment, Istio webhook, ztunnel or istio-cni DaemonSet)%s. Nothing was written. Install Istio first, or run without -istio-install=skip to let the suite install it", unseen)
		}
		return nil
	case b.Revision != "" && ambient:
		return fmt.Errorf("istio: -istio-revision=%s is for sidecar mode: ambient's ztunnel and istio-cni run one per node and a second cannot run beside another Istio's. Nothing was written. Run the ambient modes with -istio-install=skip to qualify the installed Istio, or on a cluster of their own", b.Revision)
	case b.Revision != "" && !f.Any():
		return fmt.Errorf("istio: -istio-revision=%s installs the qualified release beside a running Istio, using that Istio's CRDs, and this cluster runs none%s. Nothing was written. Run without -istio-revision: the suite then installs Istio itself and removes it after the run", b.Revision, unseen)
	case b.Revision != "":
		for _, c := range f.Components {
			if c.Revision == b.Revision || strings.HasPrefix(c.Revision, b.Revision+" ") || (c.Kind == "Helm release" && c.Name == "istiod-"+b.Revision) {
				return fmt.Errorf("istio: -istio-revision=%s is already a revision of the Istio this cluster runs (%s). Nothing was written. Choose a revision name of your own", b.Revision, c)
			}
		}
		return nil
	case ambient && len(f.NodeAgents()) > 0:
		return fmt.Errorf("%w, with node agents (only one ztunnel and one istio-cni can serve a node, so the ambient modes cannot install their own beside them):\n%s\nNothing was written. Qualify that Istio as it is with -istio-install=skip, or run the ambient modes on a cluster of their own",
			ErrForeignIstio, list(f.NodeAgents()))
	case f.Any():
		return fmt.Errorf("%w:\n%s\nInstalling over it would change its version and values and the namespaces its istiod serves. Nothing was written. Either:\n"+
			"  - -istio-install=skip: qualify the installed Istio as it is (the report records its version, revision, images and values; the suite installs nothing), or\n"+
			"  - -istio-revision=NAME (sidecar mode): install the qualified release as revision NAME beside it (istiod-NAME and its own webhooks; the run's namespaces labelled %s=NAME; the default revision, revision tags and every other namespace untouched), removed after the run",
			ErrForeignIstio, list(f.Components), LabelRevision)
	}
	if len(f.Unseen) > 0 {
		return fmt.Errorf("istio: cannot tell whether an Istio already runs here: %s. Nothing was written. Grant the run list on those resources, or say how to proceed: -istio-install=skip (an Istio is installed) or -istio-revision=NAME", strings.Join(f.Unseen, "; "))
	}
	return nil
}
