package all

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
	"github.com/meshclaims/meshclaims/framework/setup"
)

// A cluster that already runs someone's Istio, met as a user meets it: the
// e2e binary with -provider=existing against a real API server holding an
// istiod Deployment and a ztunnel DaemonSet that are not the suite's. A
// sidecar run and an ambient run each stop before the image is built and
// before any write (inventory unchanged, registry empty), naming what they
// found and the ways on; the sidecar refusal keeps what it found in the
// results directory. The positive control: the same sidecar run with
// -istio-revision gets past the look to the build.
func TestExistingProviderRefusesForeignIstio(t *testing.T) {
	bin := e2eBinary(t)
	reg := privateregistry.ForTest(t)
	srv := apiserver.NewForTest(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "qual"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: istio.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ name, label, value, image string }{
		{"istiod", "app", "istiod", "docker.io/istio/pilot:1.29.0"},
		{"ztunnel", "app", "ztunnel", "docker.io/istio/ztunnel:1.29.0"},
	} {
		labels := map[string]string{d.label: d.value}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: d.image}}}}
		var err error
		if d.name == "ztunnel" {
			_, err = cs.AppsV1().DaemonSets(istio.DefaultNamespace).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: labels},
				Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
		} else {
			_, err = cs.AppsV1().Deployments(istio.DefaultNamespace).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: labels},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	before, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"-provider=existing", "-kubeconfig=" + kc, "-context=qual", "-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile,
		"-netpol-enforcer=calico", "-ginkgo.v"}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"sidecar over someone's istiod", []string{"-mode=sidecar"}, []string{
			"an Istio the run did not install runs on this cluster",
			"Deployment istio-system/istiod (Istio revision default, images docker.io/istio/pilot:1.29.0)",
			"DaemonSet istio-system/ztunnel", "-istio-install=skip", "-istio-revision=NAME", "Nothing was written"}},
		{"ambient beside someone's ztunnel", []string{"-mode=ambient-l4"}, []string{
			"only one ztunnel and one istio-cni can serve a node", "DaemonSet istio-system/ztunnel", "Nothing was written"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			results := filepath.Join(t.TempDir(), "results")
			cmd := exec.CommandContext(ctx, bin, append(append([]string{"-results=" + results, "-run-id=refused"}, common...), c.args...)...)
			cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
			start := time.Now()
			raw, err := cmd.CombinedOutput()
			out := string(raw)
			t.Logf("exit %v after %v", err, time.Since(start).Round(time.Millisecond))
			if err == nil {
				t.Fatalf("the run passed over someone's Istio:\n%s", lastLinesOf(out, 40))
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, lastLinesOf(out, 40))
				}
			}
			if strings.Contains(out, "image: building") {
				t.Errorf("the run built the workload image before refusing")
			}
			var found istio.Found
			b, err := os.ReadFile(filepath.Join(results, "refused", setup.IstioFoundFile))
			if err != nil || json.Unmarshal(b, &found) != nil || len(found.Components) != 2 {
				t.Errorf("the results directory does not keep what was found: %v, %s", err, b)
			}
		})
	}
	after, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if d := inventory.Compare(before, after); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 {
		t.Errorf("the refused runs wrote to the cluster: added %v, removed %v, changed %v",
			inventory.Keys(d.Added), inventory.Keys(d.Removed), inventory.Keys(d.Changed))
	}
	if cat, err := reg.Catalog(ctx); err != nil || len(cat) != 0 {
		t.Errorf("registry after the refused runs: %v, %v; want empty", cat, err)
	}

	t.Run("a revision beside it gets past the look", func(t *testing.T) {
		// The revision compares the cluster's Istio CRDs with the
		// qualified release's base chart, read from Istio's module.
		charts := istioChartsDir(t, "the revision compares the cluster's CRDs with the base chart's")
		reachesBuild(t, bin, reg, append(append([]string{"-results=" + filepath.Join(t.TempDir(), "results"), "-istio-charts=" + charts}, common...), "-mode=sidecar", "-istio-revision=qual"),
			"installing revision qual beside the running Istio")
	})
}

// istioChartsDir is the istio.io/istio module directory the Makefile
// passes in MESHCLAIMS_ISTIO_CHARTS; without it the test skips, saying why
// it needs the charts, or fails where the API-server tests are required.
func istioChartsDir(t *testing.T, why string) string {
	t.Helper()
	charts := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if charts == "" {
		if os.Getenv(apiserver.EnvRequire) == "1" {
			t.Fatal("MESHCLAIMS_ISTIO_CHARTS is not set but " + apiserver.EnvRequire + "=1")
		}
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory): " + why)
	}
	return charts
}

// reachesBuild is a positive control on the release-qualification path:
// the e2e binary with args gets past every check before the build (it is
// stopped there: the build and the rest are the full run's business), and
// its output says each of wants.
func reachesBuild(t *testing.T, bin string, reg *privateregistry.Registry, args []string, wants ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
	e2e := cleanuptest.Start(t, cmd, "e2e")
	e2e.WaitForOutput(t, "image: building", 2*time.Minute)
	_ = e2e.Interrupt(t, 2*time.Minute)
	for _, w := range wants {
		if !strings.Contains(e2e.Output(), w) {
			t.Errorf("the run did not say %q:\n%s", w, lastLinesOf(e2e.Output(), 40))
		}
	}
}
