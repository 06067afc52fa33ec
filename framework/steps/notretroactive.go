package steps

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/rollout/deployment"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// The not-retroactive claims (sidecar injection, NetworkPolicy) compare a
// pod that ran before a change, read again after it, with the pod a
// restart then makes.

// RunningEcho applies namespace ns and echo (one replica) in it, waits
// until echo is available and returns its one pod: the pod that runs
// before the change a not-retroactive claim makes.
func RunningEcho(ctx context.Context, r *spec.Run, ns *corev1.Namespace, echo *appsv1.Deployment) (*corev1.Pod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	if err := scenario.Apply(ctx, r, ns, echo); err != nil {
		return nil, err
	}
	if err := m.Kube.WaitAvailable(ctx, echo.Namespace, r.Env.Config.Timeouts.WorkloadsReady, echo.Name); err != nil {
		return nil, err
	}
	return OnlyPod(ctx, r, echo.Namespace, fixtures.EchoName, "")
}

// KeptAndRestarted is what a not-retroactive claim compares: pod before
// of Deployment name as it is now, still running from before the change
// (read again, for what the change did to it in place), and the pod a
// rollout restart then makes. what says in an error which pod before is.
func KeptAndRestarted(ctx context.Context, r *spec.Run, ns, name string, before *corev1.Pod, what string) (again, restarted *corev1.Pod, err error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, nil, err
	}
	again, err = m.Kube.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s, %s: %w", what, before.Name, err)
	}
	restarted, err = restartedPod(ctx, r, ns, name, before.UID)
	if err != nil {
		return nil, nil, err
	}
	return again, restarted, nil
}

// restartedPod restarts Deployment name (kubectl rollout restart), waits
// for the rollout and returns its one pod, which must not be the pod with
// UID old.
func restartedPod(ctx context.Context, r *spec.Run, ns, name string, old types.UID) (*corev1.Pod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	d, err := deployment.New(m.Kube.Client, ns, name)
	if err != nil {
		return nil, err
	}
	if err := d.Restart(ctx); err != nil {
		return nil, err
	}
	if err := d.WaitComplete(ctx, r.Env.Config.Timeouts.RolloutComplete); err != nil {
		return nil, err
	}
	return OnlyPod(ctx, r, ns, name, old)
}

// OnlyPod is the one Ready, not terminating pod of app in ns other than
// the pod with UID not (a rollout's old pod stays Ready through its
// grace period).
func OnlyPod(ctx context.Context, r *spec.Run, ns, app string, not types.UID) (*corev1.Pod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	pods, err := m.Kube.ReadyPods(ctx, ns, fixtures.LabelApp+"="+app)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.UID != not {
			out = append(out, p)
		}
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("%s/%s: %d Ready pods (not terminating), want exactly 1", ns, app, len(out))
	}
	return &out[0], nil
}
