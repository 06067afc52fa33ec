package netpol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
	"github.com/meshclaims/meshclaims/framework/ztunnellog"
)

// ztunnelPoolIdle is ztunnel's POOL_UNUSED_RELEASE_TIMEOUT default (5 min,
// src/config.rs): a tunnel unused that long is closed, so a log read from
// that long before a policy shows every tunnel that could still be open.
const ztunnelPoolIdle = 5 * time.Minute

// tunnelLogSettle bounds the wait for the destination's ztunnel to log a
// connection that has ended (it logs on close; the probe's connection is
// closed when the probe returns). The wait is for the evidence, not for
// the outcome, which is already measured.
const tunnelLogSettle = 10 * time.Second

// underNetPolAmbient measures a NetworkPolicy's effect in an ambient mode
// over HBONE tunnels opened after it (issue 26): a NetworkPolicy is checked
// when a connection opens, and ztunnel keeps HBONE connections pooled, so a
// request over a tunnel opened before the policy says nothing about the
// policy. The positive control runs from a client deployed for it; the
// measurement from another, deployed once the enforcer carries the policy.
// In ambient-l7 the connection that crosses echo's policy is the waypoint's
// (Envoy pools its upstream HBONE connections too), so the waypoint is
// restarted before each probe. Echo's ztunnel's log then shows which
// tunnels carried each probe and since when (judgeTunnels): a tunnel in use
// before the probe's fresh path existed is refused, never judged.
func underNetPolAmbient(ctx context.Context, r *spec.Run, policy *networkingv1.NetworkPolicy, url string) (verdict.Measurement, error) {
	ctl, ctlFresh, err := freshPath(ctx, r, "control")
	if err != nil {
		return verdict.Measurement{}, err
	}
	tCtl := time.Now()
	if err := scenario.PositiveControl(ctx, r, ctl.Client, url); err != nil {
		return verdict.Measurement{}, err
	}
	ctlTunnels, err := tunnelsCarrying(ctx, r, ctl, tCtl, ctlFresh)
	if err != nil {
		return verdict.Measurement{}, err
	}
	ctlSeen, err := judgeTunnels(verdict.Measurement{Outcome: "http-200"}, ctlTunnels, "positive control")
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("positive control's tunnels: %s", ctlSeen.Detail)
	if err := scenario.ApplyAndAwait(ctx, r, policy); err != nil {
		return verdict.Measurement{}, err
	}
	meas, fresh, err := freshPath(ctx, r, "measure")
	if err != nil {
		return verdict.Measurement{}, err
	}
	t0 := time.Now()
	got, err := netpolProbe(ctx, r, meas.Client, url)
	if err != nil {
		return got, err
	}
	got = netpolOutcome(ctx, r, got, t0)
	tunnels, err := tunnelsCarrying(ctx, r, meas, t0, fresh)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return judgeTunnels(got, tunnels, "measurement")
}

// freshPath deploys a client for one probe and, in ambient-l7, restarts
// the waypoint so that its upstream tunnels to echo are new too. fresh is
// the time from which every connection of the probe's path is new: a
// tunnel first used before it was already open.
func freshPath(ctx context.Context, r *spec.Run, purpose string) (freshPod, time.Time, error) {
	start := time.Now()
	if r.Mode == mode.AmbientL7 {
		if err := restartWaypoint(ctx, r); err != nil {
			return freshPod{}, time.Time{}, err
		}
	}
	c, err := freshClient(ctx, r, purpose)
	return c, start, err
}

func restartWaypoint(ctx context.Context, r *spec.Run) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	d, err := steps.NewDeploymentDriver(m, r.Namespace(), fixtures.WaypointName)
	if err != nil {
		return err
	}
	if err := d.Restart(ctx); err != nil {
		return fmt.Errorf("restarting the waypoint (its pooled tunnels to echo predate the policy): %w", err)
	}
	if err := d.WaitComplete(ctx, r.Env.Config.Timeouts.GatewayReady); err != nil {
		return fmt.Errorf("restarting the waypoint: %w", err)
	}
	if err := istio.WaitWaypoint(ctx, m.Kube, m.Applier.Client(), r.Namespace(), fixtures.WaypointName, r.Env.Config.Timeouts.GatewayReady); err != nil {
		return err
	}
	r.Logf("waypoint %s/%s restarted: its upstream HBONE tunnels are new", r.Namespace(), fixtures.WaypointName)
	return nil
}

// tunnelSources are the pods whose HBONE connections reach echo in r's
// mode for a probe from c: the client itself in ambient-l4, the waypoint's
// pods in ambient-l7.
func tunnelSources(ctx context.Context, r *spec.Run, c freshPod) ([]string, error) {
	if r.Mode != mode.AmbientL7 {
		return []string{c.IP}, nil
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	pods, err := m.Kube.ReadyPods(ctx, r.Namespace(), "gateway.networking.k8s.io/gateway-name="+fixtures.WaypointName)
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("no ready waypoint pod in %s", r.Namespace())
	}
	return ips, nil
}

