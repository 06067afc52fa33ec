package setup

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/probeset"
)

// recordIstioCNI states, in the environment, how istio-cni runs where the
// provider set it apart from Istio's defaults (the local provider's native
// nftables mode), with the probe set the host really has: istio-cni falls
// back to iptables when it finds its old ipset or an nft without JSON, and
// the report says what ran, not only what was asked for. Other providers
// keep Istio's defaults, and nothing is stated.
func (s *Suite) recordIstioCNI(ctx context.Context) {
	h, ok := s.Provider().(cluster.IstioCNIHost)
	if !ok {
		return
	}
	text := h.IstioCNISettings()
	if set, err := h.IstioProbeSet(ctx); err != nil {
		text += "; probe set on the host not readable: " + err.Error()
	} else {
		text += "; probe set seen on the host: " + set.Where()
	}
	s.mu.Lock()
	s.envInfo.IstioCNI = text
	s.mu.Unlock()
	s.logf("istio-cni: %s", text)
}

// diagnoseNotReady adds to a workload's readiness failure in namespace ns
// what the host's probe set says, where the suite can read it (the local
// provider): a redirected pod missing from it has its kubelet probes
// denied by ztunnel and never becomes Ready, which the Deployment's
// rollout status alone does not tell.
func (s *Suite) diagnoseNotReady(ctx context.Context, k *kube.Cluster, ns string, err error) error {
	h, ok := s.Provider().(cluster.IstioCNIHost)
	if !ok {
		return err
	}
	if d := probeset.Diagnose(ctx, k.Client, ns, h.IstioProbeSet); d != nil {
		return fmt.Errorf("%w\n%v", err, d)
	}
	return err
}
