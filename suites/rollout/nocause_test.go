package rollout

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/netfault"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Every cause the engine gives is a category the registry accepts.
func TestLoadCausesAreAttributionCategories(t *testing.T) {
	for _, c := range []load.Cause{load.CauseReset, load.CauseEOF, load.CauseRefused, load.CauseTimeout, load.CauseOther, load.CauseUnattributed} {
		if cat := causeCategory(c); cat != claims.Unattributed && !slices.Contains(claims.AttributionCategories, cat) {
			t.Errorf("cause %q is category %q, not one of %v", c, cat, claims.AttributionCategories)
		}
	}
}

// The positive control of rollout.no-response-cause: the real fortio client
// (its REST API, in-process, as in the client pod) against servers that
// make Go's network stack fail each way — RST after the request (Go:
// "read: connection reset by peer"), FIN without an answer ("EOF"), no
// answer within the request timeout ("i/o timeout") — and each run judged
// against the registry's claim: GUIDE's cause dominant reproduces, another
// cause dominant does not, and a clean run (no -1) is inconclusive.
func TestNoResponseCausesJudgedOnRealSocketErrors(t *testing.T) {
	c := claimstest.Claim(t, "rollout.no-response-cause")
	resetter := netfault.Reset(t)
	eofer := netfault.EOF(t)
	silent := netfault.Silent(t, 2*time.Second)
	echo := listenHTTP(t, http.HandlerFunc(fhttp.EchoHandler))
	eng, err := load.New(load.Config{BaseURL: listenHTTP(t, fortioREST(t)) + "/fortio/", Logs: load.CaptureFortioLog(nil), RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, addr string
		tmo        time.Duration
		dominant   string
		errText    string // what Go's net package says, in the client's log line
		judged     map[mode.Mode]verdict.Result
	}{
		{"reset", resetter, 0, "reset", "connection reset by peer",
			map[mode.Mode]verdict.Result{mode.AmbientL4: verdict.Reproduced, mode.Sidecar: verdict.Reproduced}},
		{"eof", eofer, 0, "eof", "EOF",
			map[mode.Mode]verdict.Result{mode.Sidecar: verdict.Reproduced, mode.AmbientL4: verdict.NotReproduced}},
		{"timeout", silent, 300 * time.Millisecond, "timeout", "i/o timeout",
			map[mode.Mode]verdict.Result{mode.Sidecar: verdict.NotReproduced, mode.AmbientL7: verdict.NotReproduced, mode.AmbientL4: verdict.NotReproduced}},
		{"clean", strings.TrimPrefix(echo, "http://"), 0, "", "",
			map[mode.Mode]verdict.Result{mode.Sidecar: verdict.Inconclusive, mode.AmbientL4: verdict.Inconclusive}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := eng.Run(context.Background(), "nocause-"+tc.name, load.Spec{
				URL: "http://" + tc.addr + "/", QPS: 20, Connections: 2, Duration: time.Second,
				AllowInitialErrors: true, RequestTimeout: tc.tmo,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := noResponseCauses(run)
			if d := verdict.Dominant(got.Attribution); d != tc.dominant {
				t.Fatalf("dominant cause %q, want %q (%v; %s)", d, tc.dominant, got.Attribution, got.Detail)
			}
			if tc.errText != "" && !slices.ContainsFunc(run.Failures, func(e load.Event) bool { return strings.Contains(e.Err, tc.errText) }) {
				t.Errorf("no -1 logged with Go's %q: %+v", tc.errText, run.Failures[:min(2, len(run.Failures))])
			}
			if tc.dominant == "" && (len(got.Attribution) != 0 || *got.NoResponse != 0) {
				t.Fatalf("clean run has -1s: %v", got.Attribution)
			}
			for m, want := range tc.judged {
				if v := verdict.Judge(c, m, got); v.Result != want {
					t.Errorf("[%s] %s: %s; want %s", m, v.Result, v.Reason, want)
				}
			}
		})
	}
}

// fortioREST is what the client pod serves: fortio's REST API under /fortio/.
func fortioREST(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", t.TempDir())
	return mux
}

// listenHTTP serves h on a fresh 127.0.0.1 port until the test ends.
func listenHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve %s: %v", ln.Addr(), err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
