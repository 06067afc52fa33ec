package authz

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/probe/probetest"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// The principals judge on results of the suite's own probe over loopback:
// echo's 200 for the allowed caller; for the denied one ztunnel's refusal
// (accepted, then closed: no status line), Envoy's RBAC local reply (403,
// text/plain "RBAC: access denied", as envoy's rbac filter sends it) and
// the app's own 403 (echo ?status=403, which is no policy's doing).
func TestPrincipalsJudged(t *testing.T) {
	c := claimstest.Claim(t, "authz.ambient-principals")
	s, err := echo.Start(echo.Config{HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	rbac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Server", "istio-envoy")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, rbacDeniedBody)
	}))
	t.Cleanup(rbac.Close)
	do := func(url string) probe.Result {
		r := probe.Result{Result: wp.Do(context.Background(), http.MethodGet, url, nil, 5*time.Second)}
		r.Outcome, r.Detail = probe.Outcome(r.Result)
		return r
	}
	good := do(s.URL() + "/")
	cut := do(probetest.CutConnections(t, false))
	envoy403 := do(rbac.URL + "/")
	app403 := do(s.URL() + "/?status=403")
	answered := do(s.URL() + "/")

	cases := []struct {
		name      string
		m         mode.Mode
		good, bad probe.Result
		want      verdict.Result
	}{
		{"ztunnel cuts sa/bad", mode.AmbientL4, good, cut, verdict.Reproduced},
		{"a 403 where no L7 proxy should be", mode.AmbientL4, good, envoy403, verdict.NotReproduced},
		{"sa/bad admitted", mode.AmbientL4, good, answered, verdict.NotReproduced},
		{"everyone refused", mode.AmbientL4, cut, cut, verdict.NotReproduced},
		{"waypoint's RBAC 403", mode.AmbientL7, good, envoy403, verdict.Reproduced},
		{"cut instead of 403 (selector policy at ztunnel)", mode.AmbientL7, good, cut, verdict.NotReproduced},
		{"the app's 403, not RBAC", mode.AmbientL7, good, app403, verdict.NotReproduced},
		{"sa/good refused by the waypoint", mode.AmbientL7, envoy403, envoy403, verdict.NotReproduced},
	}
	for _, tc := range cases {
		got := judgePrincipals(tc.good, tc.bad)
		if v := verdict.Judge(c, tc.m, got); v.Result != tc.want {
			t.Errorf("%s [%s]: %s, want %s (%s; %s)", tc.name, tc.m, v.Result, tc.want, got.Outcome, got.Detail)
		}
	}
}
