package all

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/cluster"
)

// The real path's clean-up on Ctrl-C: `go test ./e2e -provider=kind` on
// Podman, as a user runs it, interrupted by a SIGINT to its process group
// (what a terminal's Ctrl-C sends) while kind is creating the cluster
// and while a spec is measuring. Afterwards the host must hold no
// container, network, volume or image, iptables rule, mount or cgroup
// that was not there before (cluster.SnapshotHost). The check's positive
// control is the same snapshot taken just before the SIGINT: the run's
// containers, volumes, iptables rules and mounts must show up in it, or
// the check could not have seen them left behind.
//
// MESHCLAIMS_KIND=1 (root, make kind-deps, make kind-node-image, the
// machine's cluster lock) and MESHCLAIMS_KIND_NODE_IMAGE; make
// kind-interrupt-test sets both.
func TestCtrlCOnKindLeavesNothingOnTheHost(t *testing.T) {
	if os.Getenv("MESHCLAIMS_KIND") != "1" {
		t.Skip("MESHCLAIMS_KIND=1 not set: this test creates kind clusters on Podman (root, make kind-deps, make kind-node-image, hold /tmp/meshclaims-cluster.lock)")
	}
	nodeImage := os.Getenv("MESHCLAIMS_KIND_NODE_IMAGE")
	if nodeImage == "" {
		t.Fatal("MESHCLAIMS_KIND=1 needs MESHCLAIMS_KIND_NODE_IMAGE, the node image to run (make kind-node-image loads localhost/kindest/node:v1.36.3-meshclaims)")
	}
	root := repoRoot()
	if os.Getenv("CONTAINERS_CONF") == "" {
		t.Setenv("CONTAINERS_CONF", filepath.Join(root, "hack", "kind", "containers.conf"))
	}
	t.Setenv(cluster.KindProviderEnv, "podman")
	// Built once before the first run, so the SIGINT never lands in a
	// compile and the first case's time goes to the cluster.
	build := exec.Command("go", "test", "-c", "-o", os.DevNull, "./e2e")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ./e2e: %v\n%s", err, out)
	}

	const clusterName = "meshclaims-ctrlc"
	for _, c := range []struct {
		name string
		// at is the output after which the SIGINT is sent; notYet, output
		// that must not have come by then (it would mean the point passed).
		at, notYet *regexp.Regexp
	}{
		// kubeadm init on the control plane: every node container exists,
		// the cluster is not up.
		{"during cluster creation", regexp.MustCompile(`Starting control-plane`), regexp.MustCompile(`Ready after|\] cluster: kind v`)},
		// A spec's own progress line ("[claim none +3s] ..."): set-up is
		// done and a measurement is running.
		{"during a spec", regexp.MustCompile(`\[[a-z0-9.-]+ none \+[0-9]+s\]`), regexp.MustCompile(`meshclaims: interrupt|Ran [0-9]+ of`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			before, err := cluster.SnapshotHost(ctx, "podman")
			if err != nil {
				t.Fatal(err)
			}
			// The safety net, after the check: if the test fails before
			// the run cleaned up (and cleanuptest kills the process), the
			// cluster and what its creation added go anyway. Registered
			// before Start, so it runs after the kill.
			guard := cluster.GuardKindHost(ctx, "podman")
			t.Cleanup(func() {
				if err := guard.DeleteCluster(context.Background(), clusterName); err != nil {
					t.Errorf("removing what the run left: %v", err)
				}
			})
			results := t.TempDir()
			cmd := exec.Command("go", "test", "./e2e", "-count=1", "-v", "-timeout=30m",
				"-mode=none", "-provider=kind", "-kind-config="+filepath.Join(root, "testdata", "kind", "podman.yaml"),
				"-kind-node-image="+nodeImage, "-cluster-name="+clusterName, "-duration-scale=0.05",
				"-results="+results, "-run-id=ctrl-c", "-ginkgo.v")
			cmd.Dir = root
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			run := cleanuptest.Start(t, cmd, "go test ./e2e")
			run.WaitForMatch(t, c.at, 20*time.Minute)
			if loc := c.notYet.FindStringIndex(run.Output()); loc != nil {
				t.Fatalf("the run had already passed the point to interrupt (%q) when %q came", run.Output()[loc[0]:loc[1]], c.at)
			}
			during, err := cluster.SnapshotHost(ctx, "podman")
			if err != nil {
				t.Fatal(err)
			}
			added := during.Since(before)
			t.Logf("what the run had added to the host when interrupted:\n%s", cluster.FormatLeftovers(added))
			for _, want := range []string{"containers", "volumes", "iptables rules", "mounts"} {
				if len(added[want]) == 0 {
					t.Errorf("positive control: the check sees no %s added by the running cluster, so it could not see them left behind", want)
				}
			}
			start := time.Now()
			var ee *exec.ExitError
			if err := run.InterruptGroup(t, 10*time.Minute); !errors.As(err, &ee) {
				t.Errorf("an interrupted run exited %v, want a failure", err)
			}
			t.Logf("the run exited %.0f s after the SIGINT", time.Since(start).Seconds())
			if !strings.Contains(run.Output(), "deleted what this run created") {
				t.Errorf("the suite's interrupt clean-up did not report success")
			}
			after, err := cluster.SnapshotHost(context.Background(), "podman")
			if err != nil {
				t.Fatal(err)
			}
			if left := after.Since(before); len(left) > 0 {
				t.Errorf("after Ctrl-C %s the run left on the host:\n%s", c.name, cluster.FormatLeftovers(left))
			} else {
				t.Logf("after Ctrl-C %s: no container, network, volume, image, iptables rule, mount or cgroup of the run is left", c.name)
			}
		})
	}
}
