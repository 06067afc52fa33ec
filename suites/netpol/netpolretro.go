package netpol

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
	"github.com/meshclaims/meshclaims/framework/vpccni"
)

// NetworkPolicy enforcement is not retroactive (GUIDE §2: "pods created
// before enableNetworkPolicy was turned on are not retroactively enforced —
// the eBPF hooks are only attached at pod-network-setup (CNI ADD) time"):
// a property of the VPC CNI's network policy agent, shown only where its
// enforcement can be turned on while pods run. In a namespace of the spec's
// own (fixtures.NetpolRetroNamespace): echo runs and answers 8080; the run
// turns enforcement on (-netpol-enable-command); GUIDE's sanity-check policy
// (ingress TCP 9999 only) is applied; 8080 is probed on the pod that ran
// before (GUIDE: it still answers); echo is restarted and 8080 probed on
// the pod the restart made (the positive control that enforcement works:
// blocked); the policy removed, that pod must answer again (so its block
// was the policy's).

// Outcomes of netpol.enforcement-not-retroactive.
const (
	// netpolNotRetroactive: the pod that ran before enforcement answered
	// under the policy while the pod created after was blocked.
	netpolNotRetroactive = "verified"
	// NetpolRetroactive: both were blocked; enforcement reached the pod
	// that ran before it was turned on.
	NetpolRetroactive = "retroactive"
)

