package all

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/fixtures/workload/orderclient"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/localk8s"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
	"github.com/meshclaims/meshclaims/framework/setup"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
)

// Release qualification on a cluster the suite did not create, as a user
// runs it: a local cluster brought up here (its node's containerd trusting
// the private registry's CA and holding its credentials, as a cluster
// owner configures nodes), already holding someone else's objects; then
// `e2e.test -provider=existing -kubeconfig -context -image-registry
// -image-registry-ca` with the credentials in DOCKER_CONFIG's config.json.
// The run must pass, and an inventory of every resource type before and
// after must show every foreign object unchanged (same UID and
// resourceVersion) and nothing of the run's left. The detector's negative
// control: an object carrying the run's label, left on purpose, is found.
//
// make e2e-local runs it as CI's none-mode run (MESHCLAIMS_EXISTING_RESULTS
// and _RUN_ID name the results, _SCALE the duration scale, default 0.05).
// MESHCLAIMS_EXISTING_MODES chooses the modes (default none); a meshed mode
// also needs make istio-images (MESHCLAIMS_ISTIO_IMAGES, MESHCLAIMS_ISTIO_CHARTS),
// whose archives are pushed to the registry. MESHCLAIMS_EXISTING_SIDECAR,
// a Ginkgo label filter, adds a second run on the same cluster before the
// after-inventory: the sidecar mode's specs it selects, Istio installed from
// the registry and removed (runSidecarOnExisting, with the istio-system
// clash first). Then the drift guard on the same
// path (checkDriftGuardOnRealPath; MESHCLAIMS_EXISTING_DRIFT=0 skips it).
func TestExistingProviderOnLocalCluster(tt *testing.T) {
	setuptest.RequireLocal(tt, "-provider=existing on a local cluster with a private registry")
	t := newFailureLog(tt)
	bin := e2eBinary(t)
	reg := privateregistry.ForTest(t)
	ctx := context.Background()

	k, err := localk8s.New(localk8s.Config{Name: "qual", Registries: []localk8s.NodeRegistry{{
		Host: reg.Host, CAFile: reg.CAFile, Username: reg.User, Password: reg.Password}}})
	if err != nil {
		t.Fatal(err)
	}
	k.Logf = t.Logf
	t.Cleanup(func() {
		if err := k.Delete(context.Background()); err != nil {
			t.Errorf("deleting the local cluster: %v", err)
		}
	})
	if err := k.Start(ctx); err != nil {
		t.Fatalf("local cluster: %v", err)
	}
	cs := kubernetes.NewForConfigOrDie(k.RESTConfig())
	seedForeignObjects(t, cs, k.RESTConfig())
	// With the sidecar runs, the cluster also runs someone's Istio from
	// before the first run to after the last (their_istio_local_test.go).
	sidecarFilter := os.Getenv("MESHCLAIMS_EXISTING_SIDECAR")
	var their *theirIstio
	var theirBefore theirState
	var theirCalls orderclient.Stats
	var rootCerts map[string]string
	if sidecarFilter != "" {
		their = seedTheirIstio(t, k.RESTConfig(), reg)
		theirBefore = their.snapshot(t)
		rootCerts = their.rootCerts(t)
		if theirCalls, err = their.clientStats(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("their Istio: %d objects watched; their client has made %d calls, %d failed", len(theirBefore), theirCalls.Sent, theirCalls.Failed)
	}
	regBefore, err := reg.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}

	before, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inventory before: %d objects of %d resource types", len(before.Objects), len(before.Resources))

	modes := os.Getenv("MESHCLAIMS_EXISTING_MODES")
	if modes == "" {
		modes = "none"
	}
	run := envOr("MESHCLAIMS_EXISTING_RUN_ID", "existing-qual")
	scale := envOr("MESHCLAIMS_EXISTING_SCALE", "0.05")
	results := os.Getenv("MESHCLAIMS_EXISTING_RESULTS")
	if results == "" {
		results = filepath.Join(t.TempDir(), "results")
	}
	// A run id names one run's directory; this test owns this one.
	for _, id := range []string{run, run + "-no-enforcer"} {
		if err := os.RemoveAll(filepath.Join(results, id)); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := clientcmd.LoadFromFile(k.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-mode=" + modes, "-provider=existing", "-kubeconfig=" + k.KubeconfigPath(), "-context=" + kc.CurrentContext,
		"-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile,
		"-duration-scale=" + scale, "-fail-on=error", "-results=" + results, "-run-id=" + run, "-ginkgo.v"}
	if modes != "none" {
		args = append(args, istioArchiveFlags(t)...)
	}
	// A run id of its own: the refused run still writes its results
	// directory (its report says why set-up stopped), which would hold the
	// run id the real run needs.
	refusedWithoutEnforcer(t, bin, append(slices.Clone(args), "-run-id="+run+"-no-enforcer"), reg, regBefore)
	// The local cluster's kube-router is a host process, not a DaemonSet:
	// declared, as a user of such a cluster declares it.
	args = append(args, localEnforcer)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
	var console bytes.Buffer
	out := io.MultiWriter(os.Stdout, &console)
	cmd.Stdout, cmd.Stderr = out, out
	t.Logf("running %s %s", bin, strings.Join(args, " "))
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("the run ended after %v: %v", time.Since(start).Round(time.Second), runErr)
	if runErr != nil {
		t.Errorf("-provider=existing run failed: %v", runErr)
	}
	if err := checkConsole(console.String(), consoleRun); err != nil {
		t.Errorf("the run's console output: %v", err)
	}
	if judged, err := junit.Check(filepath.Join(results, run, "junit.xml")); err != nil || judged == 0 {
		t.Errorf("the run's junit.xml shows %d verdicts: %v", judged, err)
	}
	checkRunInventory(t, filepath.Join(results, run))
	if sidecarFilter != "" {
		runSidecarOnExisting(t, bin, k, reg, kc.CurrentContext, results, run+"-sidecar", scale, sidecarFilter, their, rootCerts, &console)
		checkRunInventory(t, filepath.Join(results, run+"-sidecar"))
	}

	after, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := inventory.Compare(before, after)
	if len(d.Added) != 0 {
		t.Errorf("left by the run: %v", inventory.Keys(d.Added))
	}
	if len(d.Removed) != 0 {
		t.Errorf("foreign objects removed: %v", inventory.Keys(d.Removed))
	}
	// A foreign object's resourceVersion also moves when the cluster's own
	// components write it (the kubelet updating its pod's status): each
	// change is attributed by managedFields, and only a write by someone
	// other than the cluster's components counts as the run's.
	for _, o := range d.Changed {
		var others []string
		writers := o.WritersSince(before.TakenAt)
		for _, w := range writers {
			if !clusterComponents[w.Manager] {
				others = append(others, w.String())
			}
		}
		theirs, why := false, ""
		if their != nil && len(others) > 0 {
			theirs, why = their.theirWrite(ctx, o, rootCerts)
		}
		switch {
		case theirs:
			t.Logf("foreign object %s changed by their Istio: %s", o.Key(), why)
		case len(others) > 0:
			t.Errorf("foreign object %s written by %v", o.Key(), others)
		case len(writers) == 0:
			t.Errorf("foreign object %s changed with no writer recorded since the first inventory", o.Key())
		default:
			t.Logf("foreign object %s changed by the cluster itself: %v", o.Key(), writers)
		}
	}
	t.Logf("inventory after: %d objects; added %d, removed %d, changed %d", len(after.Objects), len(d.Added), len(d.Removed), len(d.Changed))
	if cat, err := reg.Catalog(ctx); err == nil {
		t.Logf("the registry holds what the run pushed (a user's registry keeps pushed images; the suite does not delete them): %v", cat)
	}

	// Negative control: an object of the run's, left on purpose, is reported.
	left := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left-on-purpose", Namespace: "team-payments",
		Labels: map[string]string{fixtures.LabelRun: run}}}
	if _, err := cs.CoreV1().ConfigMaps("team-payments").Create(ctx, left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := inventory.Keys(inventory.Compare(before, again).Added); !containsKey(got, "v1/configmaps team-payments/left-on-purpose") {
		t.Errorf("detector blind: an object left on purpose is not reported; added = %v", got)
	}
	if their != nil {
		// Their Istio after every run: unchanged, and their traffic flowed
		// the whole time.
		if d := diffTheirState(theirBefore, their.snapshot(t)); len(d) > 0 {
			t.Errorf("their Istio or workload changed: %v", d)
		}
		calls, err := their.clientStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p := clientProblems(theirCalls, calls); len(p) > 0 {
			t.Errorf("their traffic: %v; each failure and what the runs were doing then: %v", p, placeFailures(theirCalls, calls, console.String()))
		}
		t.Logf("their Istio unchanged (%d objects: releases' revisions, values and manifests, webhooks, Deployments, pods and restarts, namespaces' labels); "+
			"their client made %d calls during the runs, all %d answered, %d failed",
			len(theirBefore), calls.Sent-theirCalls.Sent, calls.Succeeded-theirCalls.Succeeded, calls.Failed-theirCalls.Failed)
	}
	if os.Getenv("MESHCLAIMS_EXISTING_DRIFT") != "0" {
		var theirs func(inventory.Object) (bool, string)
		if their != nil {
			theirs = func(o inventory.Object) (bool, string) { return their.theirWrite(ctx, o, rootCerts) }
		}
		checkDriftGuardOnRealPath(t, bin, k, reg, results, theirs)
	}
	if their != nil {
		their.negativeControls(t, theirBefore)
	}
}

