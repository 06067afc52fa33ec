package istiod

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProxyContainer is the name of Istio's injected sidecar.
const ProxyContainer = "istio-proxy"

// AdmitPod dry-runs the creation of one pod of Deployment d: the API server
// runs every mutating webhook (istiod's injector among them, whose
// sideEffects are None) and returns the pod as it would be stored, without
// scheduling or starting anything. That pod is what the injector did.
func AdmitPod(ctx context.Context, c client.Client, d *appsv1.Deployment) (*corev1.Pod, error) {
	tmpl := d.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-dry-run", Namespace: d.Namespace,
			Labels: tmpl.Labels, Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("dry-run create of a pod of %s/%s: %w", d.Namespace, d.Name, err)
	}
	return pod, nil
}

// Sidecar is what the injector put into a pod.
type Sidecar struct {
	// Container is istio-proxy.
	Container corev1.Container
	// Native: istio-proxy is an init container with restartPolicy Always
	// (a Kubernetes native sidecar), not a regular container.
	Native bool
	// ProxyConfig is the PROXY_CONFIG the injector gave pilot-agent: the
	// mesh's defaults merged with the pod's proxy.istio.io/config.
	ProxyConfig map[string]any
	// Env is the container's literal environment.
	Env map[string]string
}

// FindSidecar returns the injected istio-proxy of pod, or ok false when
// the pod has none.
func FindSidecar(pod *corev1.Pod) (s Sidecar, ok bool, err error) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ProxyContainer {
			s = Sidecar{Container: c, Native: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways}
			ok = true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ProxyContainer {
			if ok {
				return Sidecar{}, false, fmt.Errorf("pod %s has %s both as init container and as container", pod.Name, ProxyContainer)
			}
			s, ok = Sidecar{Container: c}, true
		}
	}
	if !ok {
		return Sidecar{}, false, nil
	}
	s.Env = map[string]string{}
	for _, e := range s.Container.Env {
		if e.ValueFrom == nil {
			s.Env[e.Name] = e.Value
		}
	}
	if raw := s.Env["PROXY_CONFIG"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &s.ProxyConfig); err != nil {
			return Sidecar{}, false, fmt.Errorf("pod %s: PROXY_CONFIG of %s is not JSON: %w", pod.Name, ProxyContainer, err)
		}
	}
	return s, true, nil
}

// TerminationDrain is the sidecar's terminationDrainDuration as pilot-agent
// will read it (PROXY_CONFIG holds it as a protobuf JSON duration, "30s").
// Absent means Istio's default (5s), returned as 0 with ok false.
func (s Sidecar) TerminationDrain() (d time.Duration, ok bool, err error) {
	v, ok := s.ProxyConfig["terminationDrainDuration"]
	if !ok {
		return 0, false, nil
	}
	str, isStr := v.(string)
	if !isStr {
		return 0, false, fmt.Errorf("terminationDrainDuration is %T %v, want a duration string", v, v)
	}
	d, err = time.ParseDuration(str)
	return d, err == nil, err
}