// NeedNetPolSwitch requires what the claim is about: the VPC CNI's network
// policy agent (DaemonSet kube-system/aws-node with its aws-eks-nodeagent,
// as EKS runs it), off when the run starts, and a way to turn it on
// mid-run (-netpol-enable-command). A layer need: the local provider's
// kube-router, kind's CNI, or a cluster already enforcing cannot show it,
// so the verdict there is inconclusive with the reason, never "reproduced"
// nor "not reproduced". A DaemonSet that cannot be read passes the need and
// fails the measurement with the error (a broken cluster, not a layer).
var NeedNetPolSwitch = spec.Need{Name: "networkpolicy-enforcement-switch", Layer: true, Check: func(ctx context.Context, r *spec.Run) error {
	about := "the claim is about the Amazon VPC CNI's network policy agent (EKS), whose enforcement is turned on while pods run"
	if r.Env.Config.Provider == "local" {
		return fmt.Errorf("the local provider's kube-router enforces NetworkPolicy from the start on every pod, old or new (its iptables rules follow the policies, not a pod's network set-up), so there is nothing to turn on mid-run; %s", about)
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	st, err := vpccni.Read(ctx, m.Kube.Client)
	if errors.Is(err, vpccni.ErrNotVPCCNI) || errors.Is(err, vpccni.ErrNoAgent) {
		return fmt.Errorf("%w; %s", err, about)
	}
	if err != nil {
		return nil
	}
	if st.Enforcing {
		return fmt.Errorf("the VPC CNI already enforces NetworkPolicy (%s): every pod is enforced from its creation, so no pod ran before enforcement; run on a cluster whose vpc-cni add-on has enableNetworkPolicy false, with -netpol-enable-command", st.Seen)
	}
	if r.Env.Config.NetPolEnableCommand == "" {
		return fmt.Errorf("the VPC CNI is here and not enforcing (%s), but the run has no -netpol-enable-command to turn enforcement on while echo runs (README, EKS)", st.Seen)
	}
	return nil
}}

// EnforcementSwitch turns NetworkPolicy enforcement on and returns once it
// is in effect for pods created from then on, saying what it did and saw.
type EnforcementSwitch func(ctx context.Context, r *spec.Run) (string, error)

// commandSwitch runs command with sh (-netpol-enable-command: an EKS
// add-on update) and waits until aws-node runs its agent enforcing on
// every node, all within Timeouts.NetPolEnable. The agent must not be
// enforcing before: a pod would then be enforced from its creation and the
// spec would show nothing. It waits for the agent's configuration, never
// for traffic to be blocked, which is what the spec measures.
func commandSwitch(command string) EnforcementSwitch {
	return func(ctx context.Context, r *spec.Run) (string, error) {
		m, err := scenario.ClusterOf(r)
		if err != nil {
			return "", err
		}
		before, err := vpccni.Read(ctx, m.Kube.Client)
		if err != nil {
			return "", err
		}
		if before.Enforcing {
			return "", fmt.Errorf("before -netpol-enable-command ran, the VPC CNI already enforced NetworkPolicy (%s): echo was enforced from its creation, so nothing can be shown", before.Seen)
		}
		t := r.Env.Config.Timeouts
		ctx, cancel := context.WithTimeout(ctx, t.NetPolEnable)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
		ran := time.Since(start).Round(time.Second)
		r.Logf("-netpol-enable-command ran %s: %s", ran, lastLines(out, 20))
		if err != nil {
			return "", fmt.Errorf("-netpol-enable-command %q: %v; its output: %s", command, err, lastLines(out, 20))
		}
		deadline, _ := ctx.Deadline()
		limit := time.Until(deadline)
		if limit < t.ConvergePoll {
			return "", fmt.Errorf("-netpol-enable-command took %s, leaving no time of -netpol-enable-timeout=%s to wait for %s/%s", ran, t.NetPolEnable, vpccni.Namespace, vpccni.DaemonSet)
		}
		var after vpccni.State
		w, err := converge.Until(ctx, converge.Policy{Poll: t.ConvergePoll, Times: t.ConvergeTimes, Limit: limit},
			fmt.Sprintf("%s/%s to run %s with %s=true on every node", vpccni.Namespace, vpccni.DaemonSet, vpccni.AgentContainer, vpccni.EnableFlag),
			func(ctx context.Context) (bool, string, error) {
				st, err := vpccni.Read(ctx, m.Kube.Client)
				if err != nil {
					return false, "", err
				}
				after = st
				return st.Enforcing && st.RolledOut, st.Seen, nil
			})
		r.AddWait(w)
		if err != nil {
			return "", fmt.Errorf("after -netpol-enable-command: %w", err)
		}
		return fmt.Sprintf("enforcement turned on by -netpol-enable-command (%s, then %s for aws-node): before %s; after %s",
			ran, w.Took.Round(time.Second), before.Seen, after.Seen), nil
	}
}

// AlreadyEnforcing is the switch of a CNI that enforces from the start
// (the local provider's kube-router): nothing to turn on. With it the
// scenario is the detector's negative control, which must read
// "retroactive".
func AlreadyEnforcing(what string) EnforcementSwitch {
	return func(context.Context, *spec.Run) (string, error) {
		return what + " (already enforcing; nothing turned on)", nil
	}
}

// netPolRetro is the spec's Measure: the scenario with the run's
// -netpol-enable-command.
func netPolRetro(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	return NetPolRetroWith(ctx, r, commandSwitch(r.Env.Config.NetPolEnableCommand))
}

// NetPolRetroWith runs the scenario above with enable turning enforcement
// on, and judges it (judgeNetPolRetro). The client is the no-mesh mode's.
func NetPolRetroWith(ctx context.Context, r *spec.Run, enable EnforcementSwitch) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	run, img := r.Env.Config.RunID, m.Options.Images
	t := fixtures.Target{Namespace: fixtures.NetpolRetroNamespace, Run: run}
	r.Touch(t.Namespace)
	c := scenario.InMeshOf(r, mode.None)
	echo := fixtures.NetpolRetroEcho(t, img)
	before, err := steps.RunningEcho(ctx, r, fixtures.NetpolRetroNS(run), echo)
	if err != nil {
		return verdict.Measurement{}, err
	}
	// The path works before anything: a "blocked" later is not a broken one.
	if err := scenario.PositiveControl(ctx, r, c, podURL(before)); err != nil {
		return verdict.Measurement{}, err
	}
	switched, err := enable(ctx, r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("%s", switched)
	policy := fixtures.NetpolOnly9999(t)
	if err := scenario.Apply(ctx, r, policy); err != nil {
		return verdict.Measurement{}, err
	}
	old, err := probeEnforced(ctx, r, c, policy, before)
	if err != nil {
		return verdict.Measurement{}, err
	}
	again, recreated, err := steps.KeptAndRestarted(ctx, r, t.Namespace, echo.Name, before, "the pod that ran before enforcement")
	if err != nil {
		return verdict.Measurement{}, err
	}
	// The new pod must be in the policy's programmed set before it is
	// probed, as the old one was (on the VPC CNI a PolicyEndpoint lists
	// its IP, then the bounded settle for the agent; kube-router's rules
	// name its IP): a new pod the CNI has not reached yet would answer for
	// a reason that is not the claim's.
	fresh, err := probeEnforced(ctx, r, c, policy, recreated)
	if err != nil {
		return verdict.Measurement{}, err
	}
	// Positive control of the block: with the policy gone the recreated
	// pod answers, so its "blocked" was the policy's doing.
	if err := client.IgnoreNotFound(m.Applier.Client().Delete(ctx, policy)); err != nil {
		return verdict.Measurement{}, err
	}
	if err := scenario.AwaitRemoved(ctx, r, policy); err != nil {
		return verdict.Measurement{}, err
	}
	restored := scenario.PositiveControl(ctx, r, c, podURL(recreated))
	got, err := judgeNetPolRetro(retroReadings{Switch: switched, Before: before, Again: again, Recreated: recreated, Old: old, New: fresh, Restored: restored})
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("enforcement not retroactive: %s %s", got.Outcome, got.Detail)
	return got, nil
}

// probeEnforced probes pod p once np is programmed for it: resolved to p
// by the VPC CNI's controller (awaitResolved), then applied by the
// enforcer (AwaitApplied).
func probeEnforced(ctx context.Context, r *spec.Run, c probe.Client, np *networkingv1.NetworkPolicy, p *corev1.Pod) (probe.Result, error) {
	if err := awaitResolved(ctx, r, np, p); err != nil {
		return probe.Result{}, err
	}
	if err := scenario.AwaitApplied(ctx, r, np); err != nil {
		return probe.Result{}, err
	}
	return scenario.Probe(ctx, r, c, podURL(p))
}

// awaitResolved waits, on the VPC CNI, until its network policy
// controller has resolved np to pod p (p's IP in a PolicyEndpoint of np),
// the controller's part before the node's agent can act: an old pod that
// still answers is then not a policy the controller had not reached yet.
// It reads the controller's output, never traffic. Without the VPC CNI
// (kube-router, whose rules AwaitApplied reads) there is nothing to read.
func awaitResolved(ctx context.Context, r *spec.Run, np *networkingv1.NetworkPolicy, p *corev1.Pod) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	if _, err := vpccni.Read(ctx, m.Kube.Client); errors.Is(err, vpccni.ErrNotVPCCNI) {
		return nil
	} else if err != nil {
		return err
	}
	w, err := converge.Until(ctx, scenario.PushPolicy(r),
		fmt.Sprintf("the VPC CNI's network policy controller to list pod %s (%s) in a PolicyEndpoint of NetworkPolicy %s/%s", p.Name, p.Status.PodIP, np.Namespace, np.Name),
		func(ctx context.Context) (bool, string, error) {
			ips, err := vpccni.PolicyPods(ctx, m.Applier.Client(), np.Namespace, np.Name)
			if err != nil {
				return false, "", err
			}
			return slices.Contains(ips, p.Status.PodIP), fmt.Sprintf("podSelectorEndpoints %v", ips), nil
		})
	r.AddWait(w)
	return err
}

