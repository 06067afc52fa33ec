package load

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
)

// FortioLoad is one load run by the client as `fortio load` runs it
// (echo.LoadPath), with or without -allow-initial-errors. Unlike Run, whose
// warm-up check is the engine's preflight (fortio's REST API always allows
// initial errors), an abort here is fortio's own: its warm-up met a code
// other than 2xx or 418 and RunHTTPTest returned the error.
type FortioLoad struct {
	Name    string
	Request echo.LoadRequest
	Raw     []byte // the client's reply, byte for byte (also <name>.json)
	// Aborted and Error are fortio's: the run did not happen, and why
	// (e.g. "error 503 for http://... (85 bytes)").
	Aborted bool
	Error   string
	// Result is fortio's result; on an abort its error result (Message
	// "warmup error", Exception).
	Result     *Result
	Start, End time.Time
}

// RunFortioLoad runs q on the client and returns what fortio did. An abort
// is not an error of RunFortioLoad: it is the outcome. The reply is kept as
// <name>.json in the raw directory (never overwritten).
func (e *Engine) RunFortioLoad(ctx context.Context, name string, q echo.LoadRequest) (*FortioLoad, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("load: fortio load %q: %w", name, err)
	}
	rawPath := filepath.Join(e.rawDir, name+".json")
	if _, err := os.Stat(rawPath); err == nil {
		return nil, fmt.Errorf("load: fortio load %q: %s already exists; raw results are never overwritten, use a new name", name, rawPath)
	}
	raw, start, end, err := e.postTo(ctx, e.loadURL, q, q.Duration)
	fl := &FortioLoad{Name: name, Request: q, Raw: raw, Start: start, End: end}
	if raw != nil {
		if werr := os.WriteFile(rawPath, raw, 0o644); werr != nil {
			return fl, fmt.Errorf("load: fortio load %q: keeping raw result: %w", name, werr)
		}
	}
	if err != nil {
		return fl, fmt.Errorf("load: fortio load %q: %w", name, err)
	}
	var reply echo.LoadReply
	if err := json.Unmarshal(raw, &reply); err != nil {
		return fl, fmt.Errorf("load: fortio load %q: reply is not an echo.LoadReply (%v): %.200q", name, err, raw)
	}
	fl.Aborted, fl.Error = reply.Aborted, reply.Error
	if reply.Aborted {
		var r Result
		if err := json.Unmarshal(reply.Result, &r); err != nil {
			return fl, fmt.Errorf("load: fortio load %q: error result: %w", name, err)
		}
		fl.Result = &r
		return fl, nil
	}
	res, err := decodeResult(reply.Result)
	fl.Result = res
	if err != nil {
		return fl, fmt.Errorf("load: fortio load %q: %w", name, err)
	}
	return fl, nil
}
