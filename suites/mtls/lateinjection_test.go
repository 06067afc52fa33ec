package mtls

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// latePod is a pod of the spec's Deployment as the API server stores it:
// the fixture's template, uninjected.
func latePod(t *testing.T, name, uid string) *corev1.Pod {
	t.Helper()
	d := fixtures.LateEcho(fixtures.Target{Namespace: fixtures.LateInjectionNamespace, Run: "r1"}, fixtures.Images{Workload: "meshclaims/workload:dev"})
	tmpl := d.Spec.Template.DeepCopy()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, UID: types.UID(uid), Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
}

// lateInjected adds what Istio 1.30's injector adds with native sidecars
// (istio/istio pkg/kube/inject/testdata/inject/native-sidecar.yaml.injected):
// the status annotation, istio-init, and istio-proxy as an init container
// with restartPolicy Always.
func lateInjected(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	always := corev1.ContainerRestartPolicyAlways
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["sidecar.istio.io/status"] = `{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert","istio-ca-crl"],"imagePullSecrets":null,"revision":"default"}`
	p.Spec.InitContainers = append(p.Spec.InitContainers,
		corev1.Container{Name: "istio-init", Image: "localhost/istio/proxyv2:1.30.3-dev", Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337"}},
		corev1.Container{Name: steps.ProxyContainer, Image: "localhost/istio/proxyv2:1.30.3-dev", Args: []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"}, RestartPolicy: &always})
	return p
}

func TestLateInjectionJudged(t *testing.T) {
	c := claimstest.Claim(t, "sidecar.injection-not-retroactive")
	before := latePod(t, "echo-5d8f7c9b4-abcde", "u-before")
	created := lateInjected(latePod(t, "echo-after-6c4b8d7f5-fghij", "u-created"))
	restarted := lateInjected(latePod(t, "echo-7f9c6d5b8-klmno", "u-restarted"))

	got, err := judgeLateInjection(before, before, created, restarted)
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.Sidecar, got); v.Result != verdict.Reproduced {
		t.Errorf("old pod uninjected, new ones injected: %s (%s)", v.Result, v.Reason)
	}
	// A running pod that got the proxy, or a restart that did not, contradicts the claim.
	for name, m := range map[string]func() (verdict.Measurement, error){
		"running pod injected": func() (verdict.Measurement, error) {
			return judgeLateInjection(before, lateInjected(before), created, restarted)
		},
		"restarted pod not injected": func() (verdict.Measurement, error) { return judgeLateInjection(before, before, created, before) },
	} {
		got, err := m()
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != name || verdict.Judge(c, mode.Sidecar, got).Result != verdict.NotReproduced {
			t.Errorf("%s: %s %s", name, got.Outcome, got.Detail)
		}
	}
	// Preconditions: each makes the measurement fail, never pass.
	errs := map[string]error{}
	_, errs["is injected without istio-injection"] = judgeLateInjection(lateInjected(before), lateInjected(before), created, restarted)
	_, errs["does not act on this namespace"] = judgeLateInjection(before, before, before, restarted)
	_, errs["was replaced"] = judgeLateInjection(before, latePod(t, before.Name, "u-other"), created, restarted)
	for want, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
}
