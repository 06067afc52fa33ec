package cluster

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigSelector names a kubeconfig file and a context in it, the way a
// user does on the command line (-kubeconfig, -context).
type KubeconfigSelector struct {
	// Path is the kubeconfig file. Empty means kubectl's default loading
	// rules: $KUBECONFIG (a list of files) or ~/.kube/config.
	Path string
	// Context is the context to use. Empty means the file's current-context,
	// the one a workstation switches with `kubectl config use-context`.
	Context string
}

func (s KubeconfigSelector) String() string {
	file := s.Path
	if file == "" {
		file = "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
	}
	if s.Context == "" {
		return fmt.Sprintf("the current context of %s", file)
	}
	return fmt.Sprintf("context %q of %s", s.Context, file)
}

func (s KubeconfigSelector) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if s.Path != "" {
		rules.ExplicitPath = s.Path
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: s.Context})
}

// RESTConfig reads the kubeconfig from disk and builds a REST config. The
// suite calls it exactly once per run, in a provider's Start.
func (s KubeconfigSelector) RESTConfig() (*rest.Config, error) {
	cc := s.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		if raw, rerr := cc.RawConfig(); rerr == nil && s.Context != "" && raw.Contexts[s.Context] == nil {
			names := make([]string, 0, len(raw.Contexts))
			for n := range raw.Contexts {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("resolving %s: %w; accepted: one of its contexts %s", s, err, strings.Join(quoteAll(names), ", "))
		}
		return nil, fmt.Errorf("resolving %s: %w", s, err)
	}
	return cfg, nil
}

// Server reads the kubeconfig from disk and returns the API server URL the
// selected context points at now. The guard uses it only to compare.
func (s KubeconfigSelector) Server() (string, error) {
	cfg, err := s.RESTConfig()
	if err != nil {
		return "", err
	}
	return cfg.Host, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	if len(out) == 0 {
		return []string{"(none)"}
	}
	return out
}
