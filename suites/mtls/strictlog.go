package mtls

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/echolog"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// HYBRID's operational point about STRICT: the refusal is a cut
// connection, not an HTTP error, so the server's log holds no 403 for it.
// The server is echo, whose log records every answer of 400 or above
// (echo.ErrorAnswerMsg). The detector is the log itself, so it carries its
// own positive control: after the plaintext attempt, the in-mesh client
// asks echo for a 403 (fortio's ?status=403); that answer must be in the
// same window of echo's logs. A log that cannot show the control's 403 (not
// collected, cut off, another server) is a broken measurement, not a pass.
// Both requests carry a mark in their query, so the plaintext request is
// recognised if it reached echo at all and the control's line is told
// from any other 403.

// strictLogMarks are the marks of one measurement's two requests.
type strictLogMarks struct{ Plain, Control string }

// judgeStrictNo403 judges the plaintext client's result and the server's
// error answers in the window: verified when the client got no HTTP
// response, the plaintext request left no line, and the only 403 is the
// control's. The control's own client result must be a 403 and its line
// present, or the measurement is broken (error).
func judgeStrictNo403(plain, control probe.Result, answers []echolog.ErrorAnswer, marks strictLogMarks) (verdict.Measurement, error) {
	if control.Outcome != "http-403" {
		return verdict.Measurement{}, fmt.Errorf("the control call for a 403 (?status=403) got %s %s: the in-mesh path to the pod does not work, nothing to compare the log with", control.Outcome, control.Detail)
	}
	var controlSeen bool
	var reached, other403 []string
	for _, a := range answers {
		switch {
		case strings.Contains(a.URI, marks.Control):
			controlSeen = controlSeen || a.Status == http.StatusForbidden
		case strings.Contains(a.URI, marks.Plain):
			reached = append(reached, fmt.Sprintf("%s %s -> %d from %s", a.Method, a.URI, a.Status, a.Remote))
		case a.Status == http.StatusForbidden:
			other403 = append(other403, fmt.Sprintf("%s %s from %s", a.Method, a.URI, a.Remote))
		}
	}
	if !controlSeen {
		return verdict.Measurement{}, fmt.Errorf("echo answered the control call 403 but its log window holds no 403 line marked %s (%d error answers read): this log cannot show a 403, so its silence proves nothing", marks.Control, len(answers))
	}
	m := verdict.Measurement{Extra: map[string]float64{"error_answers": float64(len(answers)), "other_403": float64(len(other403))}}
	switch {
	case plain.Outcome != probe.NoHTTPResponse:
		m.Outcome = plain.Outcome
		m.Detail = fmt.Sprintf("the plaintext client got %s %s, not a cut connection", plain.Outcome, plain.Detail)
	case len(reached) > 0:
		m.Outcome = "reached the server"
		m.Detail = "the plaintext request was answered by echo with an error: " + strings.Join(reached, "; ")
	case len(other403) > 0:
		m.Outcome = "403 in the server's log"
		m.Detail = "403 lines besides the control's: " + strings.Join(other403, "; ")
	default:
		m.Outcome = "verified"
		m.Detail = fmt.Sprintf("plaintext client: %s %s; echo's log: no 403 but the control's (%d error answers in the window)", plain.Outcome, plain.Detail, len(answers))
	}
	return m, nil
}

// strictNo403 makes the plaintext attempt on one echo pod under the base
// set's STRICT, then the in-mesh control call for a 403 through Service echo
// (a sidecar's call to a bare pod IP would leave the mesh as plaintext
// passthrough and be cut by the same STRICT), and reads every echo pod's
// log from just before the first request until the control's line is
// there (Timeouts.LogFlush: the wait is for the control, never for the
// plaintext's absence).
func strictNo403(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	pods, err := m.Kube.ReadyPods(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return verdict.Measurement{}, err
	}
	if len(pods) == 0 {
		return verdict.Measurement{}, fmt.Errorf("no Ready echo pod in %s", r.Namespace())
	}
	nonce := fmt.Sprintf("%s-%d", r.Env.Config.RunID, time.Now().UnixNano())
	marks := strictLogMarks{Plain: "plain-" + nonce, Control: "control-" + nonce}
	since := time.Now().Add(-echolog.LogClockSlack)
	plain, err := scenario.Probe(ctx, r, scenario.Outside(), fmt.Sprintf("http://%s:%d/?%s=%s", pods[0].Status.PodIP, fixtures.EchoHTTPPort, echolog.MarkParam, marks.Plain))
	if err != nil {
		return verdict.Measurement{}, err
	}
	control, err := scenario.Probe(ctx, r, scenario.InMesh(r), scenario.EchoURL(r)+"?status=403&"+echolog.MarkParam+"="+marks.Control)
	if err != nil {
		return verdict.Measurement{}, err
	}
	var answers []echolog.ErrorAnswer
	// A missing control line is judged (an error naming it) once the wait
	// has passed, so the loop ends either way.
	deadline := time.Now().Add(r.Env.Config.Timeouts.LogFlush)
	for {
		answers = nil
		for _, p := range pods {
			log, err := m.Kube.Logs(ctx, p.Namespace, p.Name, fixtures.EchoName, since)
			if err != nil {
				return verdict.Measurement{}, fmt.Errorf("echo pod %s's log: %w", p.Name, err)
			}
			a, err := echolog.ParseErrorAnswers(log)
			if err != nil {
				return verdict.Measurement{}, fmt.Errorf("echo pod %s's log: %w", p.Name, err)
			}
			answers = append(answers, a...)
		}
		if hasMark(answers, marks.Control) || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return verdict.Measurement{}, ctx.Err()
		case <-time.After(r.Env.Config.Timeouts.ConvergePoll):
		}
	}
	got, err := judgeStrictNo403(plain, control, answers, marks)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("echo pods of %s: %w", r.Namespace(), err)
	}
	r.Logf("STRICT and the server's log: %s", got.Detail)
	return got, nil
}

func hasMark(answers []echolog.ErrorAnswer, mark string) bool {
	for _, a := range answers {
		if strings.Contains(a.URI, mark) {
			return true
		}
	}
	return false
}
