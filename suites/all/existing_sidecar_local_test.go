package all

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/localk8s"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
)

// foreignGatewayAPIModule is the Gateway API bundle the seeded cluster
// already runs: the module the suite's Go types come from (go.mod), a
// release other than the v1.5.1 Istio 1.30 is built against, as on a
// cluster whose owner upgraded Gateway API ahead of Istio.
const foreignGatewayAPIModule = "sigs.k8s.io/gateway-api"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// seedForeignGatewayCRDs creates that bundle's standard-channel CRDs, as
// its release files carry them (bundle-version annotation, no mark of the
// suite's).
func seedForeignGatewayCRDs(t testing.TB, rc *rest.Config) {
	t.Helper()
	dir, err := apiserver.ModuleDir(foreignGatewayAPIModule)
	if err != nil {
		t.Fatalf("the foreign Gateway API bundle: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "standard", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under %s (%v)", dir, err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	var version string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if u.GetKind() != "CustomResourceDefinition" {
				continue
			}
			version = u.GetAnnotations()[istio.BundleVersionAnnotation]
			if _, err := dyn.Resource(crdResource).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("seeding CRD %s: %v", u.GetName(), err)
			}
		}
	}
	if version == "" || version == istio.GatewayAPIVersion {
		t.Fatalf("the seeded Gateway API bundle is %q; the test needs one other than %s", version, istio.GatewayAPIVersion)
	}
	t.Logf("foreign Gateway API CRDs: bundle %s (Istio 1.30 is built against %s)", version, istio.GatewayAPIVersion)
}

// runSidecarOnExisting runs the sidecar mode's specs that filter selects on
// the cluster the none run just used, as a second invocation of a release
// qualification, on a cluster that runs someone's Istio (their, seeded by
// seedTheirIstio): Istio's images pushed to the private registry and
// pulled by the node, the qualified Istio installed as a revision beside
// theirs (-istio-revision) among the foreign objects (its Gateway API CRDs
// left as they are) and removed afterwards. The caller's after-inventory
// and their-Istio checks then cover both runs. console receives all both
// runs print.
//
// First the run a user makes without knowing their Istio is there: it must
// stop before its first write, naming their Istio and the ways on, and
// leave nothing (inventories before and after that attempt, compared; a
// change their own istiod made meanwhile is told apart by theirWrite).
func runSidecarOnExisting(t testing.TB, bin string, k *localk8s.Cluster, reg *privateregistry.Registry, kubeContext, results, run, scale, filter string,
	their *theirIstio, rootCerts map[string]string, console io.Writer) {
	t.Helper()
	ctx := context.Background()
	args := func(id string, extra ...string) []string {
		return append(append([]string{"-mode=sidecar", "-provider=existing", "-kubeconfig=" + k.KubeconfigPath(), "-context=" + kubeContext,
			"-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile,
			"-duration-scale=" + scale, "-fail-on=requirement", "-results=" + results, "-run-id=" + id,
			"-ginkgo.v", "-ginkgo.label-filter=" + filter, localEnforcer}, istioArchiveFlags(t)...), extra...)
	}
	exe := func(a []string, id string, out io.Writer) error {
		if err := os.RemoveAll(filepath.Join(results, id)); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, a...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
		cmd.Stdout, cmd.Stderr = out, out
		t.Logf("running %s %s", bin, strings.Join(a, " "))
		start := time.Now()
		err := cmd.Run()
		t.Logf("the run %s ended after %v: %v", id, time.Since(start).Round(time.Second), err)
		return err
	}

	// The default run, refused.
	before, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	refusedErr := exe(args(run+"-refused"), run+"-refused", io.MultiWriter(os.Stdout, &out, console))
	if refusedErr == nil {
		t.Errorf("the sidecar run passed over their Istio")
	}
	for _, w := range []string{"an Istio the run did not install runs on this cluster", "Helm release istio-system/istiod (chart istiod",
		"Deployment istio-system/istiod (Istio revision default", "-istio-revision=NAME", "-istio-install=skip", "Nothing was written"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the refusal does not say %q", w)
		}
	}
	if strings.Contains(out.String(), "image: building") {
		t.Errorf("the refused run built the workload image")
	}
	after, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := inventory.Compare(before, after)
	if len(d.Removed) != 0 {
		t.Errorf("the refused run removed %v", inventory.Keys(d.Removed))
	}
	// An object the cluster's own controllers added meanwhile is theirs;
	// one with any other writer, or none recorded, is the run's.
	for _, o := range d.Added {
		writers := o.WritersSince(time.Time{})
		ours := len(writers) == 0
		for _, w := range writers {
			if !clusterComponents[w.Manager] {
				ours = true
			}
		}
		if ours {
			t.Errorf("the refused run added %s (writers %v)", o.Key(), writers)
		} else {
			t.Logf("added by the cluster itself while the refused run ran: %s %v", o.Key(), writers)
		}
	}
	for _, o := range d.Changed {
		for _, w := range o.WritersSince(before.TakenAt) {
			if clusterComponents[w.Manager] {
				continue
			}
			if ok, why := their.theirWrite(ctx, o, rootCerts); ok {
				t.Logf("changed by their Istio while the refused run ran: %s (%s)", o.Key(), why)
				continue
			}
			t.Errorf("the refused run wrote %s (%v)", o.Key(), w)
		}
	}

	// The qualification, beside their Istio.
	if err := exe(args(run, "-istio-revision="+existingRevision), run, io.MultiWriter(os.Stdout, console)); err != nil {
		t.Errorf("-provider=existing -mode=sidecar -istio-revision=%s run failed: %v", existingRevision, err)
	}
}

// awaitNamespaceFilled waits (1 min at most) until kube-controller-manager
// has given namespace ns its default ServiceAccount and kube-root-ca.crt.
func awaitNamespaceFilled(t testing.TB, cs kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := converge.Until(context.Background(), converge.Policy{Poll: 200 * time.Millisecond, Times: 1, Limit: time.Minute},
		"namespace "+ns+" holds what the cluster adds to every namespace (ServiceAccount default, ConfigMap kube-root-ca.crt)",
		func(ctx context.Context) (bool, string, error) {
			if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return false, "no ServiceAccount default", err
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
				return false, "no ConfigMap kube-root-ca.crt", err
			}
			return true, "both", nil
		}); err != nil {
		t.Fatal(err)
	}
}
