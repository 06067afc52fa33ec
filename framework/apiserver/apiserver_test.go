package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMain(m *testing.M) { os.Exit(RunTests(m)) }

// TestServesMeshCRDs proves the CRDs a fixture needs are installed and served.
func TestServesMeshCRDs(t *testing.T) {
	s := ForTest(t)
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"networking.istio.io/v1":            {"virtualservices", "destinationrules"},
		"security.istio.io/v1":              {"peerauthentications", "authorizationpolicies"},
		"gateway.networking.k8s.io/v1":      {"gateways", "httproutes", "gatewayclasses"},
		"networking.k8s.io/v1":              {"networkpolicies"},
		"apps/v1":                           {"deployments"},
		"networking.istio.io/v1alpha3":      {"envoyfilters"},
		"telemetry.istio.io/v1":             {"telemetries"},
		"gateway.networking.k8s.io/v1beta1": {"referencegrants"},
	}
	for gv, resources := range want {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("group version %s not served: %v", gv, err)
			continue
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range resources {
			if !served[r] {
				t.Errorf("%s/%s not served", gv, r)
			}
		}
	}
}

// TestWriteKubeconfigMerges checks the written kubeconfig reaches the server
// and that a second context is merged in and becomes current (the drift case).
func TestWriteKubeconfigMerges(t *testing.T) {
	s := ForTest(t)
	path := filepath.Join(t.TempDir(), "kube", "config")
	if err := s.WriteKubeconfig(path, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteKubeconfig(path, "b"); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "b" {
		t.Errorf("current context %q, want b", kc.CurrentContext)
	}
	for _, name := range []string{"a", "b"} {
		if _, ok := kc.Contexts[name]; !ok {
			t.Errorf("context %q missing after merge", name)
		}
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, name, nil, nil).ClientConfig()
		if err != nil {
			t.Fatalf("context %s: %v", name, err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			t.Fatalf("context %s cannot reach the server: %v", name, err)
		}
		t.Logf("context %s: server %s", name, v.GitVersion)
	}
	if err := s.WriteKubeconfig(path, ""); err == nil || !strings.Contains(err.Error(), "empty context name") {
		t.Errorf("empty context name accepted or unclear error: %v", err)
	}
}

// TestTwoServersAreIndependent is what the context-lock test relies on: an
// object written to one server does not exist on the other.
func TestTwoServersAreIndependent(t *testing.T) {
	a := NewForTest(t)
	b := ForTest(t)
	if a.Config.Host == b.Config.Host {
		t.Fatalf("both servers at %s", a.Config.Host)
	}
	ca, cb := mustDiscovery(t, a), mustDiscovery(t, b)
	va, err := ca.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.ServerVersion(); err != nil {
		t.Fatal(err)
	}
	t.Logf("A=%s B=%s version %s", a.Config.Host, b.Config.Host, va.GitVersion)
	ka, kb := kubernetes.NewForConfigOrDie(a.Config), kubernetes.NewForConfigOrDie(b.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-on-a"}}
	if _, err := ka.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.CoreV1().Namespaces().Get(context.Background(), ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace created on A is visible on B (get: %v)", err)
	}
	// Stopping A must leave B serving.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.ServerVersion(); err == nil {
		t.Error("A still answers after Stop")
	}
	if _, err := cb.ServerVersion(); err != nil {
		t.Errorf("B stopped with A: %v", err)
	}
}

func mustDiscovery(t *testing.T, s *Server) *discovery.DiscoveryClient {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

func TestStartMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{BinaryDir: dir})
	if !errors.Is(err, ErrBinariesMissing) {
		t.Fatalf("want ErrBinariesMissing, got %v", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, "etcd")) || !strings.Contains(err.Error(), "make k8s-bin") {
		t.Errorf("error does not name the missing file and the fix: %v", err)
	}
}

func TestStartCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestStartBadCRDPath(t *testing.T) {
	// Binaries must look present for Start to reach the CRD check.
	dir := t.TempDir()
	for _, n := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(dir, "no-such-crds.yaml")
	_, err := Start(context.Background(), Options{BinaryDir: dir, IstioCRDFile: bad})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("missing CRD file not named in error: %v", err)
	}
}

func TestModuleDirFindsCRDs(t *testing.T) {
	for mod, file := range map[string]string{
		istioAPIModule:   "kubernetes/customresourcedefinitions.gen.yaml",
		gatewayAPIModule: "config/crd/standard/gateway.networking.k8s.io_gateways.yaml",
	} {
		dir, err := ModuleDir(mod)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Errorf("%s: %v", mod, err)
		}
	}
	if _, err := ModuleDir("example.com/not-a-dependency"); err == nil {
		t.Error("ModuleDir found a module that is not a dependency")
	}
}

func TestEscapePath(t *testing.T) {
	if got := escapePath("github.com/BurntSushi/toml"); got != "github.com/!burnt!sushi/toml" {
		t.Errorf("escapePath = %q", got)
	}
}

// recordingTB records how skipOrFail ends a test, without ending this one.
type recordingTB struct {
	testing.TB
	ended string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skipf(format string, args ...any) {
	if r.ended == "" {
		r.ended = "skip: " + fmt.Sprintf(format, args...)
	}
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	if r.ended == "" {
		r.ended = "fail: " + fmt.Sprintf(format, args...)
	}
}

func TestSkipOrFail(t *testing.T) {
	missing := fmt.Errorf("%w: /x/etcd", ErrBinariesMissing)
	cases := []struct {
		require string
		err     error
		want    string
	}{
		{"", missing, "skip: "},
		{"1", missing, "fail: "},
		{"", errors.New("apiserver crashed"), "fail: "},
		{"1", errors.New("apiserver crashed"), "fail: "},
	}
	for _, c := range cases {
		t.Setenv(EnvRequire, c.require)
		r := &recordingTB{TB: t}
		skipOrFail(r, c.err)
		if !strings.HasPrefix(r.ended, c.want) {
			t.Errorf("require=%q err=%v: ended %q, want prefix %q", c.require, c.err, r.ended, c.want)
		}
		if !strings.Contains(r.ended, c.err.Error()) {
			t.Errorf("message %q does not carry the cause", r.ended)
		}
	}
}
