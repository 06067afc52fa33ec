package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/images"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// kindEnv gates the tests that create a real kind cluster on Podman: they
// need root, Podman set up by make kind-deps, the node image of make
// kind-node-image, and the machine's one-at-a-time cluster lock; nothing
// in make test may need Podman.
const (
	kindEnv          = "MESHCLAIMS_KIND"
	kindNodeImageEnv = "MESHCLAIMS_KIND_NODE_IMAGE"
)

// TestKindOnPodman creates the multi-node cluster of testdata/kind/podman.yaml
// through kind's Go API on Podman from the node image of make
// kind-node-image, and checks what the suite relies on: every node Ready,
// pods on two workers reaching each other (kube-router's routes), a
// NetworkPolicy enforced between them (with its allow control), an image
// archive loaded into every node by kind's loader, and, after Delete,
// nothing of the cluster left on the host (the check's positive control
// is the same check taken while the cluster exists).
func TestKindOnPodman(t *testing.T) {
	if os.Getenv(kindEnv) != "1" {
		t.Skipf("%s=1 not set: this test creates a kind cluster on Podman (root, make kind-deps, make kind-node-image, hold /tmp/meshclaims-cluster.lock)", kindEnv)
	}
	nodeImage := os.Getenv(kindNodeImageEnv)
	if nodeImage == "" {
		t.Fatalf("%s=1 needs %s, the node image to run (make kind-node-image loads localhost/kindest/node:v1.36.3-meshclaims)", kindEnv, kindNodeImageEnv)
	}
	t.Setenv(KindProviderEnv, "podman")
	if os.Getenv("CONTAINERS_CONF") == "" {
		conf, err := findUp("hack/kind/containers.conf")
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("CONTAINERS_CONF", conf)
	}
	cfgPath, err := findUp("testdata/kind/podman.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	before, err := SnapshotHost(ctx, "podman")
	if err != nil {
		t.Fatal(err)
	}
	k := NewKind(Options{ClusterName: "meshclaims-kindtest", KindConfig: cfgPath, NodeImage: nodeImage,
		KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig")})
	// Delete and the leftovers check run however the test ends, so a
	// failed creation is checked for leftovers too.
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			if err := k.Delete(context.Background()); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
		after, err := SnapshotHost(context.Background(), "podman")
		if err != nil {
			t.Fatal(err)
		}
		if left := after.Since(before); len(left) > 0 {
			t.Errorf("after Delete the cluster left on the host:\n%s", FormatLeftovers(left))
		} else {
			t.Log("after Delete: no container, network, volume, image, iptables rule, mount or cgroup of the cluster is left")
		}
	})
	start := time.Now()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Logf("cluster created in %.0f s: %s", time.Since(start).Seconds(), k.Describe())
	// The node image's kube-router (v2.1.0) rewrites every host ipset, so
	// the provider must have found it in the cluster's DaemonSets and
	// state it (kuberouter.go; its unit test has the negative controls;
	// what the mesh makes of it is framework/setup's istiovalues_test.go).
	if got := k.Facts().IpsetRewriter; !strings.Contains(got, kubeRouterImage) {
		t.Errorf("ipset rewriter on the node image's cluster %q, want %s", got, kubeRouterImage)
	} else {
		t.Logf("ipset rewriter: %s", got)
	}

	during, err := SnapshotHost(ctx, "podman")
	if err != nil {
		t.Fatal(err)
	}
	added := during.Since(before)
	t.Logf("what the cluster added to the host:\n%s", FormatLeftovers(added))
	for _, want := range []string{"containers", "volumes", "iptables rules", "mounts"} {
		if len(added[want]) == 0 {
			t.Errorf("positive control: the clean-up check sees no %s added by a running cluster, so it could not see them left behind", want)
		}
	}

	cs, err := kubernetes.NewForConfig(k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	workers := readyNodes(ctx, t, cs)
	waitForPodRoutes(ctx, t, cs)
	checkPodNetworkAndPolicy(ctx, t, cs, workers)
	checkLoadImage(ctx, t, k)

	start = time.Now()
	if err := k.Delete(ctx); err != nil {
		t.Fatalf("delete: %v", err)
	}
	deleted = true
	t.Logf("cluster deleted in %.0f s", time.Since(start).Seconds())
}

// readyNodes waits for the three nodes to be Ready and returns the workers.
func readyNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	var workers []string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		workers = nil
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
			if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
				workers = append(workers, n.Name)
			}
		}
		return len(nodes.Items) == 3 && ready == 3, nil
	})
	if err != nil || len(workers) != 2 {
		t.Fatalf("want 3 Ready nodes (1 control plane, 2 workers): %v (workers %v)", err, workers)
	}
	return workers
}

