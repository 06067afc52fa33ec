package istio

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

func kinds(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetName()] = o
	}
	return m
}

// workloadImages collects container images of rendered Deployments and
// DaemonSets, the way VerifyVersion reads them from a cluster.
func workloadImages(t *testing.T, rs []Rendered) map[string]string {
	t.Helper()
	images := map[string]string{}
	for _, r := range rs {
		for _, o := range r.Objects {
			if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
				continue
			}
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				cm := c.(map[string]any)
				images[o.GetKind()+"/"+o.GetName()+"/"+cm["name"].(string)] = cm["image"].(string)
			}
		}
	}
	return images
}

func all(rs []Rendered) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, r := range rs {
		out = append(out, r.Objects...)
	}
	return out
}

func TestRenderProfiles(t *testing.T) {
	dir := chartsDir(t)
	values := repoFile(t, "testdata/istio/values.yaml")
	t.Run("default (sidecar)", func(t *testing.T) {
		rs, err := Render(Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}, ValuesFile: values})
		if err != nil {
			t.Fatal(err)
		}
		k := kinds(all(rs))
		if k["Deployment/istiod"] == nil {
			t.Error("no istiod Deployment")
		}
		if k["MutatingWebhookConfiguration/istio-sidecar-injector"] == nil {
			t.Error("no sidecar injector webhook")
		}
		if k["DaemonSet/ztunnel"] != nil || k["DaemonSet/istio-cni-node"] != nil {
			t.Error("sidecar profile renders ambient node agents")
		}
		if env := envOf(t, k["Deployment/istiod"], "PILOT_ENABLE_AMBIENT"); env == "true" {
			t.Error("default profile enables ambient in istiod")
		}
		imgs := workloadImages(t, rs)
		if err := CheckImageVersions(imgs, DefaultVersion); err != nil {
			t.Errorf("rendered images do not carry the version: %v", err)
		}
		if err := CheckImageVersions(imgs, "1.30.1"); err == nil {
			t.Error("version check passed for the wrong version (negative control)")
		}
	})
	t.Run("ambient", func(t *testing.T) {
		rs, err := Render(Options{Profile: ProfileAmbient, Charts: ChartSource{Dir: dir}, ValuesFile: values})
		if err != nil {
			t.Fatal(err)
		}
		k := kinds(all(rs))
		for _, want := range []string{"Deployment/istiod", "DaemonSet/ztunnel", "DaemonSet/istio-cni-node"} {
			if k[want] == nil {
				t.Errorf("ambient profile lacks %s", want)
			}
		}
		if env := envOf(t, k["Deployment/istiod"], "PILOT_ENABLE_AMBIENT"); env != "true" {
			t.Errorf("istiod PILOT_ENABLE_AMBIENT = %q, want true", env)
		}
		if err := CheckImageVersions(workloadImages(t, rs), DefaultVersion); err != nil {
			t.Errorf("rendered images do not carry the version: %v", err)
		}
		// testdata/istio/values.yaml reached istiod.
		// (Decoded through JSON: numbers are float64 or int64.)
		r, _, _ := unstructured.NestedFieldNoCopy(k["Deployment/istiod"].Object, "spec", "replicas")
		if fmt.Sprint(r) != "1" {
			t.Errorf("istiod replicas = %v, want 1 from testdata/istio/values.yaml (autoscaleEnabled: false)", r)
		}
	})
}

func envOf(t *testing.T, o *unstructured.Unstructured, name string) string {
	t.Helper()
	if o == nil {
		return ""
	}
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		envs, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range envs {
			em := e.(map[string]any)
			if em["name"] == name {
				v, _ := em["value"].(string)
				return v
			}
		}
	}
	return ""
}

