package mtls

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/echolog"
	"github.com/meshclaims/meshclaims/framework/echolog/echologtest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/probe/probetest"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// The judge on real shapes: a real echo server's log (its error-answer
// lines behind kubelet timestamps), real probe results from loopback
// (a cut connection, echo's own answers), and the claim's verdict in each
// mode. Each way the claim can be wrong fires: plaintext answered (the
// PERMISSIVE case), plaintext reaching echo and answered 403, a 403 of
// another request in the window; and each way the measurement can be
// broken is an error: the control's line missing, the control not a 403.
func TestStrictNo403(t *testing.T) {
	c := claimstest.Claim(t, "mtls.strict-no-403")
	log := &echologtest.Log{}
	s, err := echo.Start(echo.Config{HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(log, nil)).With("role", "echo")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	ctx := context.Background()
	do := func(url string) probe.Result {
		r := probe.Result{Result: wp.Do(ctx, http.MethodGet, url, nil, 5*time.Second)}
		r.Outcome, r.Detail = probe.Outcome(r.Result)
		return r
	}
	marks := strictLogMarks{Plain: "plain-run1-1", Control: "control-run1-1"}
	mark := func(m string) string { return "?" + echolog.MarkParam + "=" + m }
	echoURL := s.URL() + "/"

	for _, reset := range []bool{false, true} {
		plain := do(probetest.CutConnections(t, reset) + mark(marks.Plain))
		if plain.Outcome != probe.NoHTTPResponse {
			t.Fatalf("cut connection (reset %v): %s %s", reset, plain.Outcome, plain.Detail)
		}
		control := do(echoURL + "?status=403&" + echolog.MarkParam + "=" + marks.Control)
		answers, err := echolog.ParseErrorAnswers(log.String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := judgeStrictNo403(plain, control, answers, marks)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Modes {
			if v := verdict.Judge(c, m, got); v.Result != verdict.Reproduced {
				t.Errorf("%s, cut connection (reset %v): %s (%s)", m, reset, v.Result, v.Reason)
			}
		}
	}

	// The control's line is needed: a log that lost it (another pod's,
	// or one the server never wrote) proves nothing.
	control := do(echoURL + "?status=403&" + echolog.MarkParam + "=" + marks.Control)
	plain := do(probetest.CutConnections(t, false) + mark(marks.Plain))
	if _, err := judgeStrictNo403(plain, control, nil, marks); err == nil || !strings.Contains(err.Error(), "cannot show a 403") {
		t.Errorf("no control line: %v", err)
	}
	if _, err := judgeStrictNo403(plain, do(echoURL+mark(marks.Control)), nil, marks); err == nil || !strings.Contains(err.Error(), "got http-200") {
		t.Errorf("control answered 200: %v", err)
	}

	judge := func(plain probe.Result) verdict.Measurement {
		t.Helper()
		answers, err := echolog.ParseErrorAnswers(log.String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := judgeStrictNo403(plain, control, answers, marks)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(c, mode.Sidecar, got); v.Result != verdict.NotReproduced {
			t.Errorf("%s: %s (%s)", got.Outcome, v.Result, v.Reason)
		}
		return got
	}
	// PERMISSIVE: the plaintext request is answered.
	if got := judge(do(echoURL + mark(marks.Plain))); got.Outcome != "http-200" {
		t.Errorf("plaintext answered 200: %s", got.Outcome)
	}
	// A plaintext client refused by the app itself, with a 403 in its log.
	if got := judge(do(echoURL + "?status=403&" + echolog.MarkParam + "=" + marks.Plain)); got.Outcome != "http-403" {
		t.Errorf("plaintext answered 403: %s", got.Outcome)
	}
	// A 403 of another request in the window fails even with a cut plaintext.
	fresh := strictLogMarks{Plain: "plain-run1-2", Control: marks.Control}
	do(echoURL + "?status=403&other=1")
	answers, err := echolog.ParseErrorAnswers(log.String())
	if err != nil {
		t.Fatal(err)
	}
	cut := do(probetest.CutConnections(t, true) + mark(fresh.Plain))
	got, err := judgeStrictNo403(cut, control, answers, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != "403 in the server's log" || verdict.Judge(c, mode.AmbientL4, got).Result != verdict.NotReproduced {
		t.Errorf("foreign 403: %s %s", got.Outcome, got.Detail)
	}
	// The plaintext request reached echo (answered 400, say) though the
	// client saw its connection cut: not a STRICT refusal.
	reached := []echolog.ErrorAnswer{{Method: "GET", URI: "/" + mark(fresh.Plain), Status: 400, Remote: "10.0.0.9:4711"}, {Method: "GET", URI: "/?status=403&" + echolog.MarkParam + "=" + fresh.Control, Status: 403}}
	if got, _ := judgeStrictNo403(cut, control, reached, fresh); got.Outcome != "reached the server" {
		t.Errorf("plaintext reached echo: %s", got.Outcome)
	}
}
