package istio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// The look for a foreign Istio on a real API server: an empty cluster shows
// nothing (the positive control that a found Istio is not the look's own
// noise), then each kind of component someone's Istio has is found by
// itself, with its revision and chart; a release and objects this suite
// installed are not foreign.
func TestFindForeignOnAPIServer(t *testing.T) {
	dir := chartsDir(t)
	srv := apiserver.NewForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	found := func() Found {
		t.Helper()
		f, err := FindForeign(ctx, srv.Config)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := found(); f.Any() || len(f.Unseen) > 0 {
		t.Fatalf("an empty cluster: found %v, unseen %v", f.Components, f.Unseen)
	}

	// Ours: a release carrying the suite's mark, and its objects.
	newNamespace(t, cs, "istio-ours")
	ours, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}, Namespace: "istio-ours"})
	if err != nil {
		t.Fatal(err)
	}
	hc := mustHelm(t, ours)
	ch, err := ours.opts.Charts.Load(ChartBase, ours.opts.Version)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(hc)
	in.ReleaseName, in.Namespace, in.TakeOwnership = "istio-base", "istio-ours", true
	in.Labels = map[string]string{LabelManagedBy: ManagedBy}
	if _, err := in.RunWithContext(ctx, ch, Values(ChartBase, ours.opts, nil)); err != nil {
		t.Fatal(err)
	}
	// What that release created, as a release of istiod would carry it.
	helmOwned := map[string]string{"meta.helm.sh/release-name": "istio-base", "meta.helm.sh/release-namespace": "istio-ours"}
	mkIstiod(t, cs, "istio-ours", "istiod", "", helmOwned)
	if f := found(); f.Any() || len(f.Ours) != 1 || f.Ours[0] != "istio-ours/istio-base" {
		t.Fatalf("the suite's own release and objects: foreign %v, ours %v; want none foreign and istio-ours/istio-base ours", f.Components, f.Ours)
	}

	// Theirs, one kind at a time.
	newNamespace(t, cs, "istio-system")
	theirs, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	tin := action.NewInstall(mustHelm(t, theirs))
	tin.ReleaseName, tin.Namespace = "istio-base", "istio-system"
	tin.TakeOwnership = true
	if _, err := tin.RunWithContext(ctx, ch, map[string]any{"defaultRevision": "default", "global": map[string]any{"istioNamespace": "istio-system"}}); err != nil {
		t.Fatal(err)
	}
	// The release, and the default validator its defaultRevision makes.
	f := found()
	if len(f.Components) != 2 || f.Components[0].Kind != "Helm release" || f.Components[0].Name != "istio-base" ||
		!strings.HasPrefix(f.Components[0].Chart, "base ") || f.Components[0].HelmRevision != 1 ||
		f.Components[1].String() != "ValidatingWebhookConfiguration istiod-default-validator (Istio revision default)" {
		t.Fatalf("their base release: found %v", f.Components)
	}
	if f.Components[0].Values["defaultRevision"] != "default" {
		t.Errorf("their release's values are not recorded: %v", f.Components[0].Values)
	}
	mkIstiod(t, cs, "istio-system", "istiod-stable", "stable", nil)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-stable", Labels: map[string]string{LabelRevision: "stable", "app": "sidecar-injector"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().DaemonSets("istio-system").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ztunnel", Labels: map[string]string{"app": "ztunnel"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ztunnel"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ztunnel"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "docker.io/istio/ztunnel:1.29.0"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f = found()
	var got []string
	for _, c := range f.Components {
		got = append(got, c.String())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		"Deployment istio-system/istiod-stable (Istio revision stable, images docker.io/istio/pilot:1.29.0)",
		"MutatingWebhookConfiguration istio-sidecar-injector-stable (Istio revision stable)",
		"DaemonSet istio-system/ztunnel (Istio revision default, images docker.io/istio/ztunnel:1.29.0)",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("not found: %q\nfound:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "istio-ours") {
		t.Errorf("the suite's own objects read as foreign:\n%s", joined)
	}
	if len(f.NodeAgents()) != 1 {
		t.Errorf("node agents %v, want the ztunnel DaemonSet", f.NodeAgents())
	}
	// Every one of them stops a default sidecar run, and the refusal
	// names them.
	err = Beside{Method: MethodHelm, Modes: []mode.Mode{mode.Sidecar}}.Decide(f)
	if !errors.Is(err, ErrForeignIstio) || !strings.Contains(err.Error(), "istiod-stable") || !strings.Contains(err.Error(), "chart base") {
		t.Errorf("refusal: %v", err)
	}
}

func mkIstiod(t *testing.T, cs kubernetes.Interface, ns, name, rev string, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": "istiod"}
	if rev != "" {
		labels[LabelRevision] = rev
	}
	_, err := cs.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:1.29.0"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// Decide's rules, each with the case on its other side.
func TestDecideBesideForeignIstio(t *testing.T) {
	istiod := Component{Kind: "Deployment", Namespace: "istio-system", Name: "istiod"}
	zt := Component{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}
	canary := Component{Kind: "Deployment", Namespace: "istio-system", Name: "istiod-canary", Revision: "canary"}
	sidecar, ambient, none := []mode.Mode{mode.None, mode.Sidecar}, []mode.Mode{mode.AmbientL4}, []mode.Mode{mode.None}
	for _, c := range []struct {
		name  string
		b     Beside
		f     Found
		wants []string // substrings of the error; none: no error
	}{
		{"nothing found, default install", Beside{Method: MethodHelm, Modes: sidecar}, Found{}, nil},
		{"mode none never refuses", Beside{Method: MethodHelm, Modes: none}, Found{Components: []Component{istiod}}, nil},
		{"istiod found, default install", Beside{Method: MethodHelm, Modes: sidecar}, Found{Components: []Component{istiod}},
			[]string{"Deployment istio-system/istiod", "-istio-install=skip", "-istio-revision=NAME", "Nothing was written"}},
		{"skip qualifies what runs", Beside{Method: MethodSkip, Modes: ambient}, Found{Components: []Component{istiod, zt}}, nil},
		{"skip with nothing to qualify", Beside{Method: MethodSkip, Modes: sidecar}, Found{}, []string{"none was found"}},
		{"skip on a kept cluster with the suite's own Istio", Beside{Method: MethodSkip, Modes: sidecar}, Found{Ours: []string{"istio-system/istiod"}}, nil},
		{"revision beside istiod", Beside{Method: MethodHelm, Revision: "qual", Modes: sidecar}, Found{Components: []Component{istiod}}, nil},
		{"revision with nothing beside", Beside{Method: MethodHelm, Revision: "qual", Modes: sidecar}, Found{}, []string{"this cluster runs none"}},
		{"revision name taken", Beside{Method: MethodHelm, Revision: "canary", Modes: sidecar}, Found{Components: []Component{istiod, canary}}, []string{"already a revision", "istiod-canary"}},
		{"revision for ambient", Beside{Method: MethodHelm, Revision: "qual", Modes: ambient}, Found{Components: []Component{istiod}}, []string{"one per node"}},
		{"ambient beside someone's ztunnel", Beside{Method: MethodHelm, Modes: ambient}, Found{Components: []Component{istiod, zt}},
			[]string{"DaemonSet istio-system/ztunnel", "only one ztunnel", "-istio-install=skip"}},
		{"blind look", Beside{Method: MethodHelm, Modes: sidecar}, Found{Unseen: []string{"istiod Deployments (forbidden)"}}, []string{"cannot tell", "istiod Deployments (forbidden)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.b.Decide(c.f)
			if len(c.wants) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("went on")
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q: %v", w, err)
				}
			}
		})
	}
}

