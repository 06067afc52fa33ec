package rollout

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// earlyExit is how long before the 30 s terminationDrainDuration the proxy
// must have exited for "exited once its connections reached zero": pilot-
// agent with EXIT_ON_ZERO_ACTIVE_CONNECTIONS waits minDrainDuration (5 s by
// default) and then polls Envoy's listener downstream_cx_active each second
// (istio pkg/envoy/agent.go); without it, it waits the whole drain. An exit
// within 20 s of the delete leaves 10 s, more than the kubelet's 1 s
// resolution of the times and the few seconds it takes to signal the proxy.
const earlyExit = 20 * time.Second

// proxyExit is when an idle pod's istio-proxy exited after its delete.
type proxyExit struct {
	Pod       string
	Requested time.Time     // the delete: deletionTimestamp minus the grace period
	Finished  time.Time     // istio-proxy's terminated.finishedAt
	After     time.Duration // Finished - Requested
}

// proxyExitOf reads the last state of a deleted pod (its final status as
// the kubelet wrote it before the pod went): the delete time and
// istio-proxy's finish. A pod not being deleted, or whose proxy has not
// terminated, is an error naming what is missing.
func proxyExitOf(p *corev1.Pod) (proxyExit, error) {
	e := proxyExit{Pod: p.Name}
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil {
		return e, fmt.Errorf("pod %s: no deletionTimestamp and grace period, it was not being deleted", p.Name)
	}
	e.Requested = p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		if s.Name != steps.ProxyContainer {
			continue
		}
		if s.State.Terminated == nil {
			return e, fmt.Errorf("pod %s: %s has not terminated in the last state seen", p.Name, steps.ProxyContainer)
		}
		e.Finished = s.State.Terminated.FinishedAt.Time
		e.After = e.Finished.Sub(e.Requested)
		return e, nil
	}
	return e, fmt.Errorf("pod %s has no %s status: it was not injected", p.Name, steps.ProxyContainer)
}

// judgeProxyExit: verified when the proxy exited within earlyExit of the
// delete, well before the drain duration; otherwise not verified.
func judgeProxyExit(e proxyExit) verdict.Measurement {
	out := "verified"
	if e.After > earlyExit {
		out = "not verified"
	}
	return verdict.Measurement{Outcome: out,
		Detail: fmt.Sprintf("%s: istio-proxy exited %s after the delete (drain %s, early means within %s)", e.Pod, e.After.Round(time.Second), fixtures.SidecarDrainDuration, earlyExit),
		Extra:  map[string]float64{"proxy_exit_s": e.After.Seconds()}}
}

// deleteAndWatch deletes pod name in ns (a guarded write) while watching it,
// and returns its last state before it went, waiting at most timeout for it
// to go. The watch starts before the delete so no status is missed.
func deleteAndWatch(ctx context.Context, r *spec.Run, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	pods := m.Kube.Client.CoreV1().Pods(ns)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	if err := m.Applier.Phase(ctx, fmt.Sprintf("delete pod %s/%s", ns, name), func(ctx context.Context) error {
		return pods.Delete(ctx, name, metav1.DeleteOptions{})
	}); err != nil {
		return nil, err
	}
	var last *corev1.Pod
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s still there %s after its delete", ns, name, timeout)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch of pod %s/%s ended before the pod went", ns, name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			last = p
			if ev.Type == watch.Deleted {
				return last, nil
			}
		}
	}
}

// sidecarExitOnZero hardens echo with the drain annotation only, deletes
// one of its new (idle: no load runs) pods and judges when its proxy exited.
func sidecarExitOnZero(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	pods, err := hardenedEchoPods(ctx, r, r.Mode, fixtures.Hardening{SidecarDrain: true})
	if err != nil {
		return verdict.Measurement{}, err
	}
	if len(pods) == 0 {
		return verdict.Measurement{}, fmt.Errorf("no echo pod after hardening")
	}
	settings, err := drainSettings(pods[:1])
	if err != nil {
		return verdict.Measurement{}, err
	}
	if settings.Outcome != "verified" {
		return verdict.Measurement{Unmet: "drain settings: " + settings.Detail}, nil
	}
	last, err := deleteAndWatch(ctx, r, r.Namespace(), pods[0].Name, r.Env.Config.Timeouts.Quiet)
	if err != nil {
		return verdict.Measurement{}, err
	}
	e, err := proxyExitOf(last)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got := judgeProxyExit(e)
	r.Logf("%s", got.Detail)
	return got, nil
}
