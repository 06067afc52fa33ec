package istiod_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/istiod"
	"github.com/meshclaims/meshclaims/framework/istioimages"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
)

// meshedModes are the modes whose namespaces istiod serves.
var meshedModes = []mode.Mode{mode.Sidecar, mode.AmbientL4, mode.AmbientL7}

// TestIstiodOnLocalCluster installs Istio's control plane, built from
// istio.io/istio by make istio-images, on the local provider's real
// cluster through the suite's own set-up (image archives loaded into the
// node, -istio-hub/-istio-tag, the charts of the same Istio commit), and
// checks what istiod proves on its own, each check with its negative
// control:
//   - its validating webhook admits every object the suite deploys, in
//     every mode, and denies a broken VirtualService and
//     AuthorizationPolicy;
//   - its injector makes istio-proxy a native sidecar of a sidecar-mode
//     pod, carrying the hardened run's proxy.istio.io/config, and leaves the
//     outside client and the no-mesh namespace alone;
//   - its CA signs, over gRPC on 15012 with a projected-style token of
//     audience istio-ca, a certificate for each mode's service account that
//     chains to istio-ca-root-cert, and gives another account's token no
//     certificate for this one.
//
// A test rather than suite specs: the specs' set-up waits for every mode's
// workloads, and a sidecar-mode pod cannot start until proxyv2 (pilot-agent
// with Istio's Envoy) is built; these checks need istiod alone.
//
// Runs with MESHCLAIMS_LOCAL=1 as root, MESHCLAIMS_ISTIO_IMAGES (make
// istio-images' directory) and MESHCLAIMS_ISTIO_CHARTS (the same
// istio.io/istio module); make e2e-local sets all three.
func TestIstiodOnLocalCluster(t *testing.T) {
	setuptest.RequireLocal(t, "istiod")
	l := setuptest.Up(t, append([]string{"-mode=none", "-cluster-name=meshclaims-istiod", "-run-id=istiod"}, setuptest.IstioFlags(t)...)...)
	ctx := context.Background()
	s, cfg := l.Suite, l.Config
	t0 := time.Now()
	if err := s.InstallIstio(ctx, istio.ProfileDefault); err != nil {
		t.Fatalf("installing Istio: %v", err)
	}
	t.Logf("istiod installed and ready in %s", time.Since(t0).Round(time.Second))
	k, applier := s.Cluster.Kube, s.Cluster.Applier
	c := applier.Client()
	opts := s.Cluster.Options

	// Preconditions, not outcomes: istiod has written its CA bundle into
	// its webhook configurations (until then the API server cannot call
	// them), and every meshed namespace exists with its service accounts.
	if err := waitWebhooksPatched(ctx, c, cfg.Timeouts.IstioReady); err != nil {
		t.Fatal(err)
	}
	for _, m := range meshedModes {
		tg := fixtures.Target{Namespace: m.Namespace(), Run: cfg.RunID}
		if err := applier.Apply(ctx, fixtures.Namespace(m, cfg.RunID),
			fixtures.ServiceAccount(tg, fixtures.ServiceAccountGood), fixtures.ServiceAccount(tg, fixtures.ServiceAccountBad)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("images", func(t *testing.T) {
		// istiod runs the archive's image (the node's image ID is the
		// config digest make istio-images wrote) and reports the version
		// linked into it, which pilot parses as 1.30, not as "unknown".
		want := archiveConfigDigest(t, "pilot")
		pods, err := k.ReadyPods(ctx, istio.DefaultNamespace, "app=istiod")
		if err != nil || len(pods) == 0 {
			t.Fatalf("no ready istiod pod: %v", err)
		}
		for _, st := range pods[0].Status.ContainerStatuses {
			if st.Name == "discovery" && !strings.HasSuffix(st.ImageID, want) {
				t.Errorf("istiod runs image %s (ID %s), not the archive's %s", st.Image, st.ImageID, want)
			}
		}
		env := s.Environment()
		var recorded bool
		for _, im := range env.Images {
			recorded = recorded || strings.HasSuffix(im.Where, "/discovery") && strings.HasSuffix(im.ID, want)
		}
		if !recorded {
			t.Errorf("the environment does not record istiod's image %s: %+v", want, env.Images)
		}
		for _, im := range env.Images {
			t.Logf("environment: %s  %s  %s", im.Where, im.Image, im.ID)
		}
		resp, err := http.Get("http://" + pods[0].Status.PodIP + ":15014/version")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if v := string(body); !strings.HasPrefix(v, setuptest.IstioVersion(t)+"-") {
			t.Errorf("istiod reports version %q, want %s-<commit>-Clean", v, setuptest.IstioVersion(t))
		} else {
			t.Logf("istiod reports version %s", v)
		}
	})

	t.Run("cni-image", func(t *testing.T) {
		// install-cni's image runs under the node's containerd and its
		// iptables tools (Debian's, both back ends) and nft (istio-cni's
		// native nftables mode, which the local provider uses) load from
		// its own root filesystem. The image's own command is left alone
		// (it would install the CNI plugin on the host); these are
		// --version runs.
		ns := mode.None.Namespace()
		for _, tv := range [][2]string{
			{"iptables-nft", "v1.8.9"}, {"iptables-legacy-save", "v1.8.9"}, {"ip6tables-nft-restore", "v1.8.9"},
			{"nft", "nftables v1.0.6"},
		} {
			tool, want := tv[0], tv[1]
			out, err := runToCompletion(ctx, k.Client, ns, "cni-image-"+tool, "localhost/istio/install-cni:"+setuptest.IstioVersion(t),
				[]string{"/usr/sbin/" + tool, "--version"}, cfg.Timeouts.WorkloadsReady)
			if err != nil {
				t.Errorf("%s in the install-cni image: %v", tool, err)
				continue
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s --version printed %q, want Debian bookworm's %s", tool, out, want)
			}
			t.Logf("install-cni image: %s --version: %s", tool, strings.TrimSpace(out))
		}
		// Negative control: a tool the image does not carry fails to start.
		_, err := runToCompletion(ctx, k.Client, ns, "cni-image-missing", "localhost/istio/install-cni:"+setuptest.IstioVersion(t),
			[]string{"/usr/sbin/tcpdump", "--version"}, cfg.Timeouts.WorkloadsReady)
		switch {
		case err == nil:
			t.Errorf("/usr/sbin/tcpdump ran in the install-cni image, which does not carry it")
		case !strings.Contains(err.Error(), "/usr/sbin/tcpdump"):
			t.Errorf("/usr/sbin/tcpdump failed, but not for being absent: %v", err)
		default:
			t.Logf("negative control: %v", err)
		}
	})

	t.Run("webhook", func(t *testing.T) {
		var objs []client.Object
		for _, m := range append([]mode.Mode{mode.None}, meshedModes...) {
			set, err := fixtures.ForMode(m, opts)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, set...)
			objs = append(objs, fixtures.ClaimObjects(fixtures.Target{Namespace: m.Namespace(), Run: cfg.RunID}, m)...)
		}
		outside, err := fixtures.OutsideSet(opts)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, outside...)
		var istioObjs int
		for _, o := range objs {
			if g := o.GetObjectKind().GroupVersionKind().Group; strings.HasSuffix(g, "istio.io") {
				istioObjs++
			}
		}
		if err := istiod.Admitted(ctx, applier, objs); err != nil {
			t.Errorf("istiod (or the API server) refused fixtures the suite deploys:\n%v", err)
		}
		t.Logf("%d fixtures admitted, %d of them Istio resources istiod validated", len(objs), istioObjs)
		// Negative controls: the same webhook denies broken twins of two of
		// them, so the admission above was istiod's judgement.
		tg := fixtures.Target{Namespace: mode.Sidecar.Namespace(), Run: cfg.RunID}
		for _, broken := range []func(fixtures.Target) (client.Object, string){istiod.BrokenVirtualService, istiod.BrokenAuthorizationPolicy} {
			obj, want := broken(tg)
			if err := istiod.ExpectDenied(ctx, applier, obj, want); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("injection", func(t *testing.T) {
		sidecarNS := fixtures.Target{Namespace: mode.Sidecar.Namespace(), Run: cfg.RunID}
		hardened := fixtures.Harden(fixtures.Echo(sidecarNS, opts.Images, 1), fixtures.GUIDEHardening(mode.Sidecar))
		pod, err := istiod.AdmitPod(ctx, c, hardened)
		if err != nil {
			t.Fatal(err)
		}
		sc, ok, err := istiod.FindSidecar(pod)
		if err != nil || !ok {
			t.Fatalf("hardened echo in %s: no %s injected (%v); init containers %v, containers %v", sidecarNS.Namespace, istiod.ProxyContainer, err, names(pod.Spec.InitContainers), names(pod.Spec.Containers))
		}
		if !sc.Native {
			t.Errorf("%s is not a native sidecar (init container with restartPolicy Always)", istiod.ProxyContainer)
		}
		t.Logf("injected: init containers %v, containers %v, proxy image %s", names(pod.Spec.InitContainers), names(pod.Spec.Containers), sc.Container.Image)
		if d, set, err := sc.TerminationDrain(); err != nil || !set || d != 30*time.Second {
			t.Errorf("terminationDrainDuration in PROXY_CONFIG: %v (set %v, %v); the hardened annotation says 30s", d, set, err)
		}
		if v := sc.Env["EXIT_ON_ZERO_ACTIVE_CONNECTIONS"]; v != "true" {
			t.Errorf("EXIT_ON_ZERO_ACTIVE_CONNECTIONS in %s's environment = %q, want \"true\"", istiod.ProxyContainer, v)
		}
		// Negative control: the same echo without the hardening gets the
		// mesh's defaults, so the values above came from the annotation.
		plainPod, err := istiod.AdmitPod(ctx, c, fixtures.Echo(sidecarNS, opts.Images, 1))
		if err != nil {
			t.Fatal(err)
		}
		plain, ok, err := istiod.FindSidecar(plainPod)
		if err != nil || !ok {
			t.Fatalf("plain echo: no sidecar (%v)", err)
		}
		if d, set, _ := plain.TerminationDrain(); set && d == 30*time.Second {
			t.Errorf("unhardened echo also drains 30s: the check cannot tell the annotation's effect")
		}
		if _, set := plain.Env["EXIT_ON_ZERO_ACTIVE_CONNECTIONS"]; set {
			t.Errorf("unhardened echo also has EXIT_ON_ZERO_ACTIVE_CONNECTIONS")
		}
		// Not injected: the outside client, and echo of the no-mesh namespace.
		outsidePod, err := istiod.AdmitPod(ctx, c, fixtures.PlaintextClient(cfg.RunID, opts.Images))
		if err != nil {
			t.Fatal(err)
		}
		nonePod, err := istiod.AdmitPod(ctx, c, fixtures.Echo(fixtures.Target{Namespace: mode.None.Namespace(), Run: cfg.RunID}, opts.Images, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*corev1.Pod{outsidePod, nonePod} {
			if _, ok, _ := istiod.FindSidecar(p); ok {
				t.Errorf("%s/%s was injected; it is outside the mesh", p.Namespace, p.Name)
			}
		}
	})

	t.Run("ca", func(t *testing.T) {
		pods, err := k.ReadyPods(ctx, istio.DefaultNamespace, "app=istiod")
		if err != nil || len(pods) == 0 {
			t.Fatalf("no ready istiod pod: %v", err)
		}
		ca := istiod.CA{Addr: pods[0].Status.PodIP + ":15012", ServerName: "istiod." + istio.DefaultNamespace + ".svc", ClusterID: "Kubernetes"}
		for _, m := range meshedModes {
			ns := m.Namespace()
			// The root istiod publishes into every namespace; its arrival
			// is a precondition of the check, not what it measures.
			rootPEM, err := waitRootCert(ctx, k.Client, ns, cfg.Timeouts.IstioReady)
			if err != nil {
				t.Fatal(err)
			}
			roots, err := istiod.RootPool(rootPEM)
			if err != nil {
				t.Fatal(err)
			}
			ca.Roots = roots
			good := istiod.SPIFFEID("cluster.local", ns, fixtures.ServiceAccountGood)
			csr, err := istiod.CSR(good)
			if err != nil {
				t.Fatal(err)
			}
			token, err := istiod.ServiceAccountToken(ctx, k.Client, ns, fixtures.ServiceAccountGood, istiod.TokenAudience)
			if err != nil {
				t.Fatal(err)
			}
			chain, err := ca.Sign(ctx, token, csr, time.Hour)
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			if err := istiod.CheckIssued(chain, good, roots); err != nil {
				t.Errorf("%s: %v", m, err)
			} else {
				t.Logf("%s: istiod issued %s (serial %s), chain of %d to the istio-ca-root-cert root", m, good, chain[0].SerialNumber, len(chain))
			}
			// Another account's token asking for this account's identity:
			// istiod signs for the token's account, never for the CSR's.
			badToken, err := istiod.ServiceAccountToken(ctx, k.Client, ns, fixtures.ServiceAccountBad, istiod.TokenAudience)
			if err != nil {
				t.Fatal(err)
			}
			if chain, err := ca.Sign(ctx, badToken, csr, time.Hour); err == nil {
				if istiod.CheckIssued(chain, good, roots) == nil {
					t.Errorf("%s: a token of sa %s got a certificate for %s", m, fixtures.ServiceAccountBad, good)
				}
				bad := istiod.SPIFFEID("cluster.local", ns, fixtures.ServiceAccountBad)
				if err := istiod.CheckIssued(chain, bad, roots); err != nil {
					t.Errorf("%s: with sa %s's token: %v", m, fixtures.ServiceAccountBad, err)
				} else {
					t.Logf("%s: sa %s's token with a CSR for %s got a certificate for %s only", m, fixtures.ServiceAccountBad, good, bad)
				}
			} else {
				t.Logf("%s: sa %s's token refused for %s: %v", m, fixtures.ServiceAccountBad, good, err)
			}
			// And a token not meant for istiod (the API server's audience)
			// is refused, so the signing above rested on the token.
			apiToken, err := istiod.ServiceAccountToken(ctx, k.Client, ns, fixtures.ServiceAccountGood)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ca.Sign(ctx, apiToken, csr, time.Hour); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
				t.Errorf("%s: a token without audience %s: %v, want Unauthenticated", m, istiod.TokenAudience, err)
			}
		}
	})
}

// archiveConfigDigest is the config digest images.json records for image.
func archiveConfigDigest(t *testing.T, image string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(os.Getenv("MESHCLAIMS_ISTIO_IMAGES"), "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m istioimages.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, im := range m.Images {
		if im.Name == image {
			return im.ConfigDigest
		}
	}
	t.Fatalf("images.json has no image %s", image)
	return ""
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// waitWebhooksPatched waits until every webhook of Istio's validating and
// mutating configurations carries a CA bundle.
func waitWebhooksPatched(ctx context.Context, c client.Client, timeout time.Duration) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var v admissionv1.ValidatingWebhookConfigurationList
		var m admissionv1.MutatingWebhookConfigurationList
		if err := c.List(ctx, &v); err != nil {
			return false, err
		}
		if err := c.List(ctx, &m); err != nil {
			return false, err
		}
		var nv, nm int
		for _, cfg := range v.Items {
			for _, w := range cfg.Webhooks {
				if strings.HasSuffix(w.Name, "istio.io") {
					nv++
					if len(w.ClientConfig.CABundle) == 0 {
						why = "validating webhook " + cfg.Name + "/" + w.Name + " has no CA bundle"
						return false, nil
					}
				}
			}
		}
		for _, cfg := range m.Items {
			for _, w := range cfg.Webhooks {
				if strings.HasSuffix(w.Name, "istio.io") {
					nm++
					if len(w.ClientConfig.CABundle) == 0 {
						why = "mutating webhook " + cfg.Name + "/" + w.Name + " has no CA bundle"
						return false, nil
					}
				}
			}
		}
		why = fmt.Sprintf("%d validating and %d mutating Istio webhooks", nv, nm)
		return nv > 0 && nm > 0, nil
	})
	if err != nil {
		return fmt.Errorf("istiod's webhooks not ready: %s: %w", why, err)
	}
	return nil
}

// runToCompletion runs command in a one-container pod of image and returns
// its output once the pod has terminated; a failed or unstartable command
// is an error carrying what the kubelet said. The pod is deleted after.
func runToCompletion(ctx context.Context, cs kubernetes.Interface, ns, name, image string, command []string, timeout time.Duration) (string, error) {
	name = strings.ReplaceAll(name, "_", "-")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "run", Image: image, ImagePullPolicy: corev1.PullNever, Command: command}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	defer cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && (w.Reason == "CreateContainerError" || w.Reason == "RunContainerError" || w.Reason == "ErrImageNeverPull") {
				return false, fmt.Errorf("%s: %s", w.Reason, w.Message)
			}
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	raw, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "run"}).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	if last.Status.Phase != corev1.PodSucceeded {
		var why string
		for _, st := range last.Status.ContainerStatuses {
			if t := st.State.Terminated; t != nil {
				why = fmt.Sprintf("exit %d (%s) %s", t.ExitCode, t.Reason, t.Message)
			}
		}
		return string(raw), fmt.Errorf("pod %s/%s %s: %s; output %q", ns, name, last.Status.Phase, why, raw)
	}
	return string(raw), nil
}

// waitRootCert waits for istiod's istio-ca-root-cert ConfigMap in ns and
// returns its root-cert.pem.
func waitRootCert(ctx context.Context, cs kubernetes.Interface, ns string, timeout time.Duration) (string, error) {
	var root string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		root = cm.Data["root-cert.pem"]
		return root != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("istio-ca-root-cert in %s: %w", ns, err)
	}
	return root, nil
}
