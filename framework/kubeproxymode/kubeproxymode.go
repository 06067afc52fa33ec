// Package kubeproxymode reads which mode a cluster's kube-proxy runs in
// (iptables, ipvs, nftables) from the configuration kubeadm publishes, so
// that a claim documented per kube-proxy mode (HYBRID's kind runs) is judged
// against the figure of the mode the cluster really runs.
package kubeproxymode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/claims"
)

// Where kubeadm (and so kind, which bootstraps with kubeadm) publishes
// kube-proxy's configuration: ConfigMap kube-system/kube-proxy, key
// config.conf, a KubeProxyConfiguration (kubeadm's
// cmd/kubeadm/app/phases/addons/proxy manifests; the DaemonSet mounts it
// and runs kube-proxy --config=/var/lib/kube-proxy/config.conf).
const (
	Namespace = "kube-system"
	ConfigMap = "kube-proxy"
	ConfigKey = "config.conf"
)

// ErrNotPublished is wrapped when the cluster has no kube-proxy
// ConfigMap: it runs no kube-proxy (a kube-proxy replacement, or none), or
// one configured another way (the local provider's host-process
// kube-proxy, k3s's embedded one). The mode cannot be read there.
var ErrNotPublished = errors.New("no kube-proxy configuration published")

// DefaultMode is what kube-proxy runs on Linux when its configuration
// leaves mode empty: Kubernetes 1.36's kube-proxy (cmd/kube-proxy/app,
// server_linux.go, platformApplyDefaults) sets an empty mode to iptables.
const DefaultMode = claims.KubeProxyIPTables

// configuration is the part of a KubeProxyConfiguration this package reads.
type configuration struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Mode       string       `yaml:"mode"`
	IPTables   syncSettings `yaml:"iptables"`
	IPVS       syncSettings `yaml:"ipvs"`
	NFTables   syncSettings `yaml:"nftables"`
	Metrics    string       `yaml:"metricsBindAddress"`
}

type syncSettings struct {
	MinSyncPeriod string `yaml:"minSyncPeriod"`
}

// defaultMinSyncPeriod is what kube-proxy 1.36 sets an unset (or zero)
// minSyncPeriod to, per mode (kubernetes pkg/proxy/apis/config/v1alpha1,
// defaults.go: iptables and nftables 1s; ipvs has no default, so 0).
var defaultMinSyncPeriod = map[claims.KubeProxyMode]time.Duration{
	claims.KubeProxyIPTables: time.Second,
	claims.KubeProxyNFTables: time.Second,
	claims.KubeProxyIPVS:     0,
}

// Settings are what a kube-proxy's configuration says about how fast it
// applies a change: its mode and that mode's minSyncPeriod (a change right
// after another waits for it; HYBRID's kind reverts take about 1 s in
// iptables and nftables mode and 60-83 ms in ipvs).
type Settings struct {
	Mode          claims.KubeProxyMode
	MinSyncPeriod time.Duration
	// MinSyncDefaulted: the configuration left minSyncPeriod unset and
	// MinSyncPeriod is kube-proxy's default for the mode.
	MinSyncDefaulted bool
	// MetricsBindAddress is where kube-proxy serves its metrics, as its
	// node sees it (kubeadm's default 127.0.0.1:10249: reachable only on
	// the node itself).
	MetricsBindAddress string
	// PublishedBy is the ConfigMap's PublisherLabel ("" for kubeadm's).
	PublishedBy string
}

func (s Settings) String() string {
	how := ""
	if s.MinSyncDefaulted {
		how = " (kube-proxy's default)"
	}
	out := fmt.Sprintf("mode %s, minSyncPeriod %s%s", s.Mode, s.MinSyncPeriod, how)
	if s.PublishedBy == LocalPublisher {
		out += ", the local provider's host-process kube-proxy with kind's settings"
	} else if s.PublishedBy != "" {
		out += ", configuration published by " + s.PublishedBy
	}
	return out
}

