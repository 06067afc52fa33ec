package evidence

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/kube"
)

// Against a real API server: events and each container's log are written
// (envtest runs no kubelet, so the pod's log is empty but still requested).
func TestCollectEventsAndLogs(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "evidence-test"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "echo.1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "echo-abc", Namespace: ns},
		Reason:         "Killing", Message: "Stopping container echo", Type: "Normal",
		LastTimestamp: metav1.NewTime(time.Now()),
	}
	if _, err := k.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-abc", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "meshclaims/workload:dev"}}}}
	if _, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	files, err := Collect(ctx, k, filepath.Join(base, "evidence", "x"), base, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("evidence", "x", ns+"__echo-abc__echo.log"), filepath.Join("evidence", "x", ns+"__events.txt")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files = %v, want %v", files, want)
	}
	b, _ := os.ReadFile(filepath.Join(base, files[1]))
	if !strings.Contains(string(b), "Pod/echo-abc Killing: Stopping container echo") {
		t.Fatalf("events file:\n%s", b)
	}
}

// A meshed namespace as Istio leaves it: a pod with istio-proxy injected as a
// native sidecar (an init container with restartPolicy Always, after
// istio-validation, as Istio's injection template writes it), istiod and an
// unrelated pod in istio-system, a waypoint Gateway and an HTTPRoute with
// the status istiod writes (shapes from istio/istio's
// pilot/pkg/config/kube/gateway testdata). On the real API server: the
// selection of containers and objects is what is checked. envtest runs no
// kubelet, so each selected container's log is requested and comes back
// empty (the API server answers an unscheduled pod's log with nothing), and
// the proxy's config_dump cannot be reached (no pod runs to forward to):
// content of real logs is not checked here.
func TestCollectNativeSidecarControlPlaneAndRouteStatus(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "evidence-mesh"
	for _, n := range []string{ns, IstioNamespace} {
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	always := corev1.ContainerRestartPolicyAlways
	proxy := "docker.io/istio/proxyv2:1.30.2"
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "echo-7d9f", Namespace: ns, Labels: map[string]string{"app": "echo", "security.istio.io/tlsMode": "istio"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Name: "istio-validation", Image: proxy, Args: []string{"istio-iptables", "--validation-mode"}},
					{Name: "istio-proxy", Image: proxy, RestartPolicy: &always, Args: []string{"proxy", "sidecar", "--domain", ns + ".svc.cluster.local"}},
				},
				Containers: []corev1.Container{{Name: "echo", Image: "meshclaims/workload:dev"}},
			}},
		{ObjectMeta: metav1.ObjectMeta{Name: "istiod-5f4d8c", Namespace: IstioNamespace, Labels: map[string]string{"app": "istiod", "istio": "pilot"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "docker.io/istio/pilot:1.30.2", Args: []string{"discovery"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: IstioNamespace, Labels: map[string]string{"app": "something-else"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}},
	}
	for _, p := range pods {
		if _, err := k.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	withStatus := func(gvr schema.GroupVersionResource, obj, status string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(obj), &u.Object); err != nil {
			t.Fatal(err)
		}
		created, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := yaml.Unmarshal([]byte(status), &st); err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = st
		if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	withStatus(routeKinds[0], `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: waypoint, namespace: evidence-mesh}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`, `
conditions:
- lastTransitionTime: "2026-12-01T08:00:00Z"
  message: Resource accepted
  reason: Accepted
  status: "True"
  type: Accepted
- lastTransitionTime: "2026-12-01T08:00:00Z"
  message: 'Failed to assign to any requested addresses: hostname "waypoint.evidence-mesh.svc.cluster.local" not found'
  reason: AddressNotUsable
  status: "False"
  type: Programmed
`)
	withStatus(routeKinds[1], `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo-canary, namespace: evidence-mesh}
spec:
  parentRefs: [{group: "", kind: Service, name: echo}]
  rules: [{backendRefs: [{name: echo-v1, port: 8080, weight: 90}, {name: echo-v2, port: 8080, weight: 10}]}]
`, `
parents:
- conditions:
  - lastTransitionTime: "2026-12-01T08:00:00Z"
    message: Route was valid
    reason: Accepted
    status: "True"
    type: Accepted
  - lastTransitionTime: "2026-12-01T08:00:00Z"
    message: backend(echo-v2.evidence-mesh.svc.cluster.local) not found
    reason: BackendNotFound
    status: "False"
    type: ResolvedRefs
  controllerName: istio.io/gateway-controller
  parentRef: {group: "", kind: Service, name: echo}
`)

	base := t.TempDir()
	files, err := Collect(ctx, k, filepath.Join(base, "e"), base, ns)
	// The one gap: the proxy's admin endpoint, unreachable without a kubelet.
	if err == nil || !strings.Contains(err.Error(), "echo-7d9f") {
		t.Fatalf("no config_dump gap reported for the proxy pod: %v", err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, "admin of "+ns+"/echo-7d9f") {
			t.Errorf("unexpected gap: %s", line)
		}
	}
	got := map[string]bool{}
	for _, f := range files {
		got[filepath.Base(f)] = true
	}
	for _, want := range []string{
		ns + "__echo-7d9f__istio-proxy.log", // the native sidecar
		ns + "__echo-7d9f__istio-validation.log",
		ns + "__echo-7d9f__echo.log",
		IstioNamespace + "__istiod-5f4d8c__discovery.log",
		ns + "__gateway-api-status.yaml",
	} {
		if !got[want] {
			t.Errorf("missing %s in %v", want, files)
		}
	}
	if got[IstioNamespace+"__unrelated__main.log"] {
		t.Error("an istio-system pod that is not Istio's was collected")
	}
	status, err := os.ReadFile(filepath.Join(base, "e", ns+"__gateway-api-status.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: Gateway", "name: waypoint", "AddressNotUsable", "kind: HTTPRoute", "BackendNotFound", "istio.io/gateway-controller"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("status file lacks %q:\n%s", want, status)
		}
	}
}

// The selection itself, init containers first (negative control: a pod
// without init containers yields only its app containers).
func TestLogContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "istio-init"}, {Name: "istio-proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "echo"}},
	}}
	if got := strings.Join(logContainers(p), ","); got != "istio-init,istio-proxy,echo" {
		t.Errorf("containers %s", got)
	}
	p.Spec.InitContainers = nil
	if got := strings.Join(logContainers(p), ","); got != "echo" {
		t.Errorf("containers %s", got)
	}
}

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }
