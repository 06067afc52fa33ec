package netpol

import (
	"errors"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func TestJudgePooledTunnel(t *testing.T) {
	ok := probe.Result{Outcome: "http-200"}
	refused := probe.Result{Outcome: "blocked"}
	stale := errors.New("rode a tunnel in use before the policy")
	blockedNew := verdict.Measurement{Outcome: "blocked", Detail: "no tunnel reached echo"}
	for _, c := range []struct {
		name string
		p    pooledReadings
		want string
	}{
		{"the gotcha", pooledReadings{After: []probe.Result{ok, ok, ok}, Detected: stale, New: blockedNew}, "verified"},
		{"new path through: the policy blocks nothing", pooledReadings{After: []probe.Result{ok}, Detected: stale, New: verdict.Measurement{Outcome: "http-200"}}, "new path not blocked (http-200)"},
		{"one pooled request failed", pooledReadings{After: []probe.Result{ok, refused}, Detected: stale, New: blockedNew}, "pooled tunnel cut"},
		{"no requests", pooledReadings{Detected: stale, New: blockedNew}, "pooled tunnel cut"},
		{"200s over new tunnels", pooledReadings{After: []probe.Result{ok}, Detected: nil, New: blockedNew}, "pooled requests not over a pre-policy tunnel"},
	} {
		c.p.Window = 10 * time.Second
		if got := judgePooledTunnel(c.p); got.Outcome != c.want {
			t.Errorf("%s: outcome %q, want %q (%s)", c.name, got.Outcome, c.want, got.Detail)
		}
	}
}
