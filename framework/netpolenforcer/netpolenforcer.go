// Package netpolenforcer tells, by reading the cluster and writing nothing,
// whether a known NetworkPolicy enforcer runs there: the DaemonSets of the
// CNIs and policy agents that enforce NetworkPolicy, and the settings that
// turn one off (the Amazon VPC CNI's node agent ships with enforcement off).
//
// It exists so that -provider=existing can refuse a cluster without
// enforcement before it writes anything. Without it that cluster was found
// out only by the netpol preflight, after the images were pushed and the
// workloads applied. It is a lookup, not a proof: the preflight's positive
// and negative controls still prove enforcement on every run.
package netpolenforcer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Enforcer is one known enforcer as its DaemonSet shows it.
type Enforcer struct {
	// Name is the enforcer's product name, as a user knows it.
	Name string
	// Containers are container names that run it; Images, image name parts
	// (the repository without registry or tag) that run it under any name.
	Containers, Images []string
	// Off, when set, tells from the container that enforcement is turned
	// off, and says by what ("" = on).
	Off func(corev1.Container) string
}

// Known are the enforcers looked for. A cluster whose enforcer is not
// among them (or runs outside any DaemonSet, as the local provider's
// kube-router does) is declared with -netpol-enforcer.
var Known = []Enforcer{
	{Name: "Calico", Containers: []string{"calico-node"}, Images: []string{"calico/node"}},
	{Name: "Cilium", Containers: []string{"cilium-agent"}, Images: []string{"cilium/cilium"}},
	{Name: "GKE Dataplane V2", Containers: []string{"cilium-agent"}, Images: []string{"gke-release/cilium", "anetd"}},
	{Name: "Antrea", Containers: []string{"antrea-agent"}, Images: []string{"antrea/antrea-agent", "antrea/antrea-ubuntu"}},
	{Name: "Weave Net", Containers: []string{"weave-npc"}, Images: []string{"weaveworks/weave-npc"}},
	{Name: "kube-router", Containers: []string{"kube-router"}, Images: []string{"cloudnativelabs/kube-router"}, Off: flagOff("--run-firewall")},
	{Name: "kube-network-policies", Containers: []string{"kube-network-policies"}, Images: []string{"kube-network-policies"}},
	{Name: "Azure Network Policy Manager", Containers: []string{"azure-npm"}, Images: []string{"azure-npm"}},
	// The VPC CNI's node agent is in every aws-node DaemonSet since 1.14,
	// with --enable-network-policy=false unless the add-on's
	// enableNetworkPolicy is "true".
	{Name: "Amazon VPC CNI network policy agent", Containers: []string{"aws-eks-nodeagent", "aws-network-policy-agent"},
		Images: []string{"amazon/aws-network-policy-agent"}, Off: flagNotTrue("--enable-network-policy")},
}

// Found is one enforcer the lookup found, on or off.
type Found struct {
	Name string
	// Where is namespace/daemonset[container].
	Where string
	// Off says what turns it off ("" = it enforces).
	Off string
}

func (f Found) String() string {
	if f.Off != "" {
		return fmt.Sprintf("%s (%s) with enforcement off: %s", f.Name, f.Where, f.Off)
	}
	return fmt.Sprintf("%s (%s)", f.Name, f.Where)
}

// Result is what the lookup read.
type Result struct {
	Found []Found
	// Unreadable says why the DaemonSets could not be listed ("" = they were).
	Unreadable string
	// DaemonSets is how many DaemonSets were read.
	DaemonSets int
}

// Enforcing are the found enforcers that are on.
func (r Result) Enforcing() []Found {
	var on []Found
	for _, f := range r.Found {
		if f.Off == "" {
			on = append(on, f)
		}
	}
	return on
}

// Lookup lists the DaemonSets of every namespace (a read) and matches them
// against Known. A user who may not list DaemonSets cluster-wide gets a
// Result with Unreadable set, not an error: the lookup cannot tell, and the
// preflight still can.
func Lookup(ctx context.Context, cs kubernetes.Interface) (Result, error) {
	list, err := cs.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return Result{Unreadable: "listing DaemonSets in every namespace is forbidden to this user"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("looking for a NetworkPolicy enforcer: listing DaemonSets: %w", err)
	}
	return Match(list.Items), nil
}

// Match matches DaemonSets against Known (pure: Lookup's logic).
func Match(dss []appsv1.DaemonSet) Result {
	res := Result{DaemonSets: len(dss)}
	for _, ds := range dss {
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, e := range Known {
				if !e.runs(c) {
					continue
				}
				f := Found{Name: e.Name, Where: fmt.Sprintf("%s/%s[%s]", ds.Namespace, ds.Name, c.Name)}
				if e.Off != nil {
					f.Off = e.Off(c)
				}
				res.Found = append(res.Found, f)
				break
			}
		}
	}
	return res
}

func (e Enforcer) runs(c corev1.Container) bool {
	if slices.Contains(e.Containers, c.Name) {
		return true
	}
	repo := imageRepository(c.Image)
	for _, im := range e.Images {
		if repo == im || strings.HasSuffix(repo, "/"+im) {
			return true
		}
	}
	return false
}

// imageRepository is an image reference without its tag and digest.
func imageRepository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// flagValue is the value of --name=v or "--name v" in the container's
// command and args, and whether it is given.
func flagValue(c corev1.Container, name string) (string, bool) {
	argv := append(slices.Clone(c.Command), c.Args...)
	val, given := "", false
	for i, a := range argv {
		switch {
		case strings.HasPrefix(a, name+"="):
			val, given = strings.TrimPrefix(a, name+"="), true
		case a == name:
			given = true
			val = "true"
			if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
				val = argv[i+1]
			}
		}
	}
	return val, given
}

// flagOff: enforcement is on unless the flag is given as false.
func flagOff(name string) func(corev1.Container) string {
	return func(c corev1.Container) string {
		if v, ok := flagValue(c, name); ok && strings.EqualFold(v, "false") {
			return fmt.Sprintf("%s=%s", name, v)
		}
		return ""
	}
}

// flagNotTrue: enforcement is off unless the flag is given as true.
func flagNotTrue(name string) func(corev1.Container) string {
	return func(c corev1.Container) string {
		v, ok := flagValue(c, name)
		if !ok {
			return name + " not given (off by default)"
		}
		if !strings.EqualFold(v, "true") {
			return fmt.Sprintf("%s=%s", name, v)
		}
		return ""
	}
}

// Names lists Known's names, for messages.
func Names() string {
	var ns []string
	for _, e := range Known {
		ns = append(ns, e.Name)
	}
	return strings.Join(ns, ", ")
}
