package vpccni

import (
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// FixtureDaemonSet reads an aws-node DaemonSet manifest (tests keep the
// release manifest's shape in framework/vpccni/testdata/aws-node.yaml) and
// sets its agent's --enable-network-policy to enforcing, as the add-on's
// enableNetworkPolicy does, for tests that create it on an API server.
func FixtureDaemonSet(path string, enforcing bool) (*appsv1.DaemonSet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.UnmarshalStrict(raw, ds); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range ds.Spec.Template.Spec.Containers {
		c := &ds.Spec.Template.Spec.Containers[i]
		if c.Name != AgentContainer {
			continue
		}
		for j, a := range c.Args {
			if strings.HasPrefix(a, EnableFlag+"=") {
				c.Args[j] = fmt.Sprintf("%s=%t", EnableFlag, enforcing)
				return ds, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no container %s with %s=", path, AgentContainer, EnableFlag)
}