// A revision's install is istiod alone, every object named for the
// revision or new to the cluster: rendered beside the default install, no
// object of the revision has the kind, namespace and name of one of the
// default install's (Helm, with TakeOwnership off, would then refuse rather
// than adopt it), its injector selects only namespaces labelled
// istio.io/rev=<rev>, and it makes no default validator or revision tag.
// The negative control: the default install rendered twice collides with
// itself everywhere.
func TestRevisionRendersBesideDefault(t *testing.T) {
	dir := chartsDir(t)
	def, err := Render(Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := Render(Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}, Revision: "qual"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rev) != 1 || rev[0].Chart != ChartIstiod || rev[0].Release != "istiod-qual" {
		t.Fatalf("a revision renders %d charts (%v), want istiod alone as istiod-qual", len(rev), rev)
	}
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	collisions := func(a, b []Rendered) []string {
		have := map[string]bool{}
		for _, o := range all(a) {
			have[key(o)] = true
		}
		var out []string
		for _, o := range all(b) {
			if have[key(o)] {
				out = append(out, key(o))
			}
		}
		return out
	}
	if c := collisions(def, rev); len(c) > 0 {
		t.Errorf("revision qual would write objects of the default install: %v", c)
	}
	if c := collisions(def, def); len(c) == 0 {
		t.Errorf("negative control: the default install shows no collision with itself")
	}
	var injector *unstructured.Unstructured
	for _, o := range all(rev) {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			injector = o
		case "ValidatingWebhookConfiguration":
			if o.GetName() == "istiod-default-validator" {
				t.Errorf("the revision makes the default validator")
			}
		}
		if l := o.GetLabels()["istio.io/tag"]; l != "" {
			t.Errorf("the revision makes a revision tag: %s (%s)", key(o), l)
		}
	}
	if injector == nil {
		t.Fatal("no injector webhook in the revision")
	}
	hooks, _, _ := unstructured.NestedSlice(injector.Object, "webhooks")
	revSelected := 0
	for _, h := range hooks {
		hm := h.(map[string]any)
		exprs, _, _ := unstructured.NestedSlice(hm, "namespaceSelector", "matchExpressions")
		for _, e := range exprs {
			em := e.(map[string]any)
			if em["key"] == LabelRevision && em["operator"] == "In" {
				vals, _ := em["values"].([]any)
				if len(vals) != 1 || vals[0] != "qual" {
					t.Errorf("webhook %v selects istio.io/rev in %v, want [qual]", hm["name"], vals)
				}
				revSelected++
			}
		}
	}
	if revSelected == 0 {
		t.Errorf("no webhook of %s selects namespaces by istio.io/rev=qual", injector.GetName())
	}
}