// waitForPodRoutes waits until each node has a route to every other
// node's pod CIDR (kube-router learns them over BGP a few seconds after
// it starts): the precondition of the cross-node probes, read from the
// nodes' routing tables, not from the traffic the probes then measure.
func waitForPodRoutes(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, n := range nodes.Items {
		for _, o := range nodes.Items {
			if o.Name == n.Name {
				continue
			}
			if o.Spec.PodCIDR == "" {
				t.Fatalf("node %s has no pod CIDR", o.Name)
			}
			var out []byte
			err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				out, err = exec.CommandContext(ctx, "podman", "exec", n.Name, "ip", "route", "show", o.Spec.PodCIDR).CombinedOutput()
				return err == nil && strings.Contains(string(out), "via"), nil
			})
			if err != nil {
				t.Fatalf("node %s has no route to %s's pod CIDR %s: %v (%s)", n.Name, o.Name, o.Spec.PodCIDR, err, out)
			}
		}
	}
	t.Logf("every node routes to every other node's pod CIDR (%.0f s after the nodes were Ready)", time.Since(start).Seconds())
}

// checkPodNetworkAndPolicy runs busybox's httpd (from the kube-router
// image the node preloads) on one worker and fetches from it on the
// other: allowed with no policy, refused under a deny-all ingress policy,
// allowed again when a policy admits the client.
func checkPodNetworkAndPolicy(ctx context.Context, t *testing.T, cs kubernetes.Interface, workers []string) {
	t.Helper()
	ns := "kindtest-net"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	busybox := func(name, node string, labels map[string]string, args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{
				NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: kubeRouterImage, ImagePullPolicy: corev1.PullNever,
					Command: append([]string{"/bin/busybox"}, args...)}},
			},
		}
	}
	server, err := cs.CoreV1().Pods(ns).Create(ctx, busybox("server", workers[0], map[string]string{"app": "server"}, "httpd", "-f", "-p", "8080", "-h", "/etc"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		server, err = cs.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{})
		return err == nil && server.Status.Phase == corev1.PodRunning && server.Status.PodIP != "", nil
	})
	if err != nil {
		t.Fatalf("server pod on %s not running: %v (status %+v)", workers[0], err, server.Status)
	}
	probe := func(name string) corev1.PodPhase {
		t.Helper()
		p := busybox(name, workers[1], map[string]string{"app": "client"}, "sh", "-c", fmt.Sprintf("printf 'GET /passwd HTTP/1.0\\r\\n\\r\\n' | /bin/busybox nc -w 5 %s 8080 | /bin/busybox grep -q '^root:'", server.Status.PodIP))
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		var state string
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			phase = got.Status.Phase
			for _, c := range got.Status.ContainerStatuses {
				if tr := c.State.Terminated; tr != nil {
					state = fmt.Sprintf("exit %d %s %s", tr.ExitCode, tr.Reason, tr.Message)
				}
			}
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		// The server serves /etc, where the image has passwd (images.Pack
		// writes it). nc, not busybox's wget, which exits 139 (SIGSEGV) in
		// this image (run 6).
		logs, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		t.Logf("probe %s from %s to %s (%s): %s (%s) logs %q (err %v)", name, workers[1], server.Status.PodIP, workers[0], phase, state, strings.TrimSpace(string(logs)), err)
		return phase
	}
	if got := probe("open"); got != corev1.PodSucceeded {
		t.Fatalf("pod on %s cannot reach a pod on %s with no policy: %s", workers[1], workers[0], got)
	}
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-router syncs policies on change; a fixed settle time, not a
	// wait for the blocked outcome the probe then measures.
	time.Sleep(10 * time.Second)
	if got := probe("denied"); got != corev1.PodFailed {
		t.Errorf("deny-all ingress NetworkPolicy not enforced across nodes: probe %s", got)
	}
	allow := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-client", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, allow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	if got := probe("allowed"); got != corev1.PodSucceeded {
		t.Errorf("a policy admitting the client did not let it through: probe %s", got)
	}
}

// kubeRouterImage is the kube-router image of the node image
// (framework/kindnode.KubeRouterImage; that package is not imported here,
// the cluster package does not depend on how the image was made).
const kubeRouterImage = "localhost/meshclaims/kube-router:v2.1.0"

// checkLoadImage loads a freshly built image archive with the provider's
// LoadImage (kind's own loader) and finds it in every node's containerd.
func checkLoadImage(ctx context.Context, t *testing.T, k *Kind) {
	t.Helper()
	tag := fmt.Sprintf("kindload-%d", time.Now().UnixNano())
	root, err := findUp("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Build(ctx, images.Spec{MainPackage: "./cmd/localk8s/pause", Dir: filepath.Dir(root), LDFlags: "-s -w", BinaryPath: "/pause",
		ImageConfig: images.ImageConfig{Version: tag}})
	if err != nil {
		t.Fatal(err)
	}
	ref := images.ImageRef("pause", tag)
	tar := filepath.Join(t.TempDir(), "probe.tar")
	if err := images.WriteTarball(img.Image, ref, tar); err != nil {
		t.Fatal(err)
	}
	if err := k.LoadImage(ctx, tar); err != nil {
		t.Fatalf("LoadImage: %v", err)
	}
	nodes, err := k.kind.ListNodes(k.opts.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		out, err := exec.CommandContext(ctx, "podman", "exec", n.String(), "ctr", "-n", "k8s.io", "images", "ls", "-q").CombinedOutput()
		if err != nil {
			t.Fatalf("listing images on %s: %v: %s", n.String(), err, out)
		}
		if !strings.Contains(string(out), ref) {
			t.Errorf("node %s lacks %s after LoadImage; it has:\n%s", n.String(), ref, out)
		}
	}
}