// probeTunnels is what echo's ztunnel logged about one probe's tunnels.
type probeTunnels struct {
	Sources []string // the IPs whose tunnels cross echo's policy
	ztunnellog.Carried
	Fresh time.Time // every tunnel first used before this was open before the probe's path
	Pods  []string  // the ztunnel pods read
}

// tunnelsCarrying reads every ztunnel's log (the destination's is among
// them) and finds the tunnels from the probe's sources that carried a
// connection ending at or after since, and which of those were in use
// before fresh. A probe that got through is logged when its connection
// closes, so a missing line is waited for (tunnelLogSettle); one that was
// blocked leaves no inbound line at all.
func tunnelsCarrying(ctx context.Context, r *spec.Run, c freshPod, since, fresh time.Time) (probeTunnels, error) {
	if r.Mode == mode.AmbientL7 {
		return viaWaypoint(ctx, r, c, since, fresh)
	}
	sources, err := tunnelSources(ctx, r, c)
	if err != nil {
		return probeTunnels{}, err
	}
	return tunnelsFrom(ctx, r, sources, since, fresh)
}

// viaWaypoint is tunnelsCarrying in ambient-l7, where the connection that
// crosses echo's policy is the waypoint's. Its Envoy keeps its upstream
// connections to echo open for reuse, so echo's ztunnel logs them only when
// they close (seen in the first real ambient-l7 run: none logged while the
// waypoint ran); what shows they are new is the waypoint pod itself, which
// cannot hold a connection from before it started. The client's ztunnel
// logs the probe's own hop to the waypoint when the probe ends: that line
// names the waypoint pod that carried it.
func viaWaypoint(ctx context.Context, r *spec.Run, c freshPod, since, fresh time.Time) (probeTunnels, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return probeTunnels{}, err
	}
	pods, err := m.Kube.ReadyPods(ctx, r.Namespace(), "gateway.networking.k8s.io/gateway-name="+fixtures.WaypointName)
	if err != nil {
		return probeTunnels{}, err
	}
	started := map[string]waypointPod{}
	for _, p := range pods {
		w := waypointPod{Name: p.Name, IP: p.Status.PodIP}
		if p.Status.StartTime != nil {
			w.Started = p.Status.StartTime.Time
		}
		started[w.IP] = w
	}
	pt := probeTunnels{Sources: []string{c.IP}, Fresh: fresh}
	deadline := time.Now().Add(tunnelLogSettle)
	for {
		all, names, err := ztunnelAccess(ctx, m, fresh.Add(-ztunnelPoolIdle-time.Minute))
		if err != nil {
			return pt, err
		}
		pt.Pods = names
		pt.Carried = waypointCarried(all, c.IP, since, fresh, started)
		if len(pt.Used) > 0 || time.Now().After(deadline) {
			return pt, nil
		}
		select {
		case <-ctx.Done():
			return pt, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// waypointPod is a waypoint pod as the API server reports it.
type waypointPod struct {
	Name, IP string
	Started  time.Time
}

// waypointCarried finds the client's connections to a waypoint that ended
// at or after since (the client's ztunnel's outbound lines to the pod's
// 15008) and gives each waypoint that carried one as a tunnel first usable
// when its pod started: stale when that is before fresh.
func waypointCarried(all []ztunnellog.Access, clientIP string, since, fresh time.Time, waypoints map[string]waypointPod) ztunnellog.Carried {
	var c ztunnellog.Carried
	seen := map[string]bool{}
	for _, a := range all {
		if a.Direction != "outbound" || a.SrcIP() != clientIP || a.End.Before(since) {
			continue
		}
		host, _, err := net.SplitHostPort(a.Dst)
		if err != nil {
			continue
		}
		w, ok := waypoints[host]
		if !ok || seen[host] {
			continue
		}
		seen[host] = true
		t := ztunnellog.Tunnel{Src: w.IP + " (waypoint " + w.Name + ", its upstream connections to echo)", Dst: "echo", FirstStart: w.Started, LastEnd: a.End, Streams: 1}
		c.Used = append(c.Used, t)
		// A pod's StartTime has whole seconds: a waypoint started in the
		// fresh path's own second reads as up to 999 ms before it (the
		// four-mode run of 2026-12-02 refused its positive control so:
		// started 11:52:20, fresh path 11:52:20.589). Only a start in an
		// earlier second is a waypoint from before the fresh path.
		if w.Started.Before(fresh.Truncate(time.Second)) {
			c.Stale = append(c.Stale, t)
		}
	}
	return c
}

// ztunnelAccess reads every ztunnel's access lines since t.
func ztunnelAccess(ctx context.Context, m *spec.Cluster, t time.Time) ([]ztunnellog.Access, []string, error) {
	zt, err := m.Kube.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		return nil, nil, err
	}
	if len(zt.Items) == 0 {
		return nil, nil, errors.New("no ztunnel pod in istio-system: cannot tell which tunnel carried the probe")
	}
	var all []ztunnellog.Access
	var names []string
	for _, p := range zt.Items {
		log, err := m.Kube.Logs(ctx, p.Namespace, p.Name, "istio-proxy", t)
		if err != nil {
			return nil, nil, fmt.Errorf("ztunnel %s log: %w", p.Name, err)
		}
		entries, err := ztunnellog.Parse(log)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, entries...)
		names = append(names, p.Name)
	}
	return all, names, nil
}

