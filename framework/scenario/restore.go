package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Deleting a policy is not the end of its effect: istiod still has to push
// the change and the proxies to apply it, a CNI to remove rules, a kubelet to
// see probes pass again. The next spec's measurement starts from the base
// set, so after a spec removes what it applied, a probe must show the base
// behaviour again before the spec counts as undone. These waits concern the
// NEXT spec's precondition and run after the current measurement.

// Restored says which probe shows that removing a kind of claim object took
// effect: Client calls Target and must get one of Want. EchoReady first
// waits until every echo replica is Ready (a NetworkPolicy can have made
// them fail their kubelet probes).
type Restored struct {
	What      string
	Client    string // "in-mesh", "bad" (service account bad) or "outside"
	Target    string // "echo" (the Service) or "echo-pod" (a pod IP, app port)
	Want      []string
	EchoReady bool
}

// Clients and targets of Restored.
const (
	RestoreInMesh  = "in-mesh"
	RestoreBad     = "bad"
	RestoreOutside = "outside"
	RestoreEcho    = "echo"
	RestoreEchoPod = "echo-pod"
)

// strictRestored: STRICT cuts plaintext again: connected, then no status
// line, which is what the registry documents for every meshed mode
// (mtls.plaintext-blocked, mtls.strict-drops-connection). "blocked" (no
// connection at all) is not it: an unreachable pod looks the same.
var strictRestored = Restored{What: "plaintext cut again (STRICT)", Client: RestoreOutside, Target: RestoreEchoPod,
	Want: []string{probe.NoHTTPResponse}}

// StrictRestored are the checks after the namespace's STRICT
// PeerAuthentication is put back: plaintext refused, in-mesh answered.
func StrictRestored() []Restored { return []Restored{strictRestored, inMeshRestored} }

// inMeshRestored: an in-mesh call answers 200 again.
var inMeshRestored = Restored{What: "in-mesh call answered 200", Client: RestoreInMesh, Target: RestoreEcho, Want: []string{"http-200"}}

// RestoredAfterDelete is the check for removing an object of kind, false
// for kinds whose removal no single probe shows (routes, gateways: the specs
// that need them apply their own).
func RestoredAfterDelete(kind string) (Restored, bool) {
	switch kind {
	case "AuthorizationPolicy":
		// With no ALLOW policy left, service account bad is admitted again.
		return Restored{What: "service account bad admitted again (no AuthorizationPolicy)", Client: RestoreBad, Target: RestoreEcho, Want: []string{"http-200"}}, true
	case "PeerAuthentication":
		// The only PeerAuthentication a spec applies is the port-level
		// PERMISSIVE one; the namespace's STRICT stays.
		return strictRestored, true
	case "DestinationRule":
		// TLS settings gone: in-mesh calls work. Under STRICT (restored by
		// WithoutStrict's undo, which checks the same) a leftover DISABLE
		// rule would fail this probe.
		return inMeshRestored, true
	case "NetworkPolicy":
		r := inMeshRestored
		r.What, r.EchoReady = "echo Ready and answering in-mesh calls (NetworkPolicy removed)", true
		return r, true
	}
	return Restored{}, false
}

// ok reports whether outcome is what c waits for.
func (c Restored) ok(outcome string) bool { return slices.Contains(c.Want, outcome) }

// WaitRestored polls c's probe until it shows the restored behaviour or
// Timeouts.PolicyRestore passes; the error names the last outcome seen.
func WaitRestored(ctx context.Context, r *spec.Run, c Restored) error {
	m, err := ClusterOf(r)
	if err != nil {
		return err
	}
	timeout := r.Env.Config.Timeouts.PolicyRestore
	if c.EchoReady {
		if err := m.Kube.WaitAvailable(ctx, r.Namespace(), timeout, fixtures.EchoName); err != nil {
			return fmt.Errorf("after removing the policy: %w", err)
		}
	}
	var from probe.Client
	switch c.Client {
	case RestoreInMesh:
		from = InMesh(r)
	case RestoreBad:
		from = ClientAs(r, fixtures.ClientBadName)
	case RestoreOutside:
		from = Outside()
	default:
		return fmt.Errorf("restoration check %q: unknown client %q; accepted: %s, %s, %s", c.What, c.Client, RestoreInMesh, RestoreBad, RestoreOutside)
	}
	err = WaitOutcome(ctx, timeout, r.Env.Config.Timeouts.ProxySync, c.Want, func(ctx context.Context) (probe.Result, string, error) {
		url := EchoURL(r)
		if c.Target == RestoreEchoPod {
			u, err := EchoPodURL(ctx, r, fixtures.EchoHTTPPort)
			if err != nil {
				return probe.Result{}, "", err // pods may be restarting: try again
			}
			url = u
		}
		res, err := probe.From(ctx, m.Kube, from, url, r.Env.Config.Timeouts.Probe)
		return res, from.Selector + " -> " + url, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s (want %v): %w", c.What, c.Want, err)
	}
	r.Logf("restored: %s", c.What)
	return nil
}

// WaitOutcome repeats call until its probe's outcome is one of want, or
// timeout passes. A failing call (no pod, port-forward down) is tried again:
// the wait is for a state to come back, and its error says what was last
// seen. It is for preconditions only, never for the outcome a spec measures.
func WaitOutcome(ctx context.Context, timeout, interval time.Duration, want []string, call func(context.Context) (probe.Result, string, error)) error {
	return PollUntil(ctx, timeout, interval, func(ctx context.Context) (bool, string, error) {
		res, what, err := call(ctx)
		if err != nil {
			return false, what + ": " + err.Error(), nil
		}
		return slices.Contains(want, res.Outcome), strings.TrimSpace(fmt.Sprintf("%s: %s %s", what, res.Outcome, res.Detail)), nil
	})
}

// PollUntil calls try every interval until it reports done, fails, or
// timeout passes; a timeout's error carries try's last description.
func PollUntil(ctx context.Context, timeout, interval time.Duration, try func(context.Context) (done bool, last string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "not tried"
	for {
		done, msg, err := try(ctx)
		if msg != "" {
			last = msg
		}
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not within %s; last: %s", timeout, last)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// restoreAfterDelete waits, for each kind among objs that has a check, until
// its removal shows (each kind once).
func restoreAfterDelete(ctx context.Context, r *spec.Run, objs []client.Object) error {
	seen := map[string]bool{}
	var errs []error
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		c, ok := RestoredAfterDelete(kind)
		if !ok || seen[kind] {
			continue
		}
		seen[kind] = true
		if err := WaitRestored(ctx, r, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