// localEnforcer declares the local cluster's NetworkPolicy enforcer, which
// no DaemonSet shows (kube-router runs on the node as a host process).
const localEnforcer = "-netpol-enforcer=kube-router (host process)"

// refusedWithoutEnforcer runs args (which name no -netpol-enforcer) on the
// real path: the cluster shows no enforcer in its DaemonSets, so the run
// must stop before it builds, pushes or writes anything, saying so. The
// inventory compare at the end of the test covers the cluster; the
// registry must still be empty.
func refusedWithoutEnforcer(t testing.TB, bin string, args []string, reg *privateregistry.Registry, regBefore []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("the run without -netpol-enforcer ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatalf("the run passed on a cluster whose DaemonSets show no NetworkPolicy enforcer:\n%s", lastLinesOf(string(out), 40))
	}
	for _, w := range []string{"need NetworkPolicy enforcement", "this cluster shows no enforcer", "-netpol-enforcer=NAME", "Nothing was written"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("the refusal does not say %q:\n%s", w, lastLinesOf(string(out), 40))
		}
	}
	if strings.Contains(string(out), "image: building") {
		t.Errorf("the run built the workload image before refusing:\n%s", lastLinesOf(string(out), 40))
	}
	if cat, err := reg.Catalog(context.Background()); err != nil || !slices.Equal(cat, regBefore) {
		t.Errorf("registry after the refused run: %v, %v; want as before, %v", cat, err, regBefore)
	}
}

