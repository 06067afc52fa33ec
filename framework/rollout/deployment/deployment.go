// Package deployment is the Kubernetes rollout.Driver: `kubectl rollout
// restart deployment/NAME` (patch the pod template annotation
// kubectl.kubernetes.io/restartedAt) and `kubectl rollout status` (watch the
// Deployment until the new ReplicaSet is fully rolled out and no old replica
// remains), with client-go.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// RestartedAtAnnotation is what `kubectl rollout restart` sets on the pod template.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Driver restarts one Deployment.
type Driver struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Poll is how often the Deployment is re-read besides the watch (a watch
	// can miss nothing on a real API server, but a re-read costs little and
	// survives a dropped watch). 0 means 1 s.
	Poll time.Duration
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// New returns a Driver for namespace/name.
func New(client kubernetes.Interface, namespace, name string) (*Driver, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, fmt.Errorf("deployment.New: client, namespace and name are required (got namespace %q, name %q)", namespace, name)
	}
	return &Driver{Client: client, Namespace: namespace, Name: name}, nil
}

func (d *Driver) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Restart patches the pod template's restartedAt annotation to now (RFC
// 3339, as kubectl does). kubectl's value has one-second resolution, so two
// restarts within the same second would be one rollout; Restart waits for
// the next second in that case so that every call starts a rollout.
func (d *Driver) Restart(ctx context.Context) error {
	dep, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	if dep.Spec.Paused {
		return fmt.Errorf("deployment %s/%s is paused; a restart would not roll out", d.Namespace, d.Name)
	}
	prev := dep.Spec.Template.Annotations[RestartedAtAnnotation]
	stamp := d.now().Format(time.RFC3339)
	for stamp == prev {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		stamp = d.now().Format(time.RFC3339)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, RestartedAtAnnotation, stamp)
	_, err = d.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: patching %s: %w", d.Namespace, d.Name, RestartedAtAnnotation, err)
	}
	return nil
}

// WaitComplete waits until Status says the rollout is complete, for at most
// timeout; the error then says what is still pending (kubectl's words).
func (d *Driver) WaitComplete(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	api := d.Client.AppsV1().Deployments(d.Namespace)
	poll := d.Poll
	if poll <= 0 {
		poll = time.Second
	}
	last := "not read yet"
	check := func(dep *appsv1.Deployment) (bool, error) {
		done, msg, err := Status(dep)
		last = msg
		return done, err
	}
	for {
		dep, err := api.Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("deployment %s/%s: rollout not complete after %v: %s", d.Namespace, d.Name, timeout, last)
			}
			return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		if done, err := check(dep); done || err != nil {
			return wrap(d, err)
		}
		w, err := api.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", d.Name).String(),
			ResourceVersion: dep.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("deployment %s/%s: rollout not complete after %v: %s", d.Namespace, d.Name, timeout, last)
			}
			return fmt.Errorf("deployment %s/%s: watch: %w", d.Namespace, d.Name, err)
		}
		done, err := d.watch(ctx, w.ResultChan(), poll, check)
		w.Stop()
		if done || err != nil {
			return wrap(d, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("deployment %s/%s: rollout not complete after %v: %s", d.Namespace, d.Name, timeout, last)
		}
		// poll tick or the watch ended: read again
	}
}

// watch consumes events until done, an error, the poll interval, or the end
// of the watch.
func (d *Driver) watch(ctx context.Context, events <-chan watch.Event, poll time.Duration, check func(*appsv1.Deployment) (bool, error)) (bool, error) {
	tick := time.NewTimer(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case <-tick.C:
			return false, nil
		case ev, ok := <-events:
			if !ok {
				return false, nil
			}
			dep, isDep := ev.Object.(*appsv1.Deployment)
			if !isDep {
				continue
			}
			if ev.Type == watch.Deleted {
				return false, errors.New("the Deployment was deleted during the rollout")
			}
			if done, err := check(dep); done || err != nil {
				return done, err
			}
		}
	}
}

func wrap(d *Driver, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
}

// Status is the rollout-complete condition of `kubectl rollout status`
// (DeploymentStatusViewer), plus ready replicas: complete when the
// controller has observed the latest spec, every replica is updated, ready
// and available, and no old replica remains. msg says what is pending; err is
// set when the rollout can no longer complete (progress deadline exceeded).
func Status(d *appsv1.Deployment) (done bool, msg string, err error) {
	if d.Generation > d.Status.ObservedGeneration {
		return false, fmt.Sprintf("waiting for the controller to observe generation %d (observed %d)", d.Generation, d.Status.ObservedGeneration), nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return false, "", fmt.Errorf("rollout exceeded its progress deadline: %s", c.Message)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d out of %d new replicas have been updated", st.UpdatedReplicas, want), nil
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas are pending termination", st.Replicas-st.UpdatedReplicas), nil
	case st.ReadyReplicas < want:
		return false, fmt.Sprintf("%d of %d updated replicas are ready", st.ReadyReplicas, want), nil
	case st.AvailableReplicas < st.UpdatedReplicas || st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d updated replicas are available", st.AvailableReplicas, st.UpdatedReplicas), nil
	}
	return true, fmt.Sprintf("deployment %q successfully rolled out", d.Name), nil
}
