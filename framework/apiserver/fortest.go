package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// EnvRequire, set to 1 (as `make test` does), turns "binaries not built" from
// a skip into a failure, so CI cannot pass by silently skipping every test
// that needs a real API server.
const EnvRequire = "MESHCLAIMS_REQUIRE_APISERVER"

// shared is the one Server of a test binary whose TestMain uses RunTests.
var shared struct {
	mu      sync.Mutex
	enabled bool // RunTests is running: ForTest may share and RunTests stops it
	srv     *Server
	err     error
}

// RunTests is a TestMain body that lets every ForTest in the binary share one
// Server (one start of about 10 s instead of one per test) and stops it after
// the tests:
//
//	func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }
//
// The server starts lazily, on the first ForTest, so a run that selects no
// such test starts nothing.
func RunTests(m *testing.M) int {
	shared.mu.Lock()
	shared.enabled = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.enabled = false
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "apiserver: stop shared server: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		shared.srv = nil
	}
	return code
}

// ForTest returns a running Server for t. Inside RunTests it is the binary's
// shared Server (tests must then use their own namespaces or names); without
// RunTests it is a fresh Server stopped when t ends.
//
// When etcd or kube-apiserver is not built, t is skipped with a message saying
// how to build them, unless MESHCLAIMS_REQUIRE_APISERVER=1, in which case t
// fails. A server that is present but does not start always fails t.
func ForTest(t testing.TB) *Server {
	t.Helper()
	shared.mu.Lock()
	if !shared.enabled {
		shared.mu.Unlock()
		return NewForTest(t)
	}
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = Start(context.Background(), Options{})
	}
	if shared.err != nil {
		skipOrFail(t, shared.err)
	}
	return shared.srv
}

// ClientsetForTest is a clientset for ForTest's Server: what most tests of
// code that reads or writes objects through client-go want, without each
// repeating the server start and the client's construction.
func ClientsetForTest(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(ForTest(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// NewForTest always starts a Server of its own for t (stopped when t ends):
// for tests that need two independent clusters, such as the context-lock test.
// Skips and failures follow ForTest's rules.
func NewForTest(t testing.TB) *Server {
	t.Helper()
	return NewForTestWith(t, Options{})
}

// NewForTestWith is NewForTest with Start's options (a server without the
// Gateway API CRDs, say).
func NewForTestWith(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), o)
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop API server: %v", err)
		}
	})
	return s
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrBinariesMissing) && os.Getenv(EnvRequire) != "1" {
		t.Skipf("no real API server here: %v (set %s=1 to make this a failure)", err, EnvRequire)
	}
	t.Fatalf("real API server required: %v", err)
}
