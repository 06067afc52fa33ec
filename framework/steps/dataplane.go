package steps

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Names Istio gives what it adds to a pod: the injected proxy (a container,
// or a native-sidecar init container with restartPolicy Always) and the
// annotation istio-cni sets once it has redirected an ambient pod's traffic
// (istio.io/api annotation AmbientRedirection: "shows the actual state").
const (
	ProxyContainer       = "istio-proxy"
	AmbientRedirection   = "ambient.istio.io/redirection"
	AmbientRedirectionOn = "enabled"
)

// DataPlane is what a pod carries of the mesh.
type DataPlane struct {
	Proxy       bool // an istio-proxy container or init container
	Redirected  bool // istio-cni enrolled it in ambient
	Annotations string
}

// DataPlaneOf reads a pod's mesh data plane from its spec and annotations.
func DataPlaneOf(p *corev1.Pod) DataPlane {
	var d DataPlane
	for _, c := range append(append([]corev1.Container{}, p.Spec.Containers...), p.Spec.InitContainers...) {
		if c.Name == ProxyContainer {
			d.Proxy = true
		}
	}
	d.Redirected = p.Annotations[AmbientRedirection] == AmbientRedirectionOn
	d.Annotations = fmt.Sprintf("%s=%q", AmbientRedirection, p.Annotations[AmbientRedirection])
	return d
}

// ProxyPlacement judges GUIDE's "with no application code or sidecar
// injection required. Sidecar achieves the same via the istio-proxy container
// inside the application pod" on the pods of mode m: sidecar pods carry an
// istio-proxy; ambient pods carry none and are enrolled (the redirection
// annotation is the positive control: a pod outside the mesh carries no proxy
// either).
func ProxyPlacement(m mode.Mode, pods []corev1.Pod) verdict.Measurement {
	if len(pods) == 0 {
		return verdict.Measurement{Detail: "no pods to inspect"}
	}
	ok := true
	var parts []string
	for i := range pods {
		d := DataPlaneOf(&pods[i])
		want := d.Proxy && !d.Redirected
		if m.Ambient() {
			want = !d.Proxy && d.Redirected
		}
		ok = ok && want
		parts = append(parts, fmt.Sprintf("%s: istio-proxy=%v %s", pods[i].Name, d.Proxy, d.Annotations))
	}
	out := "verified"
	if !ok {
		out = "not verified"
	}
	return verdict.Measurement{Outcome: out, Detail: strings.Join(parts, "; ")}
}

// EchoPods lists echo's pods in the run's namespace.
func EchoPods(ctx context.Context, r *spec.Run) ([]corev1.Pod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	l, err := m.Kube.Client.CoreV1().Pods(r.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: fixtures.LabelApp + "=" + fixtures.EchoName})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
