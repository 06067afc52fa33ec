package all

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/localk8s"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
)

// driftMarker is the set-up's last line before the specs run (setup.go
// logs it once a mode's echo is ready): after it the next write is a
// spec's.
const driftMarker = "workloads: echo in "

// checkDriftGuardOnRealPath is GUIDE's test-isolation incident on the real
// path: a run that follows the kubeconfig's current context (no -context,
// as a workstation user runs it) has that context switched to another
// cluster once its set-up is done. The next write must not happen: the run
// fails naming the change, and no object on the cluster it started on is
// written, created or deleted by anyone but the cluster's own components
// after the switch (what the run made is left in place: cleaning it up is a
// write too, and the guard cannot tell which cluster it would land on).
func checkDriftGuardOnRealPath(t testing.TB, bin string, k *localk8s.Cluster, reg *privateregistry.Registry, results string, theirs func(inventory.Object) (bool, string)) {
	t.Helper()
	ctx := context.Background()
	kc, err := clientcmd.LoadFromFile(k.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	// Another cluster in the same kubeconfig: its server is never dialled,
	// the guard compares the server the current context resolves to.
	kc.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	kc.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: kc.Contexts[kc.CurrentContext].AuthInfo}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	run := "existing-drift"
	if err := os.RemoveAll(filepath.Join(results, run)); err != nil {
		t.Fatal(err)
	}
	args := []string{"-mode=none", "-provider=existing", "-kubeconfig=" + path,
		"-image-registry=" + reg.Host, "-image-registry-ca=" + reg.CAFile, "-duration-scale=0.05",
		"-fail-on=error", "-results=" + results, "-run-id=" + run,
		"-ginkgo.v", "-ginkgo.label-filter=claim:netpol.app-port-only", localEnforcer}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	t.Logf("drift run: %s %s", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		switchAt time.Time
		atSwitch *inventory.Snapshot
		text     strings.Builder
	)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		text.WriteString(line + "\n")
		io.WriteString(os.Stdout, line+"\n")
		if switchAt.IsZero() && strings.Contains(line, driftMarker) {
			kc.CurrentContext = "elsewhere"
			if err := clientcmd.WriteToFile(*kc, path); err != nil {
				t.Fatal(err)
			}
			switchAt = time.Now()
			t.Logf("switched the kubeconfig's current context to elsewhere at %s", switchAt.UTC().Format(time.RFC3339Nano))
			if atSwitch, err = inventory.Take(ctx, k.RESTConfig()); err != nil {
				t.Fatal(err)
			}
		}
	}
	runErr := cmd.Wait()
	if switchAt.IsZero() {
		t.Fatalf("the run never printed %q (exit %v): the context was never switched", driftMarker, runErr)
	}
	if runErr == nil {
		t.Errorf("the run passed after its kubeconfig's context was switched to another cluster")
	}
	if !strings.Contains(text.String(), "cluster identity changed since the run started") || !strings.Contains(text.String(), "https://127.0.0.1:1") {
		t.Errorf("the run's output does not name the change (cluster identity changed ... https://127.0.0.1:1)")
	}
	after, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Someone's Istio on the cluster keeps renewing its own locks; those
	// writes are theirs, told apart as the main test tells them.
	if theirs != nil {
		for key, o := range after.Objects {
			if b, had := atSwitch.Objects[key]; had && b.ResourceVersion != o.ResourceVersion {
				if ok, why := theirs(o); ok {
					t.Logf("changed by their Istio after the switch: %s (%s)", key, why)
					after.Objects[key] = b
				}
			}
		}
	}
	if w := writesAfter(atSwitch, after, switchAt); len(w) > 0 {
		t.Errorf("written after the switch: %v", w)
	}
	// Negative control: a write of ours after the switch is reported.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-after-switch", Namespace: "team-payments"}}
	if _, err := kubernetes.NewForConfigOrDie(k.RESTConfig()).CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := inventory.Take(ctx, k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if w := writesAfter(atSwitch, again, switchAt); !strings.Contains(strings.Join(w, " "), "team-payments/written-after-switch") {
		t.Errorf("detector blind: a ConfigMap created after the switch is not reported (%v)", w)
	}
	d := inventory.Compare(atSwitch, after)
	t.Logf("after the switch: added %d, removed %d, changed %d objects; the run's own objects stay on the cluster it started on", len(d.Added), len(d.Removed), len(d.Changed))
}

// writesAfter lists the objects anyone but the cluster's own components
// created (or that appeared with no writer recorded), changed or deleted
// between the two snapshots, at or after the
// second following at (managedFields keep whole seconds, and the set-up's
// last write may share the switch's second).
func writesAfter(before, after *inventory.Snapshot, at time.Time) []string {
	var out []string
	d := inventory.Compare(before, after)
	for _, k := range inventory.Keys(d.Removed) {
		out = append(out, "deleted "+k)
	}
	since := at.Truncate(time.Second).Add(time.Second)
	for _, o := range d.Changed {
		for _, w := range o.WritersSince(since) {
			if !clusterComponents[w.Manager] {
				out = append(out, o.Key()+" by "+w.String())
			}
		}
	}
	for _, o := range d.Added {
		// The API server records no managedFields entry for an object
		// created with no fields beyond its name (an empty ConfigMap):
		// a new object nobody is recorded as writing is reported too.
		if len(o.Writers) == 0 {
			out = append(out, "created "+o.Key()+" (no writer recorded)")
		}
		for _, w := range o.Writers {
			if !clusterComponents[w.Manager] {
				out = append(out, "created "+o.Key()+" by "+w.String())
			}
		}
	}
	return out
}
