package all

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocireg "github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Ctrl-C while the e2e binary is in its before-all: a real SIGINT to the
// suite as a user runs it (Ginkgo's interrupt handling and the suite's own,
// side by side), on -provider=existing against a real API server, once the
// workloads are applied and set-up waits for them. Everything the run
// created is deleted before the process exits.
//
// envtest runs no namespace controller, so this test finalizes the run's
// namespaces once the suite has deleted them (what the namespace controller
// does on a real cluster); it finalizes nothing the suite did not delete.
func TestCtrlCDuringSetUpDeletesWhatTheRunCreated(t *testing.T) {
	bin := e2eBinary(t)
	srv := apiserver.NewForTest(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "envtest"); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(ocireg.New(ocireg.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close) // after the e2e process is gone (cleanups run last first)
	const run = "ctrl-c"
	cmd := exec.Command(bin, "-mode=none", "-provider=existing", "-kubeconfig="+kc, "-context=envtest",
		"-image-registry="+strings.TrimPrefix(reg.URL, "http://"), "-results="+filepath.Join(dir, "results"), "-run-id="+run,
		"-ready-timeout=30m", "-ginkgo.v",
		// envtest runs no CNI: declared, so set-up gets as far as the workloads.
		"-netpol-enforcer=envtest (no pods run)")
	e2e := cleanuptest.Start(t, cmd, "e2e")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	go finalizeDeletedNamespaces(ctx, cs, run)

	opts := fixtures.Options{Run: run, Images: fixtures.Images{Workload: "x"}}
	objs, err := fixtures.ForMode(mode.None, opts)
	if err != nil {
		t.Fatal(err)
	}
	outside, _ := fixtures.OutsideSet(opts)
	objs = append(objs, outside...)
	c, err := client.New(srv.Config, client.Options{Scheme: apply.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	e2e.WaitForOutput(t, "workloads: waiting for", 20*time.Minute) // a cold cache builds the workload image
	if got := cleanuptest.Labelled(t, c, run, objs); len(got) != len(objs) {
		t.Fatalf("detector blind: %d of the run's %d objects found by label before Ctrl-C: %v", len(got), len(objs), got)
	}
	var ee *exec.ExitError
	if err := e2e.Interrupt(t, 10*time.Minute); !errors.As(err, &ee) {
		t.Errorf("an interrupted run exited %v, want a failure", err)
	}
	if got := cleanuptest.Labelled(t, c, run, objs); len(got) != 0 {
		t.Errorf("left behind after Ctrl-C: %v", got)
	}
	if !strings.Contains(e2e.Output(), "deleted what this run created") {
		t.Errorf("the suite's interrupt clean-up did not report success")
	}
}

// finalizeDeletedNamespaces plays envtest's missing namespace controller for
// the run's namespaces that are being deleted.
func finalizeDeletedNamespaces(ctx context.Context, cs kubernetes.Interface, run string) {
	for ctx.Err() == nil {
		l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fixtures.RunSelector(run)})
		if err == nil {
			for _, ns := range l.Items {
				if ns.DeletionTimestamp == nil || len(ns.Spec.Finalizers) == 0 {
					continue
				}
				ns.Spec.Finalizers = []corev1.FinalizerName{}
				_, _ = cs.CoreV1().Namespaces().Finalize(ctx, &ns, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
