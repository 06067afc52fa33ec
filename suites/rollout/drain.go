package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Where Istio's injector puts the drain settings of the annotation
// proxy.istio.io/config (manifests/charts/istio-control/istio-discovery/
// files/injection-template.yaml): the whole override as JSON in the proxy's
// PROXY_CONFIG ({{ protoToJSON .ProxyConfig }}; terminationDrainDuration is
// a field there, not an environment variable of its own), and each
// proxyMetadata entry as an environment variable of the proxy.
const (
	envProxyConfig = "PROXY_CONFIG"
	envExitOnZero  = "EXIT_ON_ZERO_ACTIVE_CONNECTIONS"
)

// proxyDrain is what an injected proxy was given of GUIDE's sidecar drain.
type proxyDrain struct {
	Proxy        bool   // the pod has an istio-proxy container
	TermDrain    string // PROXY_CONFIG's terminationDrainDuration ("" = not set)
	ExitOnZero   string // EXIT_ON_ZERO_ACTIVE_CONNECTIONS ("" = not set)
	ProxyConfigX string // PROXY_CONFIG as the pod carries it, for messages
}

// drainOf reads pod p's istio-proxy environment (container or native
// sidecar). A PROXY_CONFIG that is not JSON is an error naming the pod.
func drainOf(p *corev1.Pod) (proxyDrain, error) {
	var d proxyDrain
	for _, c := range append(append([]corev1.Container{}, p.Spec.Containers...), p.Spec.InitContainers...) {
		if c.Name != steps.ProxyContainer {
			continue
		}
		d.Proxy = true
		for _, e := range c.Env {
			switch e.Name {
			case envExitOnZero:
				d.ExitOnZero = e.Value
			case envProxyConfig:
				d.ProxyConfigX = strings.TrimSpace(e.Value)
				if d.ProxyConfigX == "" {
					continue
				}
				var pc struct {
					TerminationDrainDuration string `json:"terminationDrainDuration"`
				}
				if err := json.Unmarshal([]byte(d.ProxyConfigX), &pc); err != nil {
					return d, fmt.Errorf("pod %s: %s is not the injector's JSON (%q): %w", p.Name, envProxyConfig, d.ProxyConfigX, err)
				}
				d.TermDrain = pc.TerminationDrainDuration
			}
		}
	}
	return d, nil
}

// drainSettings judges every pod: each must carry an istio-proxy whose
// PROXY_CONFIG has terminationDrainDuration 30s and whose environment has
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS=true, as fixtures.SidecarDrainProxyConfigYAML
// asks. A pod without a proxy is a broken measurement (nothing to read),
// not a missing setting.
func drainSettings(pods []corev1.Pod) (verdict.Measurement, error) {
	if len(pods) == 0 {
		return verdict.Measurement{}, fmt.Errorf("no pods to read the drain settings from")
	}
	ok := true
	var parts []string
	for i := range pods {
		d, err := drainOf(&pods[i])
		if err != nil {
			return verdict.Measurement{}, err
		}
		if !d.Proxy {
			return verdict.Measurement{}, fmt.Errorf("pod %s has no %s container: it was not injected, so no drain setting can be read", pods[i].Name, steps.ProxyContainer)
		}
		good := d.TermDrain == fixtures.SidecarDrainDuration && d.ExitOnZero == "true"
		ok = ok && good
		parts = append(parts, fmt.Sprintf("%s: terminationDrainDuration=%q %s=%q", pods[i].Name, d.TermDrain, envExitOnZero, d.ExitOnZero))
	}
	out := "verified"
	if !ok {
		out = "not verified"
	}
	return verdict.Measurement{Outcome: out, Detail: strings.Join(parts, "; ")}, nil
}

// hardenedEchoPods hardens mode m's echo with h for the rest of the spec
// (restored after), waits until the old pods are gone, and returns the new
// ones.
func hardenedEchoPods(ctx context.Context, r *spec.Run, m mode.Mode, h fixtures.Hardening) ([]corev1.Pod, error) {
	if err := steps.Harden(ctx, r, m, h); err != nil {
		return nil, err
	}
	cluster, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	if err := cluster.Kube.WaitQuiet(ctx, m.Namespace(), fixtures.EchoName, r.Env.Config.Timeouts.Quiet); err != nil {
		return nil, err
	}
	pods, err := steps.EchoPods(ctx, r)
	if err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live, nil
}
