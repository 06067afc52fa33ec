package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// suiteLabel marks every object this test's "run" writes, so the test can
// ask each API server whether it holds any.
const suiteLabel = "meshclaims.test/context-lock"

func useContext(t *testing.T, path, name string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// run is a miniature suite run: phases that each write one labelled
// namespace through the environment's client, each preceded by the guard,
// and a hook between phases where the workstation may change things.
func run(ctx context.Context, cfg *envconf.Config, guard WriteGuard, runID string, between func()) (written int, err error) {
	for phase := 1; phase <= 3; phase++ {
		if phase > 1 && between != nil {
			between()
		}
		if err := guard.Check(ctx); err != nil {
			return written, fmt.Errorf("phase %d: %w", phase, err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-phase-%d", runID, phase),
			Labels: map[string]string{suiteLabel: runID},
		}}
		if err := cfg.Client().Resources().Create(ctx, ns); err != nil {
			return written, fmt.Errorf("phase %d: %w", phase, err)
		}
		written++
	}
	return written, nil
}

func labelled(t *testing.T, c *rest.Config, runID string) []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: suiteLabel + "=" + runID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names
}

// TestContextLock: two real API servers A and B, one kubeconfig whose
// current context is switched from A to B mid-run. The run must abort before
// its next write and B must hold no object of the run; without the switch
// (negative control) every phase writes, all to A.
func TestContextLock(t *testing.T) {
	a := apiserver.NewForTest(t)
	b := apiserver.NewForTest(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := a.WriteKubeconfig(kc, "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteKubeconfig(kc, "b"); err != nil {
		t.Fatal(err)
	}

	start := func(t *testing.T) (context.Context, *envconf.Config, *Guard) {
		useContext(t, kc, "a")
		cfg := envconf.New()
		ctx, err := Setup(NewExisting(KubeconfigSelector{Path: kc}))(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := GuardFrom(ctx)
		if !ok {
			t.Fatal("Setup stored no guard")
		}
		if g.Pinned().Server != a.Config.Host {
			t.Fatalf("pinned %s, want A at %s", g.Pinned().Server, a.Config.Host)
		}
		return ctx, cfg, g
	}

	t.Run("switch to B mid-run aborts", func(t *testing.T) {
		ctx, cfg, g := start(t)
		written, err := run(ctx, cfg, g, "drift", func() { useContext(t, kc, "b") })
		if !errors.Is(err, ErrClusterChanged) {
			t.Fatalf("run error = %v, want ErrClusterChanged", err)
		}
		if !strings.Contains(err.Error(), "phase 2") || !strings.Contains(err.Error(), b.Config.Host) {
			t.Errorf("error should name the aborted phase and B's server: %v", err)
		}
		if written != 1 {
			t.Errorf("%d phases wrote, want only phase 1 (before the switch)", written)
		}
		if got := labelled(t, b.Config, "drift"); len(got) != 0 {
			t.Errorf("B holds objects of the run: %v", got)
		}
		if got := labelled(t, a.Config, "drift"); len(got) != 1 {
			t.Errorf("A holds %v, want exactly phase 1's namespace", got)
		}
		// The pinned client was never re-pointed, even though the file was.
		if h := cfg.Client().RESTConfig().Host; h != a.Config.Host {
			t.Errorf("environment client now talks to %s, want the pinned A %s", h, a.Config.Host)
		}
	})

	t.Run("no switch passes (negative control)", func(t *testing.T) {
		ctx, cfg, g := start(t)
		written, err := run(ctx, cfg, g, "steady", nil)
		if err != nil {
			t.Fatalf("guard fired without drift: %v", err)
		}
		if written != 3 {
			t.Errorf("%d phases wrote, want 3", written)
		}
		if got := labelled(t, a.Config, "steady"); len(got) != 3 {
			t.Errorf("A holds %v, want the 3 phase namespaces", got)
		}
		if got := labelled(t, b.Config, "steady"); len(got) != 0 {
			t.Errorf("B holds objects of the run: %v", got)
		}
	})

	t.Run("explicit context ignores current-context switch", func(t *testing.T) {
		useContext(t, kc, "b")
		g, err := NewGuard(context.Background(), a.Config, KubeconfigSelector{Path: kc, Context: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(context.Background()); err != nil {
			t.Errorf("a run pinned to context a by name aborted on another current-context: %v", err)
		}
	})

	t.Run("start already drifted is refused", func(t *testing.T) {
		useContext(t, kc, "b")
		if _, err := NewGuard(context.Background(), a.Config, KubeconfigSelector{Path: kc}); err == nil {
			t.Error("NewGuard accepted a kubeconfig that resolves to B for a REST config of A")
		}
	})

	t.Run("unreadable kubeconfig fails closed", func(t *testing.T) {
		dir := t.TempDir()
		own := filepath.Join(dir, "kubeconfig")
		if err := a.WriteKubeconfig(own, "a"); err != nil {
			t.Fatal(err)
		}
		g, err := NewGuard(context.Background(), a.Config, KubeconfigSelector{Path: own})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(own); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(context.Background()); err == nil {
			t.Error("guard passed without being able to read the kubeconfig")
		}
	})
}

// switchingProxy is a `kubectl proxy`-like front on loopback whose backend
// can be re-pointed: the same URL then answers for a different cluster.
type switchingProxy struct {
	backend atomic.Pointer[httputil.ReverseProxy]
}

func proxyTo(t *testing.T, c *rest.Config) *httputil.ReverseProxy {
	t.Helper()
	rt, err := rest.TransportFor(c)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.Transport = rt
	return p
}

func (s *switchingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.backend.Load().ServeHTTP(w, r)
}

// TestGuardSameURLDifferentCluster: the kubeconfig never changes, but the
// pinned URL starts answering for cluster B. Only the kube-system UID check
// can see that; the negative control is the same guard before the switch.
func TestGuardSameURLDifferentCluster(t *testing.T) {
	a := apiserver.NewForTest(t)
	b := apiserver.NewForTest(t)
	sp := &switchingProxy{}
	sp.backend.Store(proxyTo(t, a.Config))
	srv := httptest.NewServer(sp) // 127.0.0.1
	t.Cleanup(srv.Close)

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	kcfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kcfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kcfg.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kcfg, kc); err != nil {
		t.Fatal(err)
	}
	sel := KubeconfigSelector{Path: kc}
	p := NewExisting(sel)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(context.Background(), p.RESTConfig(), sel)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Check(context.Background()); err != nil {
		t.Fatalf("guard fired before any change: %v", err)
	}
	sp.backend.Store(proxyTo(t, b.Config))
	err = g.Check(context.Background())
	if !errors.Is(err, ErrClusterChanged) || !strings.Contains(err.Error(), "kube-system uid") {
		t.Fatalf("after the proxy moved to B: error = %v, want ErrClusterChanged naming kube-system's uid", err)
	}
}

// TestKubeSystemExistsOnAPIServer documents the fact the guard relies on:
// kube-apiserver creates kube-system itself, also under envtest.
func TestKubeSystemExistsOnAPIServer(t *testing.T) {
	s := apiserver.ForTest(t)
	g, err := NewGuardForConfig(context.Background(), s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if g.Pinned().KubeSystemUID == "" {
		t.Fatal("no kube-system uid recorded")
	}
	if err := g.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNewGuardRejectsEmptyConfig(t *testing.T) {
	if _, err := NewGuardForConfig(context.Background(), &rest.Config{}); err == nil || !strings.Contains(err.Error(), "Host is empty") {
		t.Fatalf("error = %v, want one naming the empty Host", err)
	}
}