// ReadSettings is Read with the mode's minSyncPeriod.
func ReadSettings(ctx context.Context, c kubernetes.Interface) (Settings, error) {
	cm, err := c.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMap, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return Settings{}, fmt.Errorf("kube-proxy settings: %w", err)
	}
	raw, err := readConfig(ctx, c)
	if err != nil {
		return Settings{}, err
	}
	s, err := ParseSettings(raw)
	if cm != nil {
		s.PublishedBy = cm.Labels[PublisherLabel]
	}
	return s, err
}

// PublisherLabel names, on a kube-proxy ConfigMap kubeadm did not write,
// who did; LocalPublisher is the local provider, whose kube-proxy is a
// host process configured as kind configures its own.
const (
	PublisherLabel = "app.kubernetes.io/managed-by"
	LocalPublisher = "meshclaims-local"
)

// ParseSettings reads the mode and its minSyncPeriod from a
// KubeProxyConfiguration document.
func ParseSettings(raw string) (Settings, error) {
	m, err := Parse(raw)
	if err != nil {
		return Settings{}, err
	}
	var cfg configuration
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		return Settings{}, fmt.Errorf("kube-proxy %s: %w", ConfigKey, err)
	}
	v := map[claims.KubeProxyMode]string{claims.KubeProxyIPTables: cfg.IPTables.MinSyncPeriod, claims.KubeProxyIPVS: cfg.IPVS.MinSyncPeriod, claims.KubeProxyNFTables: cfg.NFTables.MinSyncPeriod}[m]
	s := Settings{Mode: m, MetricsBindAddress: cfg.Metrics}
	if v != "" {
		if s.MinSyncPeriod, err = time.ParseDuration(v); err != nil {
			return Settings{}, fmt.Errorf("kube-proxy %s: %s.minSyncPeriod %q is not a duration (e.g. 1s, 500ms): %w", ConfigKey, m, v, err)
		}
	}
	if s.MinSyncPeriod == 0 {
		s.MinSyncPeriod, s.MinSyncDefaulted = defaultMinSyncPeriod[m], true
	}
	return s, nil
}

// Read returns the mode of the cluster's kube-proxy. No ConfigMap wraps
// ErrNotPublished; a ConfigMap without config.conf, a config.conf that is
// not a KubeProxyConfiguration, or a mode kube-proxy does not run on Linux
// is an error naming what was found and what is accepted.
func Read(ctx context.Context, c kubernetes.Interface) (claims.KubeProxyMode, error) {
	raw, err := readConfig(ctx, c)
	if err != nil {
		return "", err
	}
	return Parse(raw)
}

func readConfig(ctx context.Context, c kubernetes.Interface) (string, error) {
	cm, err := c.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("ConfigMap %s/%s not found: %w (this cluster runs no kube-proxy, or one kubeadm did not configure)", Namespace, ConfigMap, ErrNotPublished)
	}
	if err != nil {
		return "", fmt.Errorf("kube-proxy mode: %w", err)
	}
	raw, ok := cm.Data[ConfigKey]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s/%s has no key %s (keys: %s): not kubeadm's kube-proxy configuration", Namespace, ConfigMap, ConfigKey, strings.Join(keys(cm.Data), ", "))
	}
	return raw, nil
}

// Parse reads the mode of a KubeProxyConfiguration document.
func Parse(raw string) (claims.KubeProxyMode, error) {
	var cfg configuration
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("kube-proxy %s: %w", ConfigKey, err)
	}
	if cfg.Kind != "KubeProxyConfiguration" || !strings.HasPrefix(cfg.APIVersion, "kubeproxy.config.k8s.io/") {
		return "", fmt.Errorf("kube-proxy %s is apiVersion %q kind %q; accepted: apiVersion kubeproxy.config.k8s.io/v1alpha1, kind KubeProxyConfiguration", ConfigKey, cfg.APIVersion, cfg.Kind)
	}
	if cfg.Mode == "" {
		return DefaultMode, nil
	}
	m := claims.KubeProxyMode(cfg.Mode)
	if !slices.Contains(claims.KubeProxyModes, m) {
		return "", fmt.Errorf("kube-proxy %s sets mode %q; accepted: %s (or empty: %s)", ConfigKey, cfg.Mode, modes(), DefaultMode)
	}
	return m, nil
}

func modes() string {
	s := make([]string, len(claims.KubeProxyModes))
	for i, m := range claims.KubeProxyModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
