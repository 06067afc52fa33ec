package netpol

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: in a namespace of the spec's own, outside the mesh, echo runs
// and answers before the VPC CNI enforces NetworkPolicy; the run turns
// enforcement on (-netpol-enable-command); a policy allows ingress to echo
// on TCP 9999 only; the no-mesh client calls echo's pod on 8080; echo is
// restarted and its new pod called on 8080; the policy is removed.
// Expectation (GUIDE §2): the old pod still answers, the new one is
// blocked, and answers again without the policy. Not NeedNetPol:
// enforcement is off when this spec starts, by design.
var _ = spec.Declare(spec.Def{
	Claim:    "netpol.enforcement-not-retroactive",
	Area:     "netpol",
	Scenario: "echo running before enforcement; -netpol-enable-command; ingress TCP 9999 only; client -> old pod:8080; rollout restart; client -> new pod:8080",
	Needs:    []spec.Need{NeedNetPolSwitch},
	Slow:     true,
	Measure:  netPolRetro,
})
