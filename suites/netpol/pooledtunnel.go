package netpol

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// pooledTunnelProbes is how many requests (one a second) the pooled tunnel
// must carry after the policy: enough to show it is not one lucky request
// in flight when the policy landed, short beside ztunnel's 5 min idle
// release so the tunnel is kept in use throughout.
const pooledTunnelProbes = 10

// pooledTunnel observes issue 26's gotcha as its own claim: a tunnel opened
// before an 8080-only NetworkPolicy (which closes HBONE's 15008) keeps
// carrying new requests after the enforcer carries the policy, while a path
// opened after it is blocked. In ambient-l4 the tunnel is the client's
// ztunnel's; in ambient-l7 it is the waypoint's pooled upstream tunnel to
// echo, shared by every client, so the blocked control restarts the
// waypoint. The tunnel detector (judgeTunnels) must fire on the old path
// (its negative control on a real cluster) and stay quiet on the new one.
func pooledTunnel(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	// ztunnel pools per destination pod (dst.addr is the pod's 15008): in
	// ambient-l4 every request goes to one echo pod's address, so all ride
	// the tunnel the positive control opened. In ambient-l7 the waypoint
	// serves the Service (waypoint-for: service) and picks the pod, so it
	// is warmed until it holds a tunnel to every echo pod.
	url := scenario.EchoURL(r)
	if r.Mode != mode.AmbientL7 {
		var err error
		if url, err = scenario.EchoPodURL(ctx, r, fixtures.EchoHTTPPort); err != nil {
			return verdict.Measurement{}, err
		}
	}
	old, oldFresh, err := freshPath(ctx, r, "pooled")
	if err != nil {
		return verdict.Measurement{}, err
	}
	if err := scenario.PositiveControl(ctx, r, old.Client, url); err != nil {
		return verdict.Measurement{}, err
	}
	// The sources as they are now: in ambient-l7 the control below
	// restarts the waypoint, whose new pod is another source.
	oldSources, err := tunnelSources(ctx, r, old)
	if err != nil {
		return verdict.Measurement{}, err
	}
	if r.Mode == mode.AmbientL7 {
		if err := warmWaypoint(ctx, r, old, url); err != nil {
			return verdict.Measurement{}, err
		}
	}
	if err := scenario.ApplyAndAwait(ctx, r, fixtures.NetpolAppPort(scenario.Target(r), r.Mode)); err != nil {
		return verdict.Measurement{}, err
	}
	policyAt := time.Now()
	var after []probe.Result
	for i := 0; i < pooledTunnelProbes; i++ {
		res, err := scenario.Probe(ctx, r, old.Client, url)
		if err != nil {
			return verdict.Measurement{}, err
		}
		after = append(after, res)
		select {
		case <-ctx.Done():
			return verdict.Measurement{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	window := time.Since(policyAt)
	// In ambient-l7 the tunnels are the waypoint's, shown by its pod's
	// start (viaWaypoint); in ambient-l4 by echo's ztunnel's inbound lines.
	var oldTunnels probeTunnels
	if r.Mode == mode.AmbientL7 {
		oldTunnels, err = tunnelsCarrying(ctx, r, old, policyAt, policyAt)
	} else {
		oldTunnels, err = tunnelsFrom(ctx, r, oldSources, policyAt, policyAt)
	}
	if err != nil {
		return verdict.Measurement{}, err
	}
	_, detected := judgeTunnels(verdict.Measurement{Outcome: after[len(after)-1].Outcome}, oldTunnels, "the pooled client's request")

	nu, nuFresh, err := freshPath(ctx, r, "new")
	if err != nil {
		return verdict.Measurement{}, err
	}
	t0 := time.Now()
	got, err := netpolProbe(ctx, r, nu.Client, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got = netpolOutcome(ctx, r, got, t0)
	nuTunnels, err := tunnelsCarrying(ctx, r, nu, t0, nuFresh)
	if err != nil {
		return verdict.Measurement{}, err
	}
	newPath, err := judgeTunnels(got, nuTunnels, "the new path's request")
	if err != nil {
		return verdict.Measurement{}, err
	}
	m := judgePooledTunnel(pooledReadings{After: after, Window: window, Detected: detected, OldFresh: oldFresh, OldTunnels: oldTunnels, New: newPath})
	r.Logf("pooled tunnel: %s %s", m.Outcome, m.Detail)
	return m, nil
}

// pooledReadings are what pooledTunnel saw.
type pooledReadings struct {
	After      []probe.Result // the pooled client's requests after the policy
	Window     time.Duration  // from the policy carried to the last of them
	Detected   error          // judgeTunnels on the pooled client's tunnels: must refuse
	OldFresh   time.Time
	OldTunnels probeTunnels
	New        verdict.Measurement // the path opened after the policy, judged
}

// judgePooledTunnel: verified when every request of the pooled client after
// the policy answered 200 over a tunnel in use before the policy (the
// detector refused it), while the path opened after the policy was blocked.
// A new path that gets through means the policy did not block new tunnels
// here, so the pooled 200s show nothing; a pooled request that failed means
// the tunnel was cut (the behaviour the gotcha says does not happen).
func judgePooledTunnel(p pooledReadings) verdict.Measurement {
	codes := map[string]int{}
	for _, a := range p.After {
		codes[a.Outcome]++
	}
	var cs []string
	for k, n := range codes {
		cs = append(cs, fmt.Sprintf("%d %s", n, k))
	}
	detail := fmt.Sprintf("pooled client, %d requests over %.0f s after the policy was carried: %s; tunnels: %s; new path: %s %s",
		len(p.After), p.Window.Seconds(), strings.Join(cs, ", "), tunnelsText(p.OldTunnels.Used), p.New.Outcome, p.New.Detail)
	switch {
	case p.New.Outcome != probe.Blocked && p.New.Outcome != probe.NoHTTPResponse:
		return verdict.Measurement{Outcome: "new path not blocked (" + p.New.Outcome + ")", Detail: detail}
	case codes["http-200"] != len(p.After) || len(p.After) == 0:
		return verdict.Measurement{Outcome: "pooled tunnel cut", Detail: detail}
	case p.Detected == nil:
		// 200s, but not over a tunnel from before the policy: then they
		// crossed it new, and the block of the new path contradicts them.
		return verdict.Measurement{Outcome: "pooled requests not over a pre-policy tunnel", Detail: detail}
	}
	return verdict.Measurement{Outcome: "verified", Detail: detail + "; detector: " + p.Detected.Error()}
}

// waypointWarmUp is how many requests go through the waypoint before the
// policy: its Envoy balances over echo's 6 pods by least request and keeps
// each upstream connection open, so this many leave one to every pod in
// all likelihood. Echo's ztunnel does not log an upstream connection the
// waypoint keeps open, so nothing cheaper shows which pods it holds.
const waypointWarmUp = 60

// warmWaypoint sends waypointWarmUp requests from c through the waypoint.
func warmWaypoint(ctx context.Context, r *spec.Run, c freshPod, url string) error {
	codes := map[string]int{}
	for i := 0; i < waypointWarmUp; i++ {
		res, err := scenario.Probe(ctx, r, c.Client, url)
		if err != nil {
			return err
		}
		codes[res.Outcome]++
	}
	if codes["http-200"] != waypointWarmUp {
		return fmt.Errorf("warm-up through the waypoint before the policy: %v of %d, not all 200", codes, waypointWarmUp)
	}
	r.Logf("warm-up: %d requests through the waypoint, all 200", waypointWarmUp)
	return nil
}
