package cluster

import (
	"encoding/json"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestEksctlConfigMatchesGUIDE pins the facts GUIDE's numbers depend on, so
// an edit that changes the measured cluster's shape is caught.
func TestEksctlConfigMatchesGUIDE(t *testing.T) {
	path, err := findUp("testdata/eksctl/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Version string `json:"version"`
		} `json:"metadata"`
		ManagedNodeGroups []struct {
			InstanceType    string `json:"instanceType"`
			DesiredCapacity int    `json:"desiredCapacity"`
			MinSize         int    `json:"minSize"`
			MaxSize         int    `json:"maxSize"`
		} `json:"managedNodeGroups"`
		Addons []struct {
			Name                string `json:"name"`
			ConfigurationValues string `json:"configurationValues"`
		} `json:"addons"`
	}
	// Lenient decode: eksctl owns its schema; only the facts are checked.
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.APIVersion != "eksctl.io/v1alpha5" || c.Kind != "ClusterConfig" {
		t.Errorf("apiVersion/kind = %s/%s", c.APIVersion, c.Kind)
	}
	if c.Metadata.Version != "1.36" {
		t.Errorf("EKS version %q, GUIDE ran 1.36", c.Metadata.Version)
	}
	if len(c.ManagedNodeGroups) != 1 {
		t.Fatalf("%d node groups, want 1", len(c.ManagedNodeGroups))
	}
	ng := c.ManagedNodeGroups[0]
	if ng.InstanceType != "m7g.xlarge" || ng.DesiredCapacity != 3 || ng.MinSize != 3 || ng.MaxSize != 3 {
		t.Errorf("node group %+v, GUIDE ran exactly 3 x m7g.xlarge", ng)
	}
	var netpol bool
	for _, a := range c.Addons {
		if a.Name != "vpc-cni" {
			continue
		}
		var v map[string]string
		if err := json.Unmarshal([]byte(a.ConfigurationValues), &v); err != nil {
			t.Fatalf("vpc-cni configurationValues %q: %v", a.ConfigurationValues, err)
		}
		netpol = v["enableNetworkPolicy"] == "true"
	}
	if !netpol {
		t.Error("vpc-cni must enable NetworkPolicy enforcement (GUIDE §2 needs it)")
	}
}