// TestRenderedObjectsPassServerSideDryRun sends every rendered object of
// each profile to a real API server (Istio's and Gateway API's CRDs
// installed) with dryRun=All: schema validation and admission, nothing kept.
func TestRenderedObjectsPassServerSideDryRun(t *testing.T) {
	dir := chartsDir(t)
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Namespaced dry runs need the namespace to exist.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	for _, p := range []Profile{ProfileDefault, ProfileAmbient} {
		t.Run(string(p), func(t *testing.T) {
			rs, err := Render(Options{Profile: p, Charts: ChartSource{Dir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			objs := all(rs)
			if err := DryRunApply(ctx, srv.Config, objs, DefaultNamespace); err != nil {
				t.Fatal(err)
			}
			// Dry run persisted nothing.
			if _, err := cs.AppsV1().Deployments(DefaultNamespace).Get(ctx, "istiod", metav1.GetOptions{}); err == nil {
				t.Error("dry run created istiod")
			}
		})
	}
	// Negative control: an object the server must refuse.
	t.Run("refuses invalid object", func(t *testing.T) {
		bad, err := DecodeObjects([]byte("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: bad, namespace: istio-system}\nspec:\n  mtls:\n    mode: SOMETIMES\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := DryRunApply(ctx, srv.Config, bad, DefaultNamespace); err == nil {
			t.Error("server accepted mtls.mode SOMETIMES")
		}
	})
}

// TestChartsFromRepository serves a Helm repository on loopback (Istio's
// charts repackaged at version 1.30.2, as Istio's repository publishes them)
// and loads through Helm's repository client, as from DefaultRepoURL.
func TestChartsFromRepository(t *testing.T) {
	dir := chartsDir(t)
	repoDir := t.TempDir()
	for _, c := range []Chart{ChartBase, ChartIstiod} {
		ch, err := (ChartSource{Dir: dir}).Load(c, DefaultVersion)
		if err != nil {
			t.Fatal(err)
		}
		ch.Metadata.Version = DefaultVersion
		ch.Metadata.AppVersion = DefaultVersion
		if _, err := chartutil.Save(ch, repoDir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repoDir)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(repoDir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := ChartSource{RepoURL: srv.URL}
	ch, err := src.Load(ChartIstiod, DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "istiod" || ch.Metadata.Version != DefaultVersion {
		t.Errorf("loaded %s %s", ch.Name(), ch.Metadata.Version)
	}
	if _, err := src.Load(ChartIstiod, "1.30.3"); err == nil || !strings.Contains(err.Error(), "1.30.3") {
		t.Errorf("missing version: %v", err)
	}
}

func TestChartSourceDirLayouts(t *testing.T) {
	dir := chartsDir(t)
	for _, c := range []Chart{ChartBase, ChartIstiod, ChartCNI, ChartZtunnel} {
		ch, err := (ChartSource{Dir: dir}).Load(c, DefaultVersion)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Name() != string(c) {
			t.Errorf("loaded %s for %s", ch.Name(), c)
		}
	}
	if _, err := (ChartSource{Dir: t.TempDir()}).Load(ChartIstiod, DefaultVersion); err == nil || !strings.Contains(err.Error(), "istiod") {
		t.Errorf("empty dir: %v", err)
	}
}

// The default values file of kind and local (-istio-values) is what keeps
// istiod schedulable on one small node: the chart alone requests 2Gi.
func TestValuesFileSetsIstiodRequests(t *testing.T) {
	dir := chartsDir(t)
	request := func(valuesFile string) string {
		t.Helper()
		rs, err := Render(Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}, ValuesFile: valuesFile})
		if err != nil {
			t.Fatal(err)
		}
		d := kinds(all(rs))["Deployment/istiod"]
		if d == nil {
			t.Fatal("no istiod Deployment")
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			if c.(map[string]any)["name"] == "discovery" {
				m, _, _ := unstructured.NestedString(c.(map[string]any), "resources", "requests", "memory")
				return m
			}
		}
		t.Fatal("no discovery container")
		return ""
	}
	if got := request(""); got != "2048Mi" {
		t.Errorf("chart's own istiod memory request %q, want 2048Mi (control: the values file is what changes it)", got)
	}
	if got := request(repoFile(t, "testdata/istio/values.yaml")); got != "256Mi" {
		t.Errorf("istiod memory request with testdata/istio/values.yaml %q, want 256Mi", got)
	}
}
