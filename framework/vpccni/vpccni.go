// Package vpccni reads, from the DaemonSet the Amazon VPC CNI runs
// (kube-system/aws-node, as the EKS add-on installs it), whether the
// cluster's CNI is the VPC CNI and whether its network policy agent is
// configured to enforce NetworkPolicy on every node, so that a claim about
// that agent (GUIDE: enforcement is not retroactive) runs only where the
// agent is, and a switch of its enforcement can be waited for.
package vpccni

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Where the VPC CNI runs (amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml
// and its Helm chart): DaemonSet kube-system/aws-node, whose container
// aws-eks-nodeagent is the network policy agent (VPC CNI v1.14.0 and
// later). The agent enforces only when started with
// --enable-network-policy=true; the chart renders it from the value
// enableNetworkPolicy, which the EKS add-on's configuration values set.
const (
	Namespace      = "kube-system"
	DaemonSet      = "aws-node"
	AgentContainer = "aws-eks-nodeagent"
	EnableFlag     = "--enable-network-policy"
)

// ErrNotVPCCNI is wrapped when the cluster has no kube-system/aws-node
// DaemonSet: its CNI is not the VPC CNI (kind's kindnet, the local
// provider's kube-router, Calico or Cilium on their own).
var ErrNotVPCCNI = errors.New("no VPC CNI DaemonSet " + Namespace + "/" + DaemonSet)

// ErrNoAgent is wrapped when aws-node runs no network policy agent (a VPC
// CNI before v1.14.0, or the add-on's nodeAgent disabled).
var ErrNoAgent = errors.New("no network policy agent container " + AgentContainer)

// State is what the DaemonSet says of enforcement.
type State struct {
	// Enforcing: the DaemonSet's pod template starts the agent with
	// --enable-network-policy=true.
	Enforcing bool
	// RolledOut: every node runs a pod of the current template (the
	// controller observed its generation, and every scheduled pod is
	// updated and available), so Enforcing holds on every node.
	RolledOut bool
	// Seen is what was read, for logs and measurements.
	Seen string
}

// Read reads kube-system/aws-node. A missing DaemonSet is ErrNotVPCCNI.
func Read(ctx context.Context, c kubernetes.Interface) (State, error) {
	ds, err := c.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return State{}, fmt.Errorf("%w: the cluster's CNI is not the Amazon VPC CNI", ErrNotVPCCNI)
	}
	if err != nil {
		return State{}, fmt.Errorf("reading DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	return StateOf(ds)
}

// StateOf reads one aws-node DaemonSet.
func StateOf(ds *appsv1.DaemonSet) (State, error) {
	var agent *[]string
	for i := range ds.Spec.Template.Spec.Containers {
		if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == AgentContainer {
			agent = &c.Args
		}
	}
	if agent == nil {
		return State{}, fmt.Errorf("DaemonSet %s/%s: %w (the agent ships with VPC CNI v1.14.0 and later)", ds.Namespace, ds.Name, ErrNoAgent)
	}
	on, flag, err := enforcing(*agent)
	if err != nil {
		return State{}, fmt.Errorf("DaemonSet %s/%s container %s: %w", ds.Namespace, ds.Name, AgentContainer, err)
	}
	st := ds.Status
	rolled := st.ObservedGeneration >= ds.Generation &&
		st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
		st.NumberAvailable == st.DesiredNumberScheduled
	return State{
		Enforcing: on,
		RolledOut: rolled,
		Seen: fmt.Sprintf("%s/%s generation %d (observed %d): %d of %d nodes updated, %d available; %s %s",
			ds.Namespace, ds.Name, ds.Generation, st.ObservedGeneration, st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable, AgentContainer, flag),
	}, nil
}

// enforcing reads --enable-network-policy as the agent's flag parser
// (pflag's BoolVar, pkg/config/controller_config.go, default false) does:
// the last occurrence wins, a bare flag is true, "=value" is parsed as a
// bool, and no flag is the default, false. flag says what was found.
func enforcing(args []string) (on bool, flag string, err error) {
	flag = EnableFlag + " absent (the agent's default: false)"
	for _, a := range args {
		switch {
		case a == EnableFlag:
			on, flag = true, a
		case strings.HasPrefix(a, EnableFlag+"="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, EnableFlag+"="))
			if err != nil {
				return false, "", fmt.Errorf("argument %q is not a bool; accepted: %s=true or %s=false", a, EnableFlag, EnableFlag)
			}
			on, flag = v, a
		}
	}
	return on, flag, nil
}
