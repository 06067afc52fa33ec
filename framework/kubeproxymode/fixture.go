package kubeproxymode

import (
	"fmt"
	"os"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// modeLine is the mode line of a KubeProxyConfiguration inside config.conf.
var modeLine = regexp.MustCompile(`(?m)^mode: .*$`)

// FixtureConfigMap reads a kube-proxy ConfigMap manifest (tests keep
// kubeadm's shape in framework/kubeproxymode/testdata) and sets its
// config.conf's mode to mode, for tests that create it on an API server.
func FixtureConfigMap(path, mode string) (*corev1.ConfigMap, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.UnmarshalStrict(raw, cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	conf, ok := cm.Data[ConfigKey]
	if !ok || !modeLine.MatchString(conf) {
		return nil, fmt.Errorf("%s: no %s with a mode line", path, ConfigKey)
	}
	cm.Data[ConfigKey] = modeLine.ReplaceAllString(conf, fmt.Sprintf("mode: %q", mode))
	return cm, nil
}
