// Package kube is the suite's handle on one cluster: the pinned REST config,
// typed clients, and the few operations specs need (find pods, port-forward,
// read logs, wait for Deployments). Every write goes through the guard, so a
// cluster that changed under the run is never written to.
package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/meshclaims/meshclaims/framework/rollout/deployment"
)

// WriteGuard is called before every phase that writes (framework/cluster.Guard).
type WriteGuard interface {
	Check(ctx context.Context) error
}

// Cluster is a pinned cluster.
type Cluster struct {
	Config *rest.Config
	Client kubernetes.Interface
	Guard  WriteGuard
}

// New pins cfg (it is copied; later changes to cfg do not reach the run).
func New(cfg *rest.Config, guard WriteGuard) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clients for %s: %w", cfg.Host, err)
	}
	return &Cluster{Config: cfg, Client: cs, Guard: guard}, nil
}

// CheckWrite runs the guard (if any) before a write phase.
func (c *Cluster) CheckWrite(ctx context.Context) error {
	if c.Guard == nil {
		return nil
	}
	return c.Guard.Check(ctx)
}

// ReadyPods returns the Running, Ready pods matching selector in ns.
func (c *Cluster) ReadyPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && PodReady(&p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// OneReadyPod returns one ready pod or an error naming the selector.
func (c *Cluster) OneReadyPod(ctx context.Context, ns, selector string) (*corev1.Pod, error) {
	pods, err := c.ReadyPods(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no ready pod matches %q in namespace %s", selector, ns)
	}
	return &pods[0], nil
}

// PodReady says whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitAvailable waits until each named Deployment in ns has rolled out,
// with `kubectl rollout status` semantics (framework/rollout/deployment).
func (c *Cluster) WaitAvailable(ctx context.Context, ns string, timeout time.Duration, names ...string) error {
	for _, name := range names {
		d, err := deployment.New(c.Client, ns, name)
		if err != nil {
			return err
		}
		if err := d.WaitComplete(ctx, timeout); err != nil {
			return fmt.Errorf("deployment %s/%s not available within %s: %w", ns, name, timeout, err)
		}
	}
	return nil
}

// WaitCreatedAvailable waits for Deployments that a controller creates
// (istiod makes one for every Gateway of class istio or istio-waypoint): it
// polls until each exists, a NotFound meaning "not yet", then waits until it
// has rolled out, all within timeout. The error says which Deployment was
// never created or what its rollout still lacked.
func (c *Cluster) WaitCreatedAvailable(ctx context.Context, ns string, timeout time.Duration, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		// A read error (a throttled client near the deadline, a blip of the
		// API server) does not hide that every read that answered said
		// NotFound.
		var notFound int
		var lastErr error
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				return true, nil
			case apierrors.IsNotFound(err):
				notFound++
			default:
				lastErr = err
			}
			return false, nil
		})
		if err != nil {
			why := "it was never created (its controller did not make it)"
			if notFound == 0 && lastErr != nil {
				why = "reading it failed: " + lastErr.Error()
			}
			return fmt.Errorf("deployment %s/%s not available within %s: %s", ns, name, timeout, why)
		}
		left := time.Until(deadline(ctx))
		d, err := deployment.New(c.Client, ns, name)
		if err != nil {
			return err
		}
		if err := d.WaitComplete(ctx, left); err != nil {
			return fmt.Errorf("deployment %s/%s created but not available within %s: %w", ns, name, timeout, err)
		}
	}
	return nil
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// Logs returns a container's log since a time (zero = all).
func (c *Cluster) Logs(ctx context.Context, ns, pod, container string, since time.Time) (string, error) {
	opts := &corev1.PodLogOptions{Container: container, Timestamps: true}
	if !since.IsZero() {
		t := metav1.NewTime(since)
		opts.SinceTime = &t
	}
	rc, err := c.Client.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// PortForward forwards a local loopback port to a pod's port and returns the
// local address ("127.0.0.1:NNNNN") and a stop function. Specs reach in-cluster
// clients (the fortio REST API, Envoy and ztunnel admin ports) this way, so
// no traffic of the suite leaves loopback on the test host.
func (c *Cluster) PortForward(ctx context.Context, ns, pod string, port int) (string, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		return "", nil, err
	}
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", nil, err
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: %w", ns, pod, port, err)
	case <-ctx.Done():
		close(stop)
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: no local port: %v", ns, pod, port, err)
	}
	var once bool
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), func() {
		if !once {
			once = true
			close(stop)
		}
	}, nil
}

