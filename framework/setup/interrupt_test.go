package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
)

// envInterruptChild, set to a kubeconfig path, turns this test binary into
// the run that gets interrupted (see TestInterruptDuringUpDeletesWhatTheRunCreated).
const (
	envInterruptChild   = "MESHCLAIMS_SETUP_INTERRUPT_KUBECONFIG"
	envInterruptResults = "MESHCLAIMS_SETUP_INTERRUPT_RESULTS"
	envInterruptRun     = "MESHCLAIMS_SETUP_INTERRUPT_RUN"
)

// Exit codes of the interrupted child.
const (
	childTornDown     = 130 // the shell's code for "ended by SIGINT": clean-up done
	childCleanupError = 1
	childNoSignal     = 3 // Up ended by itself: the test did not interrupt set-up
)

func TestMain(m *testing.M) {
	if kc := os.Getenv(envInterruptChild); kc != "" {
		os.Exit(interruptedRun(kc, os.Getenv(envInterruptResults), os.Getenv(envInterruptRun)))
	}
	os.Exit(apiserver.RunTests(m))
}

// interruptedRun is a run as e2e wires it (Suite published before Up, its
// teardown on cleanup.Interrupts) against the parent's API server, through
// -provider=existing, pushing its image to a registry of its own. Up blocks
// waiting for Deployments no kubelet will ever start, until the parent's
// SIGINT arrives.
func interruptedRun(kubeconfig, results, run string) int {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	root, err := repo.Root()
	if err != nil {
		fmt.Println("child:", err)
		return childCleanupError
	}
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	cfg := config.Register(fs)
	if err := fs.Parse([]string{"-mode=none", "-provider=existing", "-kubeconfig=" + kubeconfig, "-context=envtest",
		"-image-registry=" + strings.TrimPrefix(reg.URL, "http://"), "-results=" + results, "-run-id=" + run,
		"-ready-timeout=30m"}); err != nil {
		fmt.Println("child:", err)
		return childCleanupError
	}
	if err := cfg.Validate(root, time.Now()); err != nil {
		fmt.Println("child:", err)
		return childCleanupError
	}
	claimsReg, err := claims.Load(cfg.ClaimsFile)
	if err != nil {
		fmt.Println("child:", err)
		return childCleanupError
	}
	s := New(cfg, claimsReg, os.Stdout)
	s.TerminatingNamespaceIsGone = true // envtest: no namespace controller
	sigs, unsubscribe := cleanup.Interrupts()
	defer unsubscribe()
	torn := make(chan error, 1)
	stop := s.TearDownOn(sigs, func(sig os.Signal, err error) {
		fmt.Printf("child: %v: teardown finished: %v\n", sig, err)
		torn <- err
	})
	defer stop()
	upErr := s.Up(context.Background())
	fmt.Printf("child: Up returned: %v\n", upErr)
	s.Wait() // as e2e's TestMain: an interrupt's teardown finishes before exit
	select {
	case err := <-torn:
		if err != nil {
			return childCleanupError
		}
		return childTornDown
	default:
		return childNoSignal
	}
}

// Ctrl-C in the middle of Up: a real SIGINT to a process running set-up
// against a real API server, sent once the workloads are applied and Up is
// waiting for them. Everything the run created is deleted and the process
// exits 130 after its clean-up, not before.
func TestInterruptDuringUpDeletesWhatTheRunCreated(t *testing.T) {
	srv := apiserver.ForTest(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "envtest"); err != nil {
		t.Fatal(err)
	}
	const run = "interrupted-setup"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envInterruptChild+"="+kc, envInterruptResults+"="+filepath.Join(dir, "results"), envInterruptRun+"="+run)
	child := cleanuptest.Start(t, cmd, "child")

	// The run's objects, listed by label independently of the cleaner.
	objs, err := fixtures.ForMode(mode.None, fixtures.Options{Run: run, Images: fixtures.Images{Workload: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	outside, _ := fixtures.OutsideSet(fixtures.Options{Run: run, Images: fixtures.Images{Workload: "x"}})
	objs = append(objs, outside...)
	c, err := client.New(srv.Config, client.Options{Scheme: apply.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	left := func() []string { return cleanuptest.Left(t, c, run, objs) }

	// Wait until Up is waiting for the workloads (its own log line, written
	// after the apply), bounded by the image build a cold cache needs.
	child.WaitForOutput(t, "workloads: waiting for", 20*time.Minute)
	if got := left(); len(got) != len(objs) {
		t.Fatalf("detector blind: %d of the run's %d objects found by label before the interrupt: %v", len(got), len(objs), got)
	}
	var exitErr *exec.ExitError
	if err := child.Interrupt(t, 10*time.Minute); !errors.As(err, &exitErr) || exitErr.ExitCode() != childTornDown {
		t.Fatalf("child exit %v, want %d (torn down after the interrupt)", err, childTornDown)
	}
	if got := left(); len(got) != 0 {
		t.Errorf("left behind after Ctrl-C: %v", got)
	}
	if !regexp.MustCompile(`Up returned: set-up stopped: tear-down started`).MatchString(child.Output()) {
		t.Errorf("Up was not stopped before the clean-up")
	}
}