// retroReadings are what the scenario observed.
type retroReadings struct {
	Switch    string       // what turned enforcement on, and what was seen
	Before    *corev1.Pod  // echo's pod, running before the switch
	Again     *corev1.Pod  // the same pod read again after its probe
	Recreated *corev1.Pod  // the pod echo's restart made, after the switch
	Old       probe.Result // 8080 on Before, under the 9999-only policy
	New       probe.Result // 8080 on Recreated, under the same policy
	// Restored is the recreated pod answering 200 once the policy was
	// removed (nil) or not (the error).
	Restored error
}

// judgeNetPolRetro: verified (not retroactive) when the pod that ran
// before enforcement still answered 8080 under a policy allowing only
// 9999, and the pod created after it was blocked; retroactive when both
// were blocked. The rest leaves nothing to show and fails the measurement:
// the recreated pod answering under the policy (enforcement never took
// effect, so an old pod's answer is not the claim's), the recreated pod
// not answering after the policy was removed (its block cannot be told
// from a broken pod), the old pod replaced before it was read again, or an
// outcome that is neither an answer nor a block. Every outcome and error
// carries what was seen.
func judgeNetPolRetro(x retroReadings) (verdict.Measurement, error) {
	detail := fmt.Sprintf("%s; policy %s (ingress TCP %d only) on app=%s: pod %s (running before enforcement) -> 8080 %s %s; pod %s (recreated by rollout restart) -> 8080 %s %s",
		x.Switch, fixtures.NetpolPortOnly9999, fixtures.NetpolRetroPort, fixtures.EchoName,
		x.Before.Name, x.Old.Outcome, x.Old.Detail, x.Recreated.Name, x.New.Outcome, x.New.Detail)
	if x.Restored != nil {
		return verdict.Measurement{}, fmt.Errorf("%s; with the policy removed the recreated pod did not answer (%v): its block cannot be told from a broken pod", detail, x.Restored)
	}
	detail += "; policy removed: recreated pod answers 200"
	if x.Again.UID != x.Before.UID {
		return verdict.Measurement{}, fmt.Errorf("%s; pod %s was replaced (UID %s, then %s) before it was read again: the probe may not have reached the pod that ran before enforcement", detail, x.Before.Name, x.Before.UID, x.Again.UID)
	}
	newBlocked, err := blockedOrAnswered(x.New, "the recreated pod")
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("%s; %w", detail, err)
	}
	if !newBlocked {
		return verdict.Measurement{}, fmt.Errorf("%s; the pod created after enforcement was turned on still answered 8080 under a policy allowing only %d: enforcement never took effect, so the old pod's answer shows nothing", detail, fixtures.NetpolRetroPort)
	}
	oldBlocked, err := blockedOrAnswered(x.Old, "the pod that ran before enforcement")
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("%s; %w", detail, err)
	}
	if oldBlocked {
		return verdict.Measurement{Outcome: NetpolRetroactive, Detail: detail}, nil
	}
	return verdict.Measurement{Outcome: netpolNotRetroactive, Detail: detail}, nil
}

// blockedOrAnswered reads a probe under the policy: a 200 answered; a
// block or a connection cut (an enforcer may reset rather than drop)
// blocked; anything else is neither.
func blockedOrAnswered(res probe.Result, who string) (bool, error) {
	switch res.Outcome {
	case "http-200":
		return false, nil
	case probe.Blocked, probe.NoHTTPResponse:
		return true, nil
	}
	return false, fmt.Errorf("%s got %s under the policy, neither an answer (http-200) nor a block (%s, %s)", who, res.Outcome, probe.Blocked, probe.NoHTTPResponse)
}

// podURL is echo's app port on pod p's IP.
func podURL(p *corev1.Pod) string {
	return fmt.Sprintf("http://%s:%d/", p.Status.PodIP, fixtures.EchoHTTPPort)
}

// lastLines is the last n lines of a command's output, for a log line.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, " | ")
}
