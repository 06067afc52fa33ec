package steps

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Pod shapes as Istio leaves them (istio/istio pkg/kube/inject testdata:
// the proxy as a native-sidecar init container or as a container; istio-cni's
// ambient.istio.io/redirection annotation on enrolled ambient pods).
func placementPod(name string, annotations map[string]string, containers, inits []string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	always := corev1.ContainerRestartPolicyAlways
	for _, c := range inits {
		ic := corev1.Container{Name: c}
		if c == ProxyContainer {
			ic.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, ic)
	}
	return p
}

func TestProxyPlacement(t *testing.T) {
	native := placementPod("echo-native", map[string]string{"sidecar.istio.io/status": `{"initContainers":["istio-init","istio-proxy"]}`}, []string{"echo"}, []string{"istio-init", "istio-proxy"})
	classic := placementPod("echo-classic", nil, []string{"echo", "istio-proxy"}, []string{"istio-init"})
	ambient := placementPod("echo-ambient", map[string]string{AmbientRedirection: AmbientRedirectionOn}, []string{"echo"}, nil)
	plain := placementPod("echo-plain", nil, []string{"echo"}, nil)
	cases := []struct {
		name string
		m    mode.Mode
		pods []corev1.Pod
		want string
	}{
		{"sidecar, native sidecar", mode.Sidecar, []corev1.Pod{native}, "verified"},
		{"sidecar, classic container", mode.Sidecar, []corev1.Pod{classic, native}, "verified"},
		{"sidecar pod without a proxy fires", mode.Sidecar, []corev1.Pod{native, plain}, "not verified"},
		{"ambient enrolled, no proxy", mode.AmbientL4, []corev1.Pod{ambient}, "verified"},
		{"ambient pod with an injected proxy fires", mode.AmbientL7, []corev1.Pod{ambient, native}, "not verified"},
		// Positive control: a pod outside the mesh has no proxy either, and
		// must not pass as ambient.
		{"a pod not enrolled in ambient fires", mode.AmbientL4, []corev1.Pod{plain}, "not verified"},
	}
	for _, c := range cases {
		got := ProxyPlacement(c.m, c.pods)
		if got.Outcome != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, got.Outcome, got.Detail, c.want)
		}
	}
	if got := ProxyPlacement(mode.Sidecar, nil); got.Outcome != "" || !strings.Contains(got.Detail, "no pods") {
		t.Errorf("no pods: %+v", got)
	}
	if d := ProxyPlacement(mode.AmbientL4, []corev1.Pod{ambient}).Detail; !strings.Contains(d, `echo-ambient: istio-proxy=false ambient.istio.io/redirection="enabled"`) {
		t.Errorf("detail %q", d)
	}
}
