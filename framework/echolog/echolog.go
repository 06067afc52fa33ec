// Package echolog reads echo's error-answer log (every answer of 400 or
// above, echo.ErrorAnswerMsg) as the kubelet returns it, and the mark the
// suite tags its requests with so their lines are told from any other.
package echolog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
)

// MarkParam is the query parameter the suite marks its requests with
// (fortio's echo handler ignores parameters it does not know).
const MarkParam = "meshclaims-mark"

// logClockSlack starts the log window this much before the first request:
// SinceTime has second resolution and the node's clock is not the test
// host's. Lines from the slack are harmless: ours are told by their mark,
// and a foreign 403 there fails the claim rather than passing it.
const LogClockSlack = 2 * time.Second

// ErrorAnswer is one line of echo's error-answer log.
type ErrorAnswer struct {
	Method string `json:"method"`
	URI    string `json:"uri"`
	Status int    `json:"status"`
	Remote string `json:"remote"`
}

// ParseErrorAnswers reads the error answers from a container log as the
// kubelet returns it with timestamps ("<RFC3339Nano> <line>"; without the
// prefix too). Lines that are not echo's JSON (other messages, fortio's
// own) are skipped; an error-answer line without a status is an error.
func ParseErrorAnswers(log string) ([]ErrorAnswer, error) {
	var out []ErrorAnswer
	for i, line := range strings.Split(log, "\n") {
		if j := strings.IndexByte(line, '{'); j >= 0 {
			line = line[j:]
		} else {
			continue
		}
		var l struct {
			Msg string `json:"msg"`
			ErrorAnswer
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil || l.Msg != echo.ErrorAnswerMsg {
			continue
		}
		if l.Status == 0 {
			return nil, fmt.Errorf("log line %d is an %q without a status: %s", i+1, echo.ErrorAnswerMsg, line)
		}
		out = append(out, l.ErrorAnswer)
	}
	return out, nil
}
