package istio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"sigs.k8s.io/yaml"
)

// Chart is one of Istio's Helm charts, named as in Istio's repository.
type Chart string

const (
	ChartBase    Chart = "base"
	ChartIstiod  Chart = "istiod"
	ChartCNI     Chart = "cni"
	ChartZtunnel Chart = "ztunnel"
)

// Release is the Helm release name each chart is installed as (the names
// Istio's Helm documentation uses).
func (c Chart) Release() string {
	switch c {
	case ChartBase:
		return "istio-base"
	case ChartCNI:
		return "istio-cni"
	}
	return string(c)
}

// sourceTreeDirs are where the charts sit in Istio's source tree
// (istio.io/istio's manifests/charts), whose directory names differ from
// the chart names.
var sourceTreeDirs = map[Chart]string{
	ChartBase:    "base",
	ChartIstiod:  "istio-control/istio-discovery",
	ChartCNI:     "istio-cni",
	ChartZtunnel: "ztunnel",
}

// ChartsFor lists the charts of a profile in install order (CRDs first,
// then the control plane, then the node agents that need it).
func ChartsFor(p Profile) ([]Chart, error) {
	switch p {
	case ProfileDefault:
		return []Chart{ChartBase, ChartIstiod}, nil
	case ProfileAmbient:
		return []Chart{ChartBase, ChartIstiod, ChartCNI, ChartZtunnel}, nil
	}
	_, err := ParseProfile(string(p))
	return nil, err
}

// ChartSource is where charts are loaded from: exactly one of a chart
// repository URL or a local directory.
type ChartSource struct {
	// RepoURL is a Helm chart repository (Istio's is DefaultRepoURL); the
	// chart version must equal the Istio version.
	RepoURL string
	// Dir is a local directory holding either `helm pull` archives
	// (istiod-1.30.2.tgz), unpacked charts (istiod/), or Istio's source tree
	// layout (manifests/charts, or its contents). Charts from the source tree
	// carry version 1.0.0 whatever Istio they hold, so their chart version is
	// not checked; the image tag set from the Istio version is.
	Dir string
}

// Validate requires exactly one source.
func (s ChartSource) Validate() error {
	if (s.RepoURL == "") == (s.Dir == "") {
		return fmt.Errorf("chart source: repository %q and directory %q; accepted: exactly one of a repository URL or a local directory", s.RepoURL, s.Dir)
	}
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("chart source: directory %q does not exist or is not a directory", s.Dir)
		}
	}
	return nil
}

// Load loads chart c at version.
func (s ChartSource) Load(c Chart, version string) (*chart.Chart, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Dir != "" {
		return s.loadDir(c, version)
	}
	return s.loadRepo(c, version)
}

func (s ChartSource) loadDir(c Chart, version string) (*chart.Chart, error) {
	roots := []string{s.Dir}
	if fi, err := os.Stat(filepath.Join(s.Dir, "manifests", "charts")); err == nil && fi.IsDir() {
		roots = append(roots, filepath.Join(s.Dir, "manifests", "charts"))
	}
	var tried []string
	for _, root := range roots {
		for _, p := range []string{
			filepath.Join(root, fmt.Sprintf("%s-%s.tgz", c, version)),
			filepath.Join(root, string(c)),
			filepath.Join(root, sourceTreeDirs[c]),
		} {
			tried = append(tried, p)
			if !isChart(p) {
				continue
			}
			ch, err := loader.Load(p)
			if err != nil {
				return nil, fmt.Errorf("chart %s from %s: %w", c, p, err)
			}
			if ch.Name() != string(c) {
				return nil, fmt.Errorf("chart at %s is named %q, want %q", p, ch.Name(), c)
			}
			return ch, nil
		}
	}
	return nil, fmt.Errorf("chart %s not found in %s (tried %v)", c, s.Dir, tried)
}

// isChart: a chart archive, or a directory with a Chart.yaml (Istio's
// module root also has a cni/ directory that is Go code, not a chart).
func isChart(p string) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	if !fi.IsDir() {
		return true
	}
	_, err = os.Stat(filepath.Join(p, "Chart.yaml"))
	return err == nil
}

// helmCacheDir keeps downloaded charts and repository indexes out of the
// user's own Helm configuration.
func helmCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "meshclaims", "helm")
	}
	return filepath.Join(os.TempDir(), "meshclaims-helm")
}

