package rollout

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// injected is an echo pod as Istio's injection template leaves it (the
// env of istio-proxy: PROXY_CONFIG as "{{ protoToJSON .ProxyConfig }}" in a
// block scalar, so with a trailing newline, as in pkg/kube/inject testdata
// hello-probes-proxyHoldApplication-ProxyConfig.yaml.injected; then each
// proxyMetadata entry as its own variable). native puts the proxy among the
// init containers (native sidecars, restartPolicy Always).
func injected(name, proxyConfig string, metadata map[string]string, native bool) corev1.Pod {
	env := []corev1.EnvVar{
		{Name: "PILOT_CERT_PROVIDER", Value: "istiod"},
		{Name: "CA_ADDR", Value: "istiod.istio-system.svc:15012"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	if proxyConfig != "" {
		env = append(env, corev1.EnvVar{Name: envProxyConfig, Value: proxyConfig + "\n"})
	}
	env = append(env, corev1.EnvVar{Name: "ISTIO_META_APP_CONTAINERS", Value: "echo"})
	for k, v := range metadata {
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	proxy := corev1.Container{Name: steps.ProxyContainer, Args: []string{"proxy", "sidecar"}, Env: env}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Containers = []corev1.Container{{Name: "echo"}}
	p.Spec.InitContainers = []corev1.Container{{Name: "istio-init"}}
	if native {
		always := corev1.ContainerRestartPolicyAlways
		proxy.RestartPolicy = &always
		p.Spec.InitContainers = append(p.Spec.InitContainers, proxy)
	} else {
		p.Spec.Containers = append(p.Spec.Containers, proxy)
	}
	return p
}

func TestDrainSettings(t *testing.T) {
	c := claimstest.Claim(t, "rollout.sidecar-drain-settings")
	exit := map[string]string{envExitOnZero: "true"}
	// protojson of the annotation's ProxyConfig: proxyMetadata (field 24)
	// before terminationDrainDuration (field 29).
	hardened := `{"proxyMetadata":{"EXIT_ON_ZERO_ACTIVE_CONNECTIONS":"true"},"terminationDrainDuration":"30s"}`
	cases := []struct {
		name string
		pods []corev1.Pod
		want verdict.Result
	}{
		{"hardened, native sidecars", []corev1.Pod{injected("echo-a", hardened, exit, true), injected("echo-b", hardened, exit, true)}, verdict.Reproduced},
		{"hardened, classic sidecar", []corev1.Pod{injected("echo-a", hardened, exit, false)}, verdict.Reproduced},
		// Negative controls: a pod injected without the annotation (the old
		// ReplicaSet), one with only the drain, one with only the exit.
		{"one pod injected before the annotation", []corev1.Pod{injected("echo-a", hardened, exit, true), injected("echo-old", "", nil, true)}, verdict.NotReproduced},
		{"drain without exit-on-zero", []corev1.Pod{injected("echo-a", `{"terminationDrainDuration":"30s"}`, nil, true)}, verdict.NotReproduced},
		{"exit-on-zero with the default drain", []corev1.Pod{injected("echo-a", `{"proxyMetadata":{"EXIT_ON_ZERO_ACTIVE_CONNECTIONS":"true"}}`, exit, true)}, verdict.NotReproduced},
		{"another drain duration", []corev1.Pod{injected("echo-a", `{"terminationDrainDuration":"5s"}`, exit, true)}, verdict.NotReproduced},
	}
	for _, k := range cases {
		got, err := drainSettings(k.pods)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if v := verdict.Judge(c, mode.Sidecar, got); v.Result != k.want {
			t.Errorf("%s: %s (%s), want %s", k.name, v.Result, v.Reason, k.want)
		}
	}
	got, _ := drainSettings([]corev1.Pod{injected("echo-a", hardened, exit, true)})
	if !strings.Contains(got.Detail, `echo-a: terminationDrainDuration="30s" EXIT_ON_ZERO_ACTIVE_CONNECTIONS="true"`) {
		t.Errorf("detail %q", got.Detail)
	}
	// Broken measurements: nothing injected, nothing to read, bad JSON.
	plain := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo"}}}}
	if _, err := drainSettings([]corev1.Pod{plain}); err == nil || !strings.Contains(err.Error(), "echo-plain has no istio-proxy") {
		t.Errorf("no proxy: %v", err)
	}
	if _, err := drainSettings(nil); err == nil {
		t.Error("no pods judged")
	}
	if _, err := drainSettings([]corev1.Pod{injected("echo-x", "terminationDrainDuration: 30s", exit, true)}); err == nil || !strings.Contains(err.Error(), "echo-x") {
		t.Errorf("YAML in PROXY_CONFIG: %v", err)
	}
}