// CheckCRDs on a real API server holding the base chart's own CRDs: they
// match (the positive control that the comparison survives the API
// server's round trip); one deleted is Missing and refuses the revision;
// one with another schema is a warning, not a refusal.
func TestCheckCRDsBesideRunningIstio(t *testing.T) {
	dir := chartsDir(t)
	var crdFile string
	for _, c := range []string{"manifests/charts/base/files/crd-all.gen.yaml", "base/files/crd-all.gen.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
			crdFile = filepath.Join(dir, c)
		}
	}
	if crdFile == "" {
		t.Fatalf("no base chart CRD file under %s", dir)
	}
	srv := apiserver.NewForTestWith(t, apiserver.Options{IstioCRDFile: crdFile, NoGatewayCRDs: true})
	ctx := context.Background()
	o := Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}}
	check := func() CRDCheck {
		t.Helper()
		c, err := CheckCRDs(ctx, srv.Config, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := check(); len(c.Missing) > 0 || len(c.Differ) > 0 || c.Err("qual") != nil || c.Warning() != "" {
		t.Fatalf("the release's own CRDs: missing %v, differ %v", c.Missing, c.Differ)
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	const changed, gone = "sidecars.networking.istio.io", "wasmplugins.extensions.istio.io"
	crd, err := dyn.Resource(crdGVR).Get(ctx, changed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v0 := vs[0].(map[string]any)
	if err := unstructured.SetNestedField(v0, "changed by the cluster's owner", "schema", "openAPIV3Schema", "description"); err != nil {
		t.Fatal(err)
	}
	vs[0] = v0
	if err := unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := check(); len(c.Differ) != 1 || c.Differ[0] != changed || c.Err("qual") != nil || !strings.Contains(c.Warning(), changed) {
		t.Errorf("a changed schema: missing %v, differ %v, want a warning naming %s", c.Missing, c.Differ, changed)
	}
	if err := dyn.Resource(crdGVR).Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := check()
	if err := c.Err("qual"); err == nil || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "Nothing was written") {
		t.Errorf("a missing CRD: %v, want a refusal naming %s", err, gone)
	}
}

// The holder of a ConfigMap lock, read as client-go's ConfigMap lock
// writes its record; a ConfigMap that is no lock has none.
func TestLockHolder(t *testing.T) {
	rec := `{"holderIdentity":"istiod-75b444f8d-r6nlx","leaseDurationSeconds":30,"acquireTime":"2026-12-07T03:45:01Z","renewTime":"2026-12-07T03:58:58Z","leaderTransitions":0}`
	if h := LockHolder(map[string]string{"control-plane.alpha.kubernetes.io/leader": rec}); h != "istiod-75b444f8d-r6nlx" {
		t.Errorf("holder %q", h)
	}
	for _, a := range []map[string]string{nil, {"other": rec}, {"control-plane.alpha.kubernetes.io/leader": "not json"}} {
		if h := LockHolder(a); h != "" {
			t.Errorf("%v: holder %q, want none", a, h)
		}
	}
}
