package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// DefaultKindConfig is the kind config shipped with the suite, relative to
// the repository root.
const DefaultKindConfig = "testdata/kind/cluster.yaml"

// LoadKindConfig decodes a kind cluster config the way kind's own loader
// (sigs.k8s.io/kind/pkg/internal/apis/config/encoding, internal to kind)
// does: apiVersion kind.x-k8s.io/v1alpha4, kind Cluster, strict decoding into
// kind's public v1alpha4 types with unknown fields refused, then kind's
// defaults. It runs before any container is touched, so a typo fails in
// milliseconds; kind's full validation runs again inside Create.
//
// It also refuses configs under which the NetworkPolicy claims could not be
// judged: disableDefaultCNI: true drops kindnet, the CNI that enforces
// NetworkPolicy (since kind v0.24.0), and the suite installs no other CNI.
func LoadKindConfig(path string) (*v1alpha4.Cluster, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kind config: %w", err)
	}
	var tm struct {
		Kind       string `yaml:"kind"`
		APIVersion string `yaml:"apiVersion"`
	}
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("kind config %s: %w", path, err)
	}
	if tm.APIVersion != "kind.x-k8s.io/v1alpha4" || tm.Kind != "Cluster" {
		return nil, fmt.Errorf("kind config %s: apiVersion %q kind %q; accepted: apiVersion kind.x-k8s.io/v1alpha4, kind Cluster",
			path, tm.APIVersion, tm.Kind)
	}
	cfg := &v1alpha4.Cluster{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("kind config %s: %w", path, err)
	}
	v1alpha4.SetDefaultsCluster(cfg)
	if cfg.Networking.DisableDefaultCNI {
		return nil, fmt.Errorf("kind config %s: networking.disableDefaultCNI: true removes kindnet, the CNI that enforces NetworkPolicy (kind >= v0.24.0), and meshclaims installs no other; accepted: false (or unset)", path)
	}
	return cfg, nil
}

// KindKubeProxyModes are the kube-proxy modes a kind cluster can be
// created with (kind v1alpha4 networking.kubeProxyMode). kind's "none" is
// not offered: the suite installs no kube-proxy replacement, so no Service
// would answer.
var KindKubeProxyModes = []v1alpha4.ProxyMode{v1alpha4.IPTablesProxyMode, v1alpha4.IPVSProxyMode, v1alpha4.NFTablesProxyMode}

// KindClusterConfig is the kind config Start creates a cluster from: the
// file at path as LoadKindConfig reads it, with networking.kubeProxyMode
// set to kubeProxyMode unless that is empty. A mode kind cannot run here is
// an error naming it and the accepted ones.
func KindClusterConfig(path, kubeProxyMode string) (*v1alpha4.Cluster, error) {
	if kubeProxyMode != "" && !slices.Contains(KindKubeProxyModes, v1alpha4.ProxyMode(kubeProxyMode)) {
		return nil, fmt.Errorf("kind kube-proxy mode %q; accepted: %s", kubeProxyMode, kindKubeProxyModes())
	}
	cfg, err := LoadKindConfig(path)
	if err != nil {
		return nil, err
	}
	if kubeProxyMode != "" {
		cfg.Networking.KubeProxyMode = v1alpha4.ProxyMode(kubeProxyMode)
	}
	return cfg, nil
}

func kindKubeProxyModes() string {
	s := make([]string, len(KindKubeProxyModes))
	for i, m := range KindKubeProxyModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// findUp looks for rel in dir and its parents (tests run in their package's
// directory, the suite in the repository root), then in the repository the
// binary was built from, so a compiled e2e.test runs from any directory.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if root, err := repo.Root(); err == nil {
		if p := filepath.Join(root, rel); fileExists(p) {
			return p, nil
		}
	}
	return "", errors.New(rel + " not found in the working directory, any parent, or the repository this binary was built from")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
