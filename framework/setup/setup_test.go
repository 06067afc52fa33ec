package setup

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// The workload image is built for the nodes' architecture (GUIDE's EKS nodes
// are arm64), on a real API server with Node objects.
func TestNodeArch(t *testing.T) {
	srv := apiserver.NewForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if a, err := nodeArch(ctx, k); err != nil || a != runtime.GOARCH {
		t.Fatalf("no nodes: %q, %v; want the host's %s", a, err, runtime.GOARCH)
	}
	addNode := func(name, arch string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n, err := k.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.NodeInfo.Architecture = arch
		if _, err := k.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addNode("m7g-1", "arm64")
	addNode("m7g-2", "arm64")
	if a, err := nodeArch(ctx, k); err != nil || a != "arm64" {
		t.Fatalf("arm64 nodes: %q, %v", a, err)
	}
	addNode("x86-1", "amd64")
	if _, err := nodeArch(ctx, k); err == nil || !strings.Contains(err.Error(), "different architectures") {
		t.Fatalf("mixed nodes accepted: %v", err)
	}
}

func TestModesAlwaysIncludeTheBaseline(t *testing.T) {
	got := Modes([]mode.Mode{mode.AmbientL4})
	if len(got) != 2 || got[0] != mode.None || got[1] != mode.AmbientL4 {
		t.Fatalf("Modes = %v", got)
	}
	if got := Modes([]mode.Mode{mode.None}); len(got) != 1 {
		t.Fatalf("Modes(none) = %v", got)
	}
}

func TestCheckIstioRef(t *testing.T) {
	for _, ok := range []string{"localhost/istio/pilot:1.30.3-dev", "localhost/istio/proxyv2:1.30.3-dev-distroless", "meshclaims/workload:dev", "localhost/other/coredns:v1"} {
		if err := checkIstioRef(ok, "localhost/istio", "1.30.3-dev"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// Negative controls: an Istio image under another hub or tag.
	for bad, hint := range map[string]string{
		"docker.io/istio/pilot:1.30.3-dev":       "-istio-hub=docker.io/istio",
		"localhost/istio/install-cni:1.30.2":     "-istio-tag=1.30.2",
		"localhost/istio/pilot:1.30.3-devel":     "-istio-tag=1.30.3-devel",
		"registry.example.com:5000/pilot:1.30.3": "-istio-hub=registry.example.com:5000",
	} {
		err := checkIstioRef(bad, "localhost/istio", "1.30.3-dev")
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("%s: %v, want an error suggesting %s", bad, err, hint)
		}
	}
}

// The set-up's phases run in this order under these names (the console's
// "set-up: <phase> ..."); Istio's only where a selected mode is meshed,
// after the refusal of sidecar mode on a local node without the proxy
// image; and the phase that fails is the last one announced.
func TestSetUpPhases(t *testing.T) {
	u := &upRun{Suite: &Suite{Cfg: &config.Config{Modes: []mode.Mode{mode.None}}, out: io.Discard}}
	var names []string
	for _, p := range u.phases() {
		names = append(names, p.name)
	}
	if got, want := strings.Join(names, ", "), "results directory and checks, cluster, workload image, istio, workloads"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	if ok, err := u.istioNeeded(); ok || err != nil {
		t.Errorf("mode none: Istio needed %v, %v", ok, err)
	}
	u.Cfg.Modes, u.Cfg.Provider = []mode.Mode{mode.Sidecar}, cluster.ExistingName
	if ok, err := u.istioNeeded(); !ok || err != nil || u.profile != istio.ProfileDefault {
		t.Errorf("sidecar: Istio needed %v, %v, profile %q", ok, err, u.profile)
	}
	u.Cfg.Provider = cluster.LocalName
	if ok, err := u.istioNeeded(); ok || err == nil || !strings.Contains(err.Error(), "proxy image") {
		t.Errorf("sidecar on the local node without the proxy image: %v, %v", ok, err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var announced []string
	s := &Suite{Cfg: &config.Config{ResultsDir: filepath.Join(file, "results"), Modes: []mode.Mode{mode.None}}, out: io.Discard,
		Phase: func(name string) { announced = append(announced, name) }}
	if err := s.up(context.Background()); err == nil {
		t.Fatal("a results directory under a file was accepted")
	}
	if strings.Join(announced, ", ") != "results directory and checks" {
		t.Errorf("announced %q before the failure", announced)
	}
}
