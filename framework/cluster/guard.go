package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// IdentityNamespace is the namespace whose UID identifies a cluster.
// kube-apiserver itself creates kube-system at start (its system-namespaces
// controller), on every distribution and under envtest, and nothing deletes
// it; a recreated cluster gets a fresh UID. That makes its UID a cheap,
// always-present fingerprint of "this cluster, this incarnation".
const IdentityNamespace = "kube-system"

// ErrClusterChanged is wrapped by every Guard.Check error that reports the
// cluster is no longer the one recorded at start. Callers abort the run on it.
var ErrClusterChanged = errors.New("cluster identity changed since the run started")

// Identity is what makes a cluster the one a run started on.
type Identity struct {
	// Server is the API server URL of the pinned REST config.
	Server string
	// KubeSystemUID is the UID of the kube-system namespace.
	KubeSystemUID types.UID
}

func (i Identity) String() string {
	return fmt.Sprintf("server %s, kube-system uid %s", i.Server, i.KubeSystemUID)
}

// WriteGuard is what a phase that writes calls first. The apply package
// declares the same interface; Guard satisfies both.
type WriteGuard interface {
	Check(ctx context.Context) error
}

// Guard aborts a run whose cluster changed under it.
//
// The REST config of a run is resolved once and pinned; the suite never
// re-reads the kubeconfig. So why check at all? Two separate ways a run can
// end up acting on the wrong cluster, and each check sees only one of them:
//
//  1. Kubeconfig drift (GUIDE's test-isolation incident): the workstation's
//     current context is switched mid-run. The pinned client is unaffected,
//     but everything else that follows the kubeconfig (kubectl, istioctl,
//     helm run by the operator alongside, a rollout loop or a dump taken by
//     hand) now targets another cluster, and the run's results would be
//     mixed with actions on that cluster. Only re-reading the kubeconfig from
//     disk sees this; that read is a detector, never a source of config.
//  2. Same URL, different cluster: the pinned server URL now answers for
//     another cluster (a kind or EKS cluster deleted and recreated behind the
//     same endpoint, a port-forward, tunnel or `kubectl proxy` rebound to a
//     different target). The kubeconfig is unchanged, so only asking the
//     pinned server for kube-system's UID sees this.
type Guard struct {
	pinned   Identity
	client   kubernetes.Interface
	selector KubeconfigSelector
	// noSelector is set for guards without a kubeconfig to watch (a REST
	// config handed in directly); only the UID check runs then.
	noSelector bool
	// checks counts Check calls: every write phase asks first, so zero
	// means the run has written nothing through the guarded clients.
	checks atomic.Int64
}

var _ WriteGuard = (*Guard)(nil)

// NewGuard records the identity of the cluster cfg points at. sel names the
// kubeconfig (and context) the run was started from; the guard re-resolves
// it on every Check and requires it to still point at cfg.Host. A zero
// selector with ExplicitPath "" means the default loading rules (KUBECONFIG,
// ~/.kube/config), which is what kubectl would follow too.
//
// NewGuard fails if the selector does not resolve to cfg.Host at start: the
// run would otherwise begin already drifted.
func NewGuard(ctx context.Context, cfg *rest.Config, sel KubeconfigSelector) (*Guard, error) {
	g, err := newGuard(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g.selector = sel
	server, err := sel.Server()
	if err != nil {
		return nil, fmt.Errorf("cluster guard: %w", err)
	}
	if server != g.pinned.Server {
		return nil, fmt.Errorf("cluster guard: %s resolves to server %s, but the pinned REST config points at %s",
			sel, server, g.pinned.Server)
	}
	return g, nil
}

// NewGuardForConfig records the identity of the cluster cfg points at and
// checks only kube-system's UID later: for REST configs that came from no
// kubeconfig (in-cluster config, a test's API server).
func NewGuardForConfig(ctx context.Context, cfg *rest.Config) (*Guard, error) {
	g, err := newGuard(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g.noSelector = true
	return g, nil
}

func newGuard(ctx context.Context, cfg *rest.Config) (*Guard, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("cluster guard: REST config has no server (Host is empty)")
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("cluster guard: client for %s: %w", cfg.Host, err)
	}
	uid, err := kubeSystemUID(ctx, client, true)
	if err != nil {
		return nil, fmt.Errorf("cluster guard: recording identity of %s: %w", cfg.Host, err)
	}
	return &Guard{pinned: Identity{Server: cfg.Host, KubeSystemUID: uid}, client: client}, nil
}

// kubeSystemUID reads kube-system's UID. At start (waitForCreation) it waits
// briefly for a NotFound to clear: a just-started API server creates
// kube-system a moment after it reports ready.
func kubeSystemUID(ctx context.Context, client kubernetes.Interface, waitForCreation bool) (types.UID, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := client.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
		if err == nil {
			if ns.UID == "" {
				return "", fmt.Errorf("namespace %s has no UID", IdentityNamespace)
			}
			return ns.UID, nil
		}
		if !waitForCreation || !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return "", fmt.Errorf("reading namespace %s: %w", IdentityNamespace, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WritePhases is how many write phases asked the guard (Check calls, each
// before its writes, whatever the answer). Zero: nothing was written through
// a guarded client, so there is nothing of the run's to delete.
func (g *Guard) WritePhases() int64 { return g.checks.Load() }

// Pinned is the identity recorded at start.
func (g *Guard) Pinned() Identity { return g.pinned }

// Check verifies, before a phase that writes, that the run still faces the
// cluster recorded at start. Any error means: do not write; abort the run.
// Errors that prove a change wrap ErrClusterChanged; an error that only
// prevents the proof (kubeconfig unreadable, API server unreachable) is
// returned as is, and also means abort: the guard fails closed.
func (g *Guard) Check(ctx context.Context) error {
	g.checks.Add(1)
	if !g.noSelector {
		server, err := g.selector.Server()
		if err != nil {
			return fmt.Errorf("cluster guard: cannot re-read %s to verify the cluster: %w", g.selector, err)
		}
		if server != g.pinned.Server {
			return fmt.Errorf("%w: %s now points at %s, the run started on %s; aborting before writing",
				ErrClusterChanged, g.selector, server, g.pinned)
		}
	}
	uid, err := kubeSystemUID(ctx, g.client, false)
	if err != nil {
		return fmt.Errorf("cluster guard: cannot verify %s: %w", g.pinned.Server, err)
	}
	if uid != g.pinned.KubeSystemUID {
		return fmt.Errorf("%w: server %s now has kube-system uid %s, the run started with %s; a different cluster answers at the same URL; aborting before writing",
			ErrClusterChanged, g.pinned.Server, uid, g.pinned.KubeSystemUID)
	}
	return nil
}