// seedForeignObjects gives the cluster what a real one holds before the
// suite arrives: a team's namespace with a running workload, its Service
// and a NetworkPolicy, and Gateway API CRDs of another bundle than the one
// Istio 1.30 is built against (seedForeignGatewayCRDs), none of them the
// suite's.
func seedForeignObjects(t testing.TB, cs kubernetes.Interface, rc *rest.Config) {
	t.Helper()
	ctx := context.Background()
	ns := "team-payments"
	labels := map[string]string{"app": "ledger"}
	one := int32(1)
	objs := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "ledger", Labels: labels},
				Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "ledger", Image: localk8s.SandboxImage, ImagePullPolicy: corev1.PullNever}}}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ledger"},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ledger-ingress"},
				Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: labels},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, f := range objs {
		if err := f(); err != nil {
			t.Fatalf("seeding foreign objects: %v", err)
		}
	}
	seedForeignGatewayCRDs(t, rc)
	awaitNamespaceFilled(t, cs, ns)
	// The foreign workload must be running before the inventory is taken,
	// or its pods' arrival would read as a change the run made.
	if _, err := converge.Until(ctx, converge.Policy{Poll: time.Second, Times: 1, Limit: 3 * time.Minute}, "the foreign workload ledger available",
		func(ctx context.Context) (bool, string, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "ledger", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", d.Status.AvailableReplicas), nil
		}); err != nil {
		t.Fatal(err)
	}
}

func istioArchiveFlags(t testing.TB) []string {
	t.Helper()
	archives, charts := setuptest.IstioImages(t)
	v := setuptest.IstioVersion(t)
	return []string{"-istio-version=" + v, "-istio-tag=" + v, "-image-archives=" + archives, "-istio-charts=" + charts}
}

// clusterComponents are the field managers of the cluster's own control
// plane and node, which keep writing objects whoever else runs.
var clusterComponents = map[string]bool{"kubelet": true, "kube-controller-manager": true, "kube-scheduler": true, "kube-apiserver": true}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// checkRunInventory reads the proof a run on -provider=existing keeps in
// its results directory: both inventories, what differs and who wrote it,
// and the report's summary of it, which must say that no foreign object was
// changed by the run and none of its own was left.
func checkRunInventory(t testing.TB, dir string) {
	t.Helper()
	for _, f := range []string{setup.InventoryBeforeFile, setup.InventoryAfterFile, setup.InventoryChangesFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run's results lack %s: %v", f, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, setup.InventoryChangesFile))
	if err != nil {
		return
	}
	var c inventory.Changes
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Errorf("%s: %v", setup.InventoryChangesFile, err)
		return
	}
	// Added at all, not only by the run's hand: a pod the cluster's
	// controllers made for a Deployment of the run's, still terminating
	// when the run ended, is the run's too.
	if n := len(c.ChangedByOthers()) + len(c.Removed) + len(c.Added); n != 0 {
		t.Errorf("the run's own inventory: %s; added %v", c.Summary(), c.Added)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "0 foreign objects changed by others than the cluster's own components") || !strings.Contains(string(md), "0 of the run's left") {
		t.Errorf("report.md does not state the inventory's summary (%v)", err)
	}
	t.Logf("%s: %s", filepath.Base(dir), c.Summary())
}
