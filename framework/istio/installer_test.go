package istio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"helm.sh/helm/v3/pkg/action"
)

func mustHelm(t *testing.T, i *Installer) *action.Configuration {
	t.Helper()
	cfg, err := i.helmConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// switchGuard is a WriteGuard whose verdict the test sets: it stands in for
// a cluster that changed (the real guard is tested in framework/cluster).
type switchGuard struct{ refuse atomic.Bool }

func (g *switchGuard) Check(context.Context) error {
	if g.refuse.Load() {
		return fmt.Errorf("%w: test says so", cluster.ErrClusterChanged)
	}
	return nil
}

func newNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"keep": "me"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestHelmInstallsBaseChartOnAPIServer drives the Helm SDK path (install,
// then upgrade on re-run, then uninstall) with the base chart, whose objects
// need no running pods to be ready, on a real API server.
func TestHelmInstallsBaseChartOnAPIServer(t *testing.T) {
	dir := chartsDir(t)
	// A server of its own: uninstalling base deletes Istio's CRDs, which
	// the other tests of this binary use.
	srv := apiserver.NewForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-helm-test"
	g := &switchGuard{}
	inst, err := NewInstaller(srv.Config, g, Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	releases := func() int {
		l, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + ChartBase.Release()})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if l == nil {
			return 0
		}
		return len(l.Items)
	}

	// Negative control first: a refusing guard writes nothing at all.
	g.refuse.Store(true)
	if err := inst.installChart(ctx, ChartBase, nil); !errors.Is(err, cluster.ErrClusterChanged) {
		t.Fatalf("install under a refusing guard: %v", err)
	}
	if n := releases(); n != 0 {
		t.Fatalf("%d release records written under a refusing guard", n)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s created under a refusing guard (err %v)", ns, err)
	}
	g.refuse.Store(false)

	if err := inst.installChart(ctx, ChartBase, nil); err != nil {
		t.Fatal(err)
	}
	if n := releases(); n != 1 {
		t.Fatalf("%d release records after install, want 1", n)
	}
	if rel, err := mustHelm(t, inst).Releases.Last(ChartBase.Release()); err != nil || rel.Labels[LabelManagedBy] != ManagedBy {
		t.Fatalf("installed release not marked as ours: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "istio-reader-service-account", metav1.GetOptions{}); err != nil {
		t.Errorf("base chart's service account missing: %v", err)
	}
	if err := inst.installChart(ctx, ChartBase, nil); err != nil {
		t.Fatalf("re-run (upgrade): %v", err)
	}
	if n := releases(); n != 2 {
		t.Errorf("%d release records after re-run, want 2 (install + upgrade)", n)
	}
	if err := inst.uninstallChart(ctx, ChartBase); err != nil {
		t.Fatal(err)
	}
	if n := releases(); n != 0 {
		t.Errorf("%d release records after uninstall", n)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "istio-reader-service-account", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service account survived uninstall: %v", err)
	}

	// Someone else's release of the same chart (installed with Helm, no
	// mark): Install refuses to upgrade it, and Uninstall leaves it.
	cfg, err := inst.helmConfig()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := inst.opts.Charts.Load(ChartBase, inst.opts.Version)
	if err != nil {
		t.Fatal(err)
	}
	theirs := action.NewInstall(cfg)
	theirs.ReleaseName, theirs.Namespace, theirs.TakeOwnership = ChartBase.Release(), ns, true
	if _, err := theirs.RunWithContext(ctx, ch, Values(ChartBase, inst.opts, nil)); err != nil {
		t.Fatal(err)
	}
	// The re-run above upgraded the suite's own release; this one is not
	// the suite's, so the same call refuses, writing nothing.
	if err := inst.Install(ctx); !errors.Is(err, ErrForeignIstio) || !strings.Contains(err.Error(), "istio-base") {
		t.Errorf("Install over someone else's release: %v, want ErrForeignIstio naming it", err)
	}
	if n := releases(); n != 1 {
		t.Errorf("%d release records after Install over someone else's release, want theirs alone (no upgrade)", n)
	}
	if err := inst.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	if n := releases(); n != 1 {
		t.Errorf("%d release records after Uninstall of someone else's release, want it kept", n)
	}
}

func TestVerifyVersionOnAPIServer(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-verify-test"
	inst, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Method: MethodSkip, Charts: ChartSource{RepoURL: DefaultRepoURL}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	// -istio-install=skip on a cluster without Istio must fail, not pass.
	if err := inst.Install(ctx); err == nil || !strings.Contains(err.Error(), "no istiod") {
		t.Fatalf("skip without istiod: %v", err)
	}
	newNamespace(t, cs, ns)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "istiod", Namespace: ns, Labels: map[string]string{"app": "istiod"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "istiod"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "istiod"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:1.30.1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := inst.Install(ctx); err == nil || !strings.Contains(err.Error(), "pilot:1.30.1") {
		t.Fatalf("istiod 1.30.1 accepted as %s: %v", DefaultVersion, err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = "docker.io/istio/pilot:" + DefaultVersion
	if _, err := cs.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := inst.Install(ctx); err != nil {
		t.Fatalf("istiod %s refused: %v", DefaultVersion, err)
	}
}

func TestGatewayCRDsAndWaypointOnAPIServer(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	g := &switchGuard{}
	inst, err := NewInstaller(srv.Config, g, Options{Profile: ProfileAmbient, Charts: ChartSource{RepoURL: DefaultRepoURL}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.InstallGatewayAPICRDs(ctx); err != nil {
		t.Fatal(err)
	}
	ns := "waypoint-test"
	newNamespace(t, cs, ns)
	gw := &gatewayv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "waypoint", Namespace: ns},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: WaypointClass,
			Listeners:        []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}},
		},
	}
	g.refuse.Store(true)
	if err := ApplyWaypoint(ctx, srv.Config, g, gw); !errors.Is(err, cluster.ErrClusterChanged) {
		t.Fatalf("waypoint under a refusing guard: %v", err)
	}
	nsObj, _ := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if _, ok := nsObj.Labels[UseWaypointLabel]; ok {
		t.Fatal("namespace enrolled under a refusing guard")
	}
	g.refuse.Store(false)
	if err := ApplyWaypoint(ctx, srv.Config, g, gw); err != nil {
		t.Fatal(err)
	}
	nsObj, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels[UseWaypointLabel] != "waypoint" || nsObj.Labels["keep"] != "me" {
		t.Errorf("namespace labels %v, want use-waypoint=waypoint added and the others kept", nsObj.Labels)
	}
	wrong := gw.DeepCopy()
	wrong.Spec.GatewayClassName = "istio"
	if err := ApplyWaypoint(ctx, srv.Config, g, wrong); err == nil || !strings.Contains(err.Error(), `"istio"`) {
		t.Errorf("gateway of class istio accepted as waypoint: %v", err)
	}
}

// A chart outside the profile is refused by name before anything is
// written: no namespace, no Gateway API CRDs. As the positive control, the
// same request in the ambient profile (which has ztunnel) gets past that
// check and creates the namespace.
func TestInstallChartsRefusesAChartOutsideItsProfile(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-charts-test"
	inst, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Method: MethodHelm, Charts: ChartSource{Dir: t.TempDir()}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	err = inst.InstallCharts(ctx, ChartZtunnel)
	if err == nil || !strings.Contains(err.Error(), "ztunnel") || !strings.Contains(err.Error(), "default") {
		t.Fatalf("ztunnel in the default profile: %v; want an error naming the chart and the profile", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s created by a refused install", ns)
	}
	if len(inst.GatewayCRDs.Applied) != 0 {
		t.Errorf("Gateway API CRDs written by a refused install: %+v", inst.GatewayCRDs)
	}

	ambient, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileAmbient, Method: MethodHelm, Charts: ChartSource{Dir: t.TempDir()}, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	// The charts directory is empty, so the install fails later, loading
	// the chart; the namespace shows it got past the profile check.
	if err := ambient.InstallCharts(ctx, ChartZtunnel); err == nil {
		t.Fatal("ztunnel installed from an empty charts directory")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("ambient profile: namespace %s not created: %v", ns, err)
	}
}