// tunnelsFrom is tunnelsCarrying for the tunnels from the given source IPs.
func tunnelsFrom(ctx context.Context, r *spec.Run, sources []string, since, fresh time.Time) (probeTunnels, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return probeTunnels{}, err
	}
	pt := probeTunnels{Sources: sources, Fresh: fresh}
	deadline := time.Now().Add(tunnelLogSettle)
	for {
		all, names, err := ztunnelAccess(ctx, m, fresh.Add(-ztunnelPoolIdle-time.Minute))
		if err != nil {
			return pt, err
		}
		pt.Pods = names
		pt.Carried = ztunnellog.Carried{}
		for _, ip := range sources {
			c := ztunnellog.Carrying(all, ip, since, fresh)
			pt.Used = append(pt.Used, c.Used...)
			pt.Stale = append(pt.Stale, c.Stale...)
		}
		if len(pt.Used) > 0 || time.Now().After(deadline) {
			return pt, nil
		}
		select {
		case <-ctx.Done():
			return pt, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// judgeTunnels keeps a probe's outcome only when echo's ztunnel shows it
// crossed the policy on a tunnel opened for it: a tunnel in use before the
// probe's fresh path is refused (the outcome would be the pool's, not the
// policy's), and so is a 200 with no tunnel logged at all (nothing shows
// which connection carried it). A blocked probe reaching no tunnel is what
// a policy that stops new HBONE connections looks like.
func judgeTunnels(got verdict.Measurement, pt probeTunnels, what string) (verdict.Measurement, error) {
	if len(pt.Stale) > 0 {
		var s []string
		for _, t := range pt.Stale {
			s = append(s, t.String())
		}
		return verdict.Measurement{}, fmt.Errorf("%s rode HBONE tunnel(s) in use before its fresh path (%s): %s; ztunnel (and a waypoint's Envoy) pool tunnels, and a NetworkPolicy only checks new connections, so the outcome %q is not the policy's and is not judged",
			what, pt.Fresh.UTC().Format("15:04:05.000"), strings.Join(s, "; "), got.Outcome)
	}
	if got.Outcome == probe.Blocked || got.Outcome == probe.NoHTTPResponse {
		if len(pt.Used) > 0 {
			// In ambient-l7 the tunnels are the client's hop to the
			// waypoint: reaching it is expected when the waypoint's own
			// connection to echo is what the policy refused.
			reached := "echo's ztunnel"
			if strings.Contains(pt.Used[0].Src, "(waypoint ") {
				reached = "the waypoint"
			}
			got.Detail = joinDetail(got.Detail, fmt.Sprintf("yet %d tunnel(s) from %s reached %s: %s", len(pt.Used), strings.Join(pt.Sources, ","), reached, tunnelsText(pt.Used)))
			return got, nil
		}
		got.Detail = joinDetail(got.Detail, fmt.Sprintf("no tunnel from %s reached echo's ztunnel (read from %s)", strings.Join(pt.Sources, ","), strings.Join(pt.Pods, ",")))
		return got, nil
	}
	if len(pt.Used) == 0 {
		return verdict.Measurement{}, fmt.Errorf("%s got %s but no ztunnel (%s) logged a tunnel from %s to echo: nothing shows the connection crossed the policy new",
			what, got.Outcome, strings.Join(pt.Pods, ","), strings.Join(pt.Sources, ","))
	}
	got.Detail = joinDetail(got.Detail, fmt.Sprintf("over tunnel(s) opened after %s: %s", pt.Fresh.UTC().Format("15:04:05.000"), tunnelsText(pt.Used)))
	return got, nil
}

func tunnelsText(ts []ztunnellog.Tunnel) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	return strings.Join(s, "; ")
}

// joinDetail appends more to a measurement's detail, "; "-separated.
func joinDetail(detail, more string) string {
	if detail == "" {
		return more
	}
	return detail + "; " + more
}
