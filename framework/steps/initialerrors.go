package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// GUIDE's method lesson: 'Without -allow-initial-errors, fortio aborts the
// entire run if its warmup request happens to land during a rollout and
// gets a 503.' The check makes load starts while echo is restarted again
// and again, in pairs: one without the flag (its warm-up, one request per
// connection, decides whether it runs: load.ErrInitialErrors when it does
// not) and one with it, which must always run. The loads with the flag are
// the control: the rollout is not breaking the client itself.

// InitialErrorsRun is each started load's length: the warm-up is what is
// judged, the load only has to start.
const InitialErrorsRun = time.Second

// InitialErrorTally counts the starts.
type InitialErrorTally struct {
	Starts  int64 // pairs started during the rollouts
	Aborted int64 // loads without the flag aborted on their warm-up
	Ran     int64 // loads with the flag that ran
}

// StartFunc starts one load (i-th pair; allow = -allow-initial-errors) and
// returns its error as the engine does.
type StartFunc func(ctx context.Context, i int, allow bool) error

// StartsDuringRollout restarts through d until window has passed (each
// rollout waited for up to limit, as GUIDE's loop does) and meanwhile makes
// pairs of starts with start. A load without the flag that fails other
// than on initial errors, or any load with the flag that fails, is an
// error (err): the client, not the warm-up, broke. The restart loop's own
// error (a rollout over its limit: part of the churn, as in T1) is
// returned apart, in loopErr.
func StartsDuringRollout(ctx context.Context, d rollout.Driver, window, limit time.Duration, start StartFunc) (t InitialErrorTally, cycles []rollout.Cycle, loopErr, err error) {
	until := time.Now().Add(window)
	type loop struct {
		cycles []rollout.Cycle
		err    error
	}
	done := make(chan loop, 1)
	go func() {
		c, err := rollout.Run(ctx, d, until, limit, nil)
		done <- loop{c, err}
	}()
	var serr error
	for i := 0; time.Now().Before(until) && serr == nil; i++ {
		if err := start(ctx, i, false); err != nil {
			if !errors.Is(err, load.ErrInitialErrors) {
				serr = fmt.Errorf("start %d without -allow-initial-errors: %w", i, err)
				break
			}
			t.Aborted++
		}
		t.Starts++
		if err := start(ctx, i, true); err != nil {
			serr = fmt.Errorf("start %d with -allow-initial-errors did not run: %w", i, err)
			break
		}
		t.Ran++
	}
	l := <-done // the loop ends with its last rollout complete (or over its limit)
	return t, l.cycles, l.err, serr
}

// JudgeInitialErrors: verified when at least one start without the flag
// aborted while every start with it ran; none aborted is inconclusive (no
// warm-up landed on an error: GUIDE's 'if'); no start is an error.
func JudgeInitialErrors(t InitialErrorTally, cycles int) (verdict.Measurement, error) {
	if t.Starts == 0 {
		return verdict.Measurement{}, errors.New("no load was started during the rollouts")
	}
	if t.Ran != t.Starts {
		return verdict.Measurement{}, fmt.Errorf("%d of %d loads with -allow-initial-errors ran: the client broke, not the warm-up", t.Ran, t.Starts)
	}
	m := verdict.Measurement{Count: verdict.Int64(t.Aborted), Total: verdict.Int64(t.Starts),
		Extra:  map[string]float64{"cycles": float64(cycles), "ran_with_flag": float64(t.Ran)},
		Detail: fmt.Sprintf("during %d rollouts: %d of %d loads without -allow-initial-errors aborted on their warm-up; all %d with it ran", cycles, t.Aborted, t.Starts, t.Ran)}
	if t.Aborted > 0 {
		m.Outcome = "verified"
	} else {
		m.Detail = "inconclusive: no warm-up landed on an error; " + m.Detail
	}
	return m, nil
}

// InitialErrorsDuringRollout runs the check in r's mode: the registry's
// load (qps, connections) started in pairs for InitialErrorsRun each from
// the in-mesh client against echo while deployment/echo is restarted for
// the setup's duration.
func InitialErrorsDuringRollout(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	mesh, err := ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	s, err := SetupLoad(r, EchoURL(r), RolloutFloor)
	if err != nil {
		return verdict.Measurement{}, err
	}
	window := s.Duration
	s.Duration = InitialErrorsRun
	r.SetSetup("pairs of %s loads (%g qps x %d connections) without and with -allow-initial-errors while echo restarts for %s", InitialErrorsRun, s.QPS, s.Connections, window)
	if err := Quiesce(ctx, r, r.Mode); err != nil {
		return verdict.Measurement{}, err
	}
	if err := mesh.Kube.CheckWrite(ctx); err != nil {
		return verdict.Measurement{}, err
	}
	driver, err := NewDeploymentDriver(mesh, r.Namespace(), fixtures.EchoName)
	if err != nil {
		return verdict.Measurement{}, err
	}
	tally, cycles, loopErr, err := StartsDuringRollout(ctx, driver, window, r.Env.Config.Timeouts.RolloutComplete, func(ctx context.Context, i int, allow bool) error {
		x := s
		x.AllowInitialErrors = allow
		name := fmt.Sprintf("initial-errors-%d-strict", i)
		if allow {
			name = fmt.Sprintf("initial-errors-%d-allowed", i)
		}
		_, err := Load(ctx, r, InMesh(r), name, x)
		return err
	})
	if err != nil {
		return verdict.Measurement{}, err
	}
	if err := restartsFailed(cycles); err != nil {
		return verdict.Measurement{}, err
	}
	if loopErr != nil {
		r.Logf("rollout loop: %v", loopErr)
	}
	got, err := JudgeInitialErrors(tally, len(cycles))
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("initial errors: %s", got.Detail)
	return got, nil
}

// restartsFailed is an error when no rollout ran or one could not even be
// started: then the starts were not made during churn. A rollout over its
// limit is churn, not a failure.
func restartsFailed(cycles []rollout.Cycle) error {
	if len(cycles) == 0 {
		return errors.New("no rollout ran during the starts")
	}
	for _, c := range cycles {
		if c.Err != nil && c.End.Equal(c.Restarted) {
			return fmt.Errorf("the restart loop failed: %w", c.Err)
		}
	}
	return nil
}
