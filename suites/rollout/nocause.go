package rollout

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// noResponseCauses is rollout.no-response-cause's measurement of a load:
// the run's -1s counted per cause the client's own log gives for each
// (reset, eof, timeout, refused, other; unattributed when no line explains
// one), with the -1 count of all requests beside them. fortio's silent
// dead-socket retries (a reused connection found closed, retried on a new
// one) are recorded apart: they are not -1s.
func noResponseCauses(run *load.Run) verdict.Measurement {
	m := verdict.Measurement{
		Total:       verdict.Int64(run.Result.Requests()),
		NoResponse:  verdict.Int64(run.SocketErrors()),
		Attribution: map[string]int64{},
		Extra:       map[string]float64{"dead_socket_retries": float64(run.DeadSocketRetries)},
	}
	for c, n := range run.Causes {
		if n > 0 {
			m.Attribution[causeCategory(c)] = int64(n)
		}
	}
	for c, n := range run.DeadSocketCauses {
		m.Extra["dead_socket_"+string(c)] = float64(n)
	}
	m.Detail = fmt.Sprintf("%d -1s of %d requests; dominant cause %q", run.SocketErrors(), run.Result.Requests(), verdict.Dominant(m.Attribution))
	if !run.LogsComplete {
		m.Detail += "; the client's log did not reach the run's end line"
	}
	return m
}

// causeCategory is a load.Cause as the registry's attribution category:
// the same word, and the engine's unattributed is the registry's.
func causeCategory(c load.Cause) string {
	if c == load.CauseUnattributed {
		return claims.Unattributed
	}
	return string(c)
}