// ServerVersion is the API server's version string (e.g. v1.36.3).
func (c *Cluster) ServerVersion() string {
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		return "unknown (" + strings.SplitN(err.Error(), "\n", 2)[0] + ")"
	}
	return v.GitVersion
}

// WaitQuiet waits until Service svc in ns is in a steady state (Quiet). A
// rollout is "complete" for the Deployment controller while old pods still
// drain (preStop, grace period); a measurement started then would measure
// the tail of the rollout.
func (c *Cluster) WaitQuiet(ctx context.Context, ns, svc string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		quiet, why, err := c.Quiet(ctx, ns, svc)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = why
		return quiet, nil
	})
	if err != nil {
		return fmt.Errorf("service %s/%s not steady within %s: %s", ns, svc, timeout, last)
	}
	return nil
}

// Quiet reports whether Service svc is steady now: no pod its selector
// matches is terminating, and its EndpointSlices list exactly the ready
// pods, none of them terminating. why says what is not yet steady.
func (c *Cluster) Quiet(ctx context.Context, ns, svc string) (quiet bool, why string, err error) {
	s, err := c.Client.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(s.Spec.Selector).String()})
	if err != nil {
		return false, "", err
	}
	ready := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			return false, fmt.Sprintf("pod %s is terminating", p.Name), nil
		}
		if p.Status.Phase == corev1.PodRunning && PodReady(&p) {
			ready[p.Status.PodIP] = true
		}
	}
	slices, err := c.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return false, "", err
	}
	listed := map[string]bool{}
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				return false, fmt.Sprintf("endpoint %v is terminating", ep.Addresses), nil
			}
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				for _, a := range ep.Addresses {
					listed[a] = true
				}
			}
		}
	}
	if len(listed) != len(ready) {
		return false, fmt.Sprintf("%d ready endpoints listed for %d ready pods", len(listed), len(ready)), nil
	}
	for ip := range ready {
		if !listed[ip] {
			return false, fmt.Sprintf("ready pod %s not yet an endpoint", ip), nil
		}
	}
	return true, "steady", nil
}

// AdminPort is the admin port of Envoy (sidecars, waypoints) and ztunnel;
// it listens on the pod's loopback, which a port-forward reaches.
const AdminPort = 15000

// AdminGet reads an admin endpoint of a pod's proxy (e.g. /config_dump,
// /certs) over a port-forward.
func (c *Cluster) AdminGet(ctx context.Context, ns, pod, path string) (string, error) {
	return c.PortGet(ctx, ns, pod, AdminPort, path)
}

// IstiodDebugPort is istiod's monitoring port, which also serves its
// /debug/* views (ENABLE_DEBUG_ON_HTTP, on by default). A port-forward
// arrives from the pod's loopback, which istiod lets through without a
// token (pilot/pkg/xds/debug.go allowAuthenticatedOrLocalhost).
const IstiodDebugPort = 15014

// PortGet reads path from port of a pod over a port-forward: a proxy's
// admin endpoint (AdminGet) or istiod's debug views.
func (c *Cluster) PortGet(ctx context.Context, ns, pod string, port int, path string) (string, error) {
	addr, stop, err := c.PortForward(ctx, ns, pod, port)
	if err != nil {
		return "", fmt.Errorf("admin of %s/%s: %w", ns, pod, err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("admin %s of %s/%s: %w", path, ns, pod, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("admin %s of %s/%s: %s", path, ns, pod, resp.Status)
	}
	return string(b), nil
}
