package all

import (
	"context"
	"net"
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
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
)

// Bad input on the release-qualification path, run as a user runs it: the
// e2e binary with -provider=existing against a real API server (a cluster
// the suite did not create, holding an object of someone else's) and the
// CNCF distribution registry as the private registry (TLS under its own CA,
// basic auth, credentials from DOCKER_CONFIG's config.json). Each bad input
// fails the run non-zero with a message naming the bad value, before the
// workload image is built (so in seconds, not after a build) and before
// any cluster write: the inventory of every resource type is the same
// after as before. The positive control is the same command with the
// right inputs getting past the check to the build.
func TestExistingProviderBadInputFailsBeforeAnyWrite(t *testing.T) {
	bin := e2eBinary(t)
	reg := privateregistry.ForTest(t)
	srv := apiserver.NewForTest(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "qual"); err != nil {
		t.Fatal(err)
	}
	wrongCreds := filepath.Join(dir, "wrong")
	if err := reg.WriteDockerConfig(wrongCreds, reg.User, "not-"+reg.Password); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	ctx := t.Context()
	before, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, dockerConfig string, args ...string) (string, error) {
		t.Helper()
		args = append([]string{"-mode=none", "-provider=existing", "-kubeconfig=" + kc,
			"-results=" + filepath.Join(t.TempDir(), "results"), "-ginkgo.v"}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("exit %v after %v", err, time.Since(start).Round(time.Millisecond))
		return string(out), err
	}
	cases := []struct {
		name, dockerConfig string
		args               []string
		want               []string
	}{
		{"wrong registry password", wrongCreds, []string{"-context=qual", "-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile},
			[]string{`-image-registry="` + reg.Host + `"`, "refused the credentials", `user "meshclaims"`, "config.json"}},
		{"unreachable registry", reg.DockerConfigDir, []string{"-context=qual", "-image-registry=" + closed, "-image-registry-ca=" + reg.CAFile},
			[]string{`-image-registry="` + closed + `"`, "not reachable"}},
		{"registry CA not given", reg.DockerConfigDir, []string{"-context=qual", "-image-registry=" + reg.Host},
			[]string{"does not trust", "-image-registry-ca"}},
		{"context that does not exist", reg.DockerConfigDir, []string{"-context=qual-typo", "-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile},
			[]string{`context "qual-typo" does not exist`, `accepted: one of its contexts "qual"`}},
		// envtest's API server runs no CNI: no DaemonSet enforces NetworkPolicy.
		{"cluster without NetworkPolicy enforcement", reg.DockerConfigDir, []string{"-context=qual", "-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile},
			[]string{"need NetworkPolicy enforcement (netpol.app-port-only [none]", "this cluster shows no enforcer", "-netpol-enforcer=NAME", "Nothing was written",
				"clean-up: nothing to delete (no write phase began"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.dockerConfig, c.args...)
			if err == nil {
				t.Fatalf("the run passed; want a failure:\n%s", out)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "FAIL") || strings.Contains(l, "-image-registry=") || strings.Contains(l, "context") {
					t.Logf("| %s", strings.TrimSpace(l))
				}
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, lastLinesOf(out, 40))
				}
			}
			if strings.Contains(out, "image: building") {
				t.Errorf("the run built the workload image before failing:\n%s", lastLinesOf(out, 40))
			}
			if strings.Contains(out, reg.Password) {
				t.Errorf("output leaks the registry password")
			}
		})
	}
	after, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if d := inventory.Compare(before, after); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 {
		t.Errorf("the failed runs wrote to the cluster: added %v, removed %v, changed %v",
			inventory.Keys(d.Added), inventory.Keys(d.Removed), inventory.Keys(d.Changed))
	}
	if cat, err := reg.Catalog(ctx); err != nil || len(cat) != 0 {
		t.Errorf("registry after the failed runs: %v, %v; want empty", cat, err)
	}

	// Positive control: the same command with the right inputs passes the
	// registry check and goes on to build (stopped there: the build and
	// the rest are the full run's business, not this test's).
	// With a Calico DaemonSet in the cluster (as its manifest ships it) the
	// enforcer check passes too, and says what it found.
	t.Run("right inputs get past the check", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(srv.Config)
		calico := calicoDaemonSet()
		if _, err := cs.AppsV1().DaemonSets(calico.Namespace).Create(ctx, calico, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.AppsV1().DaemonSets(calico.Namespace).Delete(context.Background(), calico.Name, metav1.DeleteOptions{})
		})
		args := []string{"-mode=none", "-provider=existing", "-kubeconfig=" + kc, "-context=qual",
			"-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile,
			"-results=" + filepath.Join(t.TempDir(), "results"), "-ginkgo.v"}
		reachesBuild(t, bin, reg, args, "accepts pushes with the configured credentials",
			"NetworkPolicy enforcer: Calico (kube-system/calico-node[calico-node])")
	})
}

// calicoDaemonSet is calico-node as Calico's manifest ships it (the parts
// the enforcer lookup reads: its container and image).
func calicoDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": "calico-node"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-node"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "calico-node", Image: "docker.io/calico/node:v3.29.1"}}}},
		},
	}
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
