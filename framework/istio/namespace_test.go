package istio

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// A cluster without Istio's namespace: Install makes it, marked as ours,
// and Uninstall deletes it; under a refusing guard nothing is created or
// deleted.
func TestIstioNamespaceMadeAndRemovedByTheRun(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-ns-ours"
	g := &switchGuard{}
	inst, err := NewInstaller(srv.Config, g, Options{Profile: ProfileDefault, Charts: ChartSource{RepoURL: DefaultRepoURL},
		Namespace: ns, TerminatingNamespaceIsGone: true})
	if err != nil {
		t.Fatal(err)
	}
	g.refuse.Store(true)
	if err := inst.ensureNamespace(ctx, []Chart{ChartBase}); err == nil {
		t.Fatal("namespace made under a refusing guard")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s exists after a refused create (err %v)", ns, err)
	}
	g.refuse.Store(false)
	if err := inst.ensureNamespace(ctx, []Chart{ChartBase}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels[LabelManagedBy] != ManagedBy {
		t.Fatalf("namespace %s: %v, labels %v", ns, err, got.GetLabels())
	}
	// A re-run on a kept cluster finds it as its own.
	if err := inst.ensureNamespace(ctx, []Chart{ChartBase}); err != nil {
		t.Fatalf("second ensure on our own namespace: %v", err)
	}
	g.refuse.Store(true)
	if err := inst.uninstallNamespace(ctx); err == nil {
		t.Fatal("namespace deleted under a refusing guard")
	}
	if got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("namespace %s going after a refused delete (err %v)", ns, err)
	}
	g.refuse.Store(false)
	if err := inst.uninstallNamespace(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && got.DeletionTimestamp == nil {
		t.Fatalf("namespace %s survived Uninstall", ns)
	}
}

// An istio-system of someone else's (no mark, no Istio release in it):
// Install stops before its first write, naming the namespace and what to
// do; the namespace is untouched, no Gateway API CRD is applied, and
// Uninstall leaves it.
func TestForeignIstioNamespaceStopsInstallBeforeAnyWrite(t *testing.T) {
	srv := apiserver.NewForTestWith(t, apiserver.Options{NoGatewayCRDs: true})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-system"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"team": "platform"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Charts: ChartSource{RepoURL: DefaultRepoURL},
		TerminatingNamespaceIsGone: true})
	if err != nil {
		t.Fatal(err)
	}
	err = inst.Install(ctx)
	if !errors.Is(err, ErrForeignNamespace) {
		t.Fatalf("Install into a foreign istio-system: %v, want ErrForeignNamespace", err)
	}
	for _, want := range []string{"istio-system", LabelManagedBy, "Nothing was written", "-istio-install=skip"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdGVR).Get(ctx, gatewaysCRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Gateway API CRDs applied before the namespace was refused (err %v)", err)
	}
	if err := inst.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || after.DeletionTimestamp != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the foreign namespace was touched: err %v, resourceVersion %s -> %s", err, before.ResourceVersion, after.GetResourceVersion())
	}
}

// Someone's Istio in its own istio-system (a Helm release there, no mark on
// the namespace): the namespace is accepted (installChart and the set-up's
// look for a foreign Istio are what refuse the release), and Uninstall
// leaves the namespace.
func TestIstioNamespaceWithSomeonesReleaseIsUsed(t *testing.T) {
	dir := chartsDir(t)
	srv := apiserver.NewForTest(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns := "istio-theirs"
	newNamespace(t, cs, ns)
	inst, err := NewInstaller(srv.Config, &switchGuard{}, Options{Profile: ProfileDefault, Charts: ChartSource{Dir: dir},
		Namespace: ns, TerminatingNamespaceIsGone: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.ensureNamespace(ctx, []Chart{ChartBase}); !errors.Is(err, ErrForeignNamespace) {
		t.Fatalf("before their release exists: %v, want ErrForeignNamespace", err)
	}
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
	if err := inst.ensureNamespace(ctx, []Chart{ChartBase}); err != nil {
		t.Fatalf("with their release in it: %v", err)
	}
	if err := inst.uninstallNamespace(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("their namespace was deleted (err %v)", err)
	}
}