func (s ChartSource) loadRepo(c Chart, version string) (*chart.Chart, error) {
	settings := cli.New()
	cache := helmCacheDir()
	settings.RepositoryCache = filepath.Join(cache, "repository")
	settings.RepositoryConfig = filepath.Join(cache, "repositories.yaml")
	if err := os.MkdirAll(settings.RepositoryCache, 0o755); err != nil {
		return nil, err
	}
	opts := action.ChartPathOptions{RepoURL: s.RepoURL, Version: version}
	path, err := opts.LocateChart(string(c), settings)
	if err != nil {
		return nil, fmt.Errorf("chart %s version %s from %s: %w", c, version, s.RepoURL, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("chart %s from %s: %w", c, path, err)
	}
	if ch.Metadata.Version != version {
		return nil, fmt.Errorf("chart %s from %s has version %s, want %s", c, s.RepoURL, ch.Metadata.Version, version)
	}
	return ch, nil
}

// Values are the chart values the installer sets for chart c: the profile,
// the image hub and tag (Options.ImageTag), then the cluster's own values
// (Options.ClusterValues), on top of which the user's per-chart values from
// Options.ValuesFile are merged, and last, for istiod with
// Options.Proxy ProxyUpstreamEnvoy, UpstreamEnvoyIstiodValues.
func Values(c Chart, o Options, user map[string]any) map[string]any {
	o = o.withDefaults()
	// hub/tag sit under global for istiod, and at the top level of
	// ztunnel's and cni's values; setting both is what Istio's own
	// installer (istioctl) does.
	v := map[string]any{
		"hub": o.Hub,
		"tag": o.ImageTag(),
		"global": map[string]any{
			"hub":            o.Hub,
			"tag":            o.ImageTag(),
			"istioNamespace": o.Namespace,
		},
	}
	// The charts know profiles as overlays (files/profile-<name>.yaml) and
	// refuse "default", which is simply the absence of one.
	if o.Profile != ProfileDefault {
		v["profile"] = string(o.Profile)
	}
	if c == ChartBase {
		v["defaultRevision"] = "default"
	}
	if c == ChartIstiod && o.Revision != "" {
		// istiod-<rev>, its own injector (namespaces labelled
		// istio.io/rev=<rev>) and validator; no default webhook, no tag.
		v["revision"] = o.Revision
	}
	if o.ExactImages {
		ref := func(image string) string { return o.Hub + "/" + image + ":" + o.ImageTag() }
		switch c {
		case ChartIstiod:
			v["image"] = ref("pilot")
			g := v["global"].(map[string]any)
			g["proxy"] = map[string]any{"image": ref("proxyv2")}
			g["proxy_init"] = map[string]any{"image": ref("proxyv2")}
		case ChartCNI:
			v["image"] = ref("install-cni")
		case ChartZtunnel:
			v["image"] = ref("ztunnel")
		}
	}
	if cv := o.ClusterValues[c]; cv != nil {
		v = mergeValues(v, deepCopyValues(cv))
	}
	v = mergeValues(v, deepCopyValues(user))
	// Upstream Envoy's settings go last: a user's values cannot turn back
	// on a filter this Envoy would reject.
	if c == ChartIstiod && o.Proxy == ProxyUpstreamEnvoy {
		v = mergeValues(v, UpstreamEnvoyIstiodValues())
	}
	return v
}

// deepCopyValues copies nested maps, so merging never writes into the
// caller's Options.
func deepCopyValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = deepCopyValues(vm)
		}
		out[k] = v
	}
	return out
}

// mergeValues merges src over dst, recursing into maps.
func mergeValues(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}

// LoadValuesFile reads per-chart values: a YAML map from chart name to
// that chart's values. Unknown chart names are an error (a typo would
// silently drop settings otherwise).
func LoadValuesFile(path string) (map[Chart]map[string]any, error) {
	out := map[Chart]map[string]any{}
	if path == "" {
		return out, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("istio values: %w", err)
	}
	var m map[string]map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("istio values %s: %w", path, err)
	}
	var errs []error
	for k, v := range m {
		c := Chart(k)
		if _, ok := sourceTreeDirs[c]; !ok {
			errs = append(errs, fmt.Errorf("istio values %s: unknown chart %q; accepted: base, istiod, cni, ztunnel", path, k))
			continue
		}
		if v == nil {
			v = map[string]any{}
		}
		out[c] = v
	}
	return out, errors.Join(errs...)
}
