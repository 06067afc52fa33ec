package netpol

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/verdict"
	"github.com/meshclaims/meshclaims/framework/ztunnellog"
)

func tunnelAt(src string, first time.Time) ztunnellog.Tunnel {
	return ztunnellog.Tunnel{Src: src, Dst: "198.18.0.26:15008", FirstStart: first, LastEnd: first.Add(time.Second), Streams: 1}
}

func TestJudgeTunnels(t *testing.T) {
	fresh := time.Date(2026, 12, 2, 3, 25, 25, 0, time.UTC)
	old := tunnelAt("198.18.0.32:48438", fresh.Add(-11*time.Second))
	nu := tunnelAt("198.18.0.40:51000", fresh.Add(3*time.Second))
	ok200 := verdict.Measurement{Outcome: "http-200", Detail: "200 OK"}
	blocked := verdict.Measurement{Outcome: "blocked", Detail: "refused"}
	pt := func(used []ztunnellog.Tunnel, stale ...ztunnellog.Tunnel) probeTunnels {
		return probeTunnels{Sources: []string{"198.18.0.40"}, Carried: ztunnellog.Carried{Used: used, Stale: stale}, Fresh: fresh, Pods: []string{"ztunnel-a"}}
	}
	// Negative control: the case, a 200 over a pooled tunnel from
	// before the policy, must not be judged.
	if _, err := judgeTunnels(ok200, pt([]ztunnellog.Tunnel{old}, old), "measurement"); err == nil || !strings.Contains(err.Error(), "198.18.0.32:48438") {
		t.Fatalf("a 200 over a pre-policy tunnel was judged (err %v)", err)
	}
	// A 200 with no tunnel logged shows nothing.
	if _, err := judgeTunnels(ok200, pt(nil), "measurement"); err == nil {
		t.Fatal("a 200 without any logged tunnel was judged")
	}
	// A 200 over a new tunnel is judged, with the tunnel as evidence.
	got, err := judgeTunnels(ok200, pt([]ztunnellog.Tunnel{nu}), "measurement")
	if err != nil || got.Outcome != "http-200" || !strings.Contains(got.Detail, "198.18.0.40:51000") {
		t.Fatalf("new-tunnel 200: %+v, %v", got, err)
	}
	// A block with no tunnel reaching echo is the policy's.
	got, err = judgeTunnels(blocked, pt(nil), "measurement")
	if err != nil || got.Outcome != "blocked" || !strings.Contains(got.Detail, "no tunnel from 198.18.0.40") {
		t.Fatalf("blocked: %+v, %v", got, err)
	}
}

// A real line (the first ambient-l7 run): a fresh client's probe logged
// by its ztunnel on the hop to the waypoint's 15008. The waypoint pod's
// start decides whether its upstream connections to echo can predate the
// probe's fresh path.
func TestWaypointCarried(t *testing.T) {
	raw, err := os.ReadFile("../../framework/ztunnellog/testdata/ztunnel-1.30-via-waypoint.log")
	if err != nil {
		t.Fatal(err)
	}
	all, err := ztunnellog.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 2, 8, 49, 0, 0, time.UTC)
	fresh := since.Add(-20 * time.Second)
	wp := func(started time.Time) map[string]waypointPod {
		return map[string]waypointPod{"198.18.0.65": {Name: "waypoint-6595bcd7b5-dhr72", IP: "198.18.0.65", Started: started}}
	}
	c := waypointCarried(all, "198.18.0.66", since, fresh, wp(fresh.Add(5*time.Second)))
	if len(c.Used) != 1 || len(c.Stale) != 0 || !strings.Contains(c.Used[0].Src, "waypoint-6595bcd7b5-dhr72") {
		t.Fatalf("a waypoint started after the fresh path: %+v", c)
	}
	// Negative control: the same probe through a waypoint that ran before.
	if c := waypointCarried(all, "198.18.0.66", since, fresh, wp(fresh.Add(-time.Minute))); len(c.Stale) != 1 {
		t.Fatalf("a waypoint started before the fresh path is not stale: %+v", c)
	}
	// A pod's StartTime keeps whole seconds: the waypoint restarted for the
	// fresh path reads as started in that second, before the path's
	// milliseconds (the four-mode run: 11:52:20 against 11:52:20.589). It is
	// new; one started a second earlier is not.
	freshMs := fresh.Add(589 * time.Millisecond)
	if c := waypointCarried(all, "198.18.0.66", since, freshMs, wp(freshMs.Truncate(time.Second))); len(c.Used) != 1 || len(c.Stale) != 0 {
		t.Fatalf("a waypoint started in the fresh path's second counted stale: %+v", c)
	}
	if c := waypointCarried(all, "198.18.0.66", since, freshMs, wp(freshMs.Truncate(time.Second).Add(-time.Second))); len(c.Stale) != 1 {
		t.Fatalf("a waypoint started the second before the fresh path is not stale: %+v", c)
	}
	// Another client's probe, or one through no known waypoint, is not this one's.
	if c := waypointCarried(all, "198.18.0.99", since, fresh, wp(fresh)); len(c.Used) != 0 {
		t.Fatalf("another client's line counted: %+v", c)
	}
	if c := waypointCarried(all, "198.18.0.66", since, fresh, map[string]waypointPod{}); len(c.Used) != 0 {
		t.Fatalf("a line to no waypoint counted: %+v", c)
	}
}
