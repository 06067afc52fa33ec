package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// kindServiceTrials is how many new Services kubeproxy.kind-service-ready
// times: HYBRID's kind figures are medians of 10 ('10回の中央値').
const kindServiceTrials = 10

// needKubeProxyConfig requires a cluster that publishes its kube-proxy's
// configuration (kubeadm's kube-system/kube-proxy ConfigMap, as kind's
// clusters do, and the local provider, which publishes the file its
// host-process kube-proxy runs from), for claims documented per kube-proxy
// mode: without it the mode, and so the figure to judge against, is
// unknown. A layer need: a kube-proxy replacement runs none, and k3s's
// embedded kube-proxy is configured by flags, so the verdict there is
// inconclusive with the reason, never "not reproduced". Only the absence of
// the ConfigMap is unmet; a ConfigMap that cannot be read, or names a mode
// kube-proxy does not run, passes the need and fails the measurement with
// the error (a broken cluster, not the layer's limit).
var needKubeProxyConfig = spec.Need{Name: "kube-proxy-config", Layer: true, Check: func(ctx context.Context, r *spec.Run) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	if _, err := kubeproxymode.Read(ctx, m.Kube.Client); errors.Is(err, kubeproxymode.ErrNotPublished) {
		return err
	}
	return nil
}}

// kubeProxyServiceReady measures HYBRID's kind figures: the median time
// from creating a Service for echo until its ClusterIP answers, with no
// other Services, timed as kubeproxy.service-scale's first step (the
// in-pod probe, 20 ms attempts). The measurement names the kube-proxy
// mode read from the cluster, which picks the documented value.
func kubeProxyServiceReady(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	set, err := kubeproxymode.ReadSettings(ctx, m.Kube.Client)
	if err != nil {
		return verdict.Measurement{}, err
	}
	kp := set.Mode
	r.SetSetup("%d new Services timed with no other Services; kube-proxy %s (read from %s/%s %s)", kindServiceTrials, set, kubeproxymode.Namespace, kubeproxymode.ConfigMap, kubeproxymode.ConfigKey)
	rs, err := steps.TimeServicesN(ctx, r, scenario.Target(r), "svc-kp", kindServiceTrials)
	if err != nil {
		return verdict.Measurement{}, err
	}
	secs := steps.ReadingSeconds(rs)
	med, err := stats.Percentile(secs, 50)
	if err != nil {
		return verdict.Measurement{}, err
	}
	// The median is the value, as HYBRID's figure is a median; the
	// readings are not Runs, whose mean the judge would take instead.
	extra := map[string]float64{"services_timed": float64(len(secs)), "min_s": slices.Min(secs), "max_s": slices.Max(secs)}
	for i, x := range secs {
		extra[fmt.Sprintf("reading_%02d_s", i+1)] = x
	}
	return verdict.Measurement{Value: verdict.Float64(med), Extra: extra, KubeProxyMode: kp}, nil
}
