package cluster

import (
	"strings"
	"testing"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The local node's two cores: workloads request less CPU than GUIDE, and
// say why. New does not start anything for the local provider.
func TestLocalProviderFitsTwoCores(t *testing.T) {
	p, err := New(LocalName, Options{ClusterName: "meshclaims-values-test"})
	if err != nil {
		t.Fatal(err)
	}
	sz := p.Facts().Sizing
	if got := resource.MustParse(sz.CPURequest); got.Cmp(resource.MustParse("50m")) >= 0 || sz.Why == "" {
		t.Errorf("Sizing = %+v; want below GUIDE's 50m, with a reason", sz)
	}
}

// The local node states what it is: the host's processes, its CNI
// directories in its state directory, the netns directory of its
// containerd, and a kube-router that rewrites every host ipset. kind and
// existing state none of it before Start has read their clusters (and
// kind's nodes share the host's cores).
func TestLocalProviderFacts(t *testing.T) {
	p, err := New(LocalName, Options{ClusterName: "meshclaims-facts-test"})
	if err != nil {
		t.Fatal(err)
	}
	f := p.Facts()
	root := p.(*localProvider).Config().Layout().Root
	if !f.HostProcesses || f.NodesShareHost {
		t.Errorf("local node: HostProcesses %v, NodesShareHost %v; want true, false", f.HostProcesses, f.NodesShareHost)
	}
	for what, dir := range map[string]string{"CNI bin": f.CNIBinDir, "CNI conf": f.CNIConfDir} {
		if !strings.HasPrefix(dir, root+"/") {
			t.Errorf("%s directory %q is not in the state directory %s", what, dir, root)
		}
	}
	if f.NetnsDir != "/var/run/netns" {
		t.Errorf("netns directory %q", f.NetnsDir)
	}
	name, version, _ := strings.Cut(f.IpsetRewriter, " ")
	if name != "kube-router" || !semver.IsValid(version) || semver.Compare(version, KubeRouterIpsetFix) >= 0 {
		t.Errorf("ipset rewriter %q, want the node's kube-router before %s", f.IpsetRewriter, KubeRouterIpsetFix)
	}
	for _, other := range []Provider{NewKind(Options{}), NewExisting(KubeconfigSelector{})} {
		want := Facts{NodesShareHost: other.Name() == KindName}
		if got := other.Facts(); got != want {
			t.Errorf("%s before Start: %+v, want %+v", other.Name(), got, want)
		}
	}
}
