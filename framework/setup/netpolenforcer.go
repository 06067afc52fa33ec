package setup

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/netpolenforcer"
)

// checkNetPolEnforcer refuses, before any write, a cluster the suite did
// not create whose selected specs need NetworkPolicy enforcement when no
// known enforcer runs there (a read of its DaemonSets). The suite's own
// clusters (kind, local) run kube-router, so only -provider=existing is
// looked at. What it found, or that it could not tell, goes into the
// report: the netpol preflight's controls prove enforcement either way.
func (s *Suite) checkNetPolEnforcer(ctx context.Context, cs kubernetes.Interface) error {
	cfg := s.Cfg
	if cfg.Provider != cluster.ExistingName || len(s.NetPolSpecs) == 0 {
		return nil
	}
	if cfg.NetPolEnforcer != "" {
		s.note(fmt.Sprintf("NetworkPolicy enforcer: %s (declared with -netpol-enforcer; not looked up)", cfg.NetPolEnforcer))
		return nil
	}
	res, err := netpolenforcer.Lookup(ctx, cs)
	if err != nil {
		return err
	}
	verdict, err := netPolEnforcerVerdict(res, s.NetPolSpecs, cfg.NetPolEnableCommand != "")
	if err != nil {
		return err
	}
	s.note(verdict)
	s.logf("%s", verdict)
	return nil
}

// netPolEnforcerVerdict is checkNetPolEnforcer's judgement of a lookup
// (pure): the report's note, or the error that stops the run. An enforcer
// found off is accepted when -netpol-enable-command will turn it on
// (netpol.enforcement-not-retroactive needs it off at first).
func netPolEnforcerVerdict(res netpolenforcer.Result, specs []string, enableCommand bool) (string, error) {
	if res.Unreadable != "" {
		return fmt.Sprintf("NetworkPolicy enforcer: not looked up (%s); the netpol preflight proves enforcement", res.Unreadable), nil
	}
	if on := res.Enforcing(); len(on) > 0 {
		var names []string
		for _, f := range on {
			names = append(names, f.String())
		}
		return "NetworkPolicy enforcer: " + strings.Join(names, "; "), nil
	}
	var off []string
	for _, f := range res.Found {
		off = append(off, f.String())
	}
	if len(off) > 0 && enableCommand {
		return fmt.Sprintf("NetworkPolicy enforcer: %s, to be turned on by -netpol-enable-command", strings.Join(off, "; ")), nil
	}
	what := fmt.Sprintf("none of the %d DaemonSets runs one of: %s", res.DaemonSets, netpolenforcer.Names())
	if len(off) > 0 {
		what = "the only one found has enforcement off: " + strings.Join(off, "; ") +
			`; on EKS turn it on (the vpc-cni add-on's configuration value enableNetworkPolicy: "true") and recreate the pods, since enforcement is not retroactive`
	}
	return "", fmt.Errorf("-provider=existing: %d selected spec(s) need NetworkPolicy enforcement (%s) and this cluster shows no enforcer: %s. "+
		"If it enforces NetworkPolicy another way (outside a DaemonSet, or with an enforcer not listed), name it with -netpol-enforcer=NAME: the netpol preflight's controls still prove it; "+
		"or leave those claims out (-ginkgo.label-filter='!area:netpol'). Nothing was written to the cluster or the registry",
		len(specs), strings.Join(specs, ", "), what)
}
