package load

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// Cause is why a request got no HTTP response (fortio code -1), or why a
// keep-alive socket was found dead.
type Cause string

// The causes the claims talk about (GUIDE §1: sidecar "connection reset by
// peer", ambient "EOF"; REVIEW asks for reset vs EOF vs timeout).
const (
	CauseReset   Cause = "reset"   // connection reset by peer, broken pipe (the peer reset the socket)
	CauseEOF     Cause = "eof"     // the peer closed the connection before any response byte
	CauseRefused Cause = "refused" // connect: connection refused
	CauseTimeout Cause = "timeout" // i/o timeout, deadline exceeded
	CauseOther   Cause = "other"   // any other socket error (DNS, TLS, short write, ...)
	// CauseUnattributed counts -1s in the result that no log line explains
	// (log lines lost, or the client logs above Error level).
	CauseUnattributed Cause = "unattributed"
)

// failureMsgs are the messages fortio's HTTP clients (fhttp, v1.75.3) log for
// a request that ends as -1: one line per failing request.
var failureMsgs = map[string]bool{
	"Unable to connect":                           true,
	"Unable to TLS connect":                       true,
	"Unable to resolve hostname":                  true,
	"Unable to write":                             true,
	"Short write":                                 true,
	"Unable to close write":                       true,
	"Read error":                                  true,
	"Timeout error (incomplete/invalid response)": true,
	"Unable to send request":                      true, // std client (stdclient=on)
}

// retryMsgs are fortio's silent retries: a reused keep-alive socket failed
// (write error, or error/EOF before the first response byte), fortio closes it
// and retries the request once on a new socket. If the retry succeeds, the
// result JSON shows nothing but one more socket.
var retryMsgs = map[string]bool{
	"Closing dead socket":                     true,
	"Closing dead socket (err at first read)": true,
}

// nonOKMsg is logged by fortio's HTTP clients for each non-2xx answer when
// log-errors is on (fhttp, v1.75.3), with the code as an attribute.
const nonOKMsg = "Non ok http code"

// runEndedMsg is logged by fortio's periodic runner at the end of every run
// (Info level), tagged with the run id: proof the log source covers the run.
const runEndedMsg = "Run ended"

// Event is one classified log line of a run.
type Event struct {
	Time   time.Time // from the log line; zero if the line carries no usable timestamp
	Cause  Cause
	Msg    string // fortio's message, e.g. "Read error"
	Err    string // fortio's err attribute, e.g. "read tcp ...: connection reset by peer"
	Thread int    // fortio's connection index
	Code   int    `json:",omitempty"` // the HTTP status of a non-2xx answer (NonOK); 0 otherwise
}

// Attribution is what a run's log lines say about its socket errors.
type Attribution struct {
	// Failures are the -1s of the measured phase, one per request.
	Failures []Event
	// Warmup are -1s of fortio's warm-up calls (one per connection before the
	// measured phase). fortio does not count them in RetCodes; they are kept
	// apart so that Failures lines up with RetCodes[-1].
	Warmup []Event
	// Retries are the silent dead-socket retries.
	Retries []Event
	// NonOK are the measured phase's non-2xx answers, logged only when the
	// load ran with LogErrors (Cause is empty, Code is set).
	NonOK []Event
	// RunEnded is true when the run's "Run ended" line was seen.
	RunEnded bool
}

// Classify reads fortio log text and attributes the lines of run runID.
// measuredStart is the result's StartTime: lines stamped before it are
// warm-up. Lines without a run id or timestamp are treated as belonging to
// the run and to the measured phase (the best that can be said of them).
//
// Both of fortio's log formats are understood: JSON (the default for a
// server, e.g. in a pod) and text ("[E] file.go:123> Read error, err=...").
// Lines may carry a leading RFC 3339 timestamp, as `kubectl logs
// --timestamps` adds.
func Classify(text string, runID int64, measuredStart time.Time) Attribution {
	var a Attribution
	for line := range strings.SplitSeq(text, "\n") {
		ll, ok := parseLogLine(line)
		if !ok {
			continue
		}
		if ll.hasRun && ll.run != runID {
			continue
		}
		switch {
		case ll.msg == runEndedMsg:
			a.RunEnded = true
		case failureMsgs[ll.msg]:
			ev := ll.event()
			if !ll.ts.IsZero() && !measuredStart.IsZero() && ll.ts.Before(measuredStart) {
				a.Warmup = append(a.Warmup, ev)
			} else {
				a.Failures = append(a.Failures, ev)
			}
		case retryMsgs[ll.msg]:
			a.Retries = append(a.Retries, ll.event())
		case ll.msg == nonOKMsg:
			if !ll.ts.IsZero() && !measuredStart.IsZero() && ll.ts.Before(measuredStart) {
				continue // a warm-up call: not in RetCodes either
			}
			a.NonOK = append(a.NonOK, Event{Time: ll.ts, Msg: ll.msg, Code: ll.code, Thread: ll.thread})
		}
	}
	return a
}

// CauseOf maps fortio's message and error text to a Cause.
func CauseOf(msg, errText string) Cause {
	e := strings.ToLower(errText)
	switch {
	case strings.Contains(e, "connection reset"), strings.Contains(e, "broken pipe"):
		return CauseReset
	case strings.Contains(e, "connection refused"):
		return CauseRefused
	case strings.HasPrefix(msg, "Timeout error"), strings.Contains(e, "i/o timeout"),
		strings.Contains(e, "deadline exceeded"), strings.Contains(e, "timeout"):
		return CauseTimeout
	case strings.Contains(e, "eof"):
		return CauseEOF
	}
	return CauseOther
}

// Count tallies events by cause.
func Count(evs []Event) map[Cause]int {
	m := map[Cause]int{}
	for _, e := range evs {
		m[e.Cause]++
	}
	return m
}

type logLine struct {
	ts     time.Time
	msg    string
	err    string
	run    int64
	hasRun bool
	thread int
	code   int
}

func (l logLine) event() Event {
	return Event{Time: l.ts, Cause: CauseOf(l.msg, l.err), Msg: l.msg, Err: l.err, Thread: l.thread}
}

// parseLogLine understands one line of fortio's logger output.
func parseLogLine(line string) (logLine, bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return logLine{}, false
	}
	var prefixTS time.Time
	// `kubectl logs --timestamps` / the API's timestamps=true: "2026-01-02T03:04:05.123456789Z <line>".
	if line[0] != '{' && line[0] != '[' {
		if first, rest, ok := strings.Cut(line, " "); ok {
			if t, err := time.Parse(time.RFC3339Nano, first); err == nil {
				prefixTS, line = t, strings.TrimSpace(rest)
			}
		}
	}
	var ll logLine
	var ok bool
	if strings.HasPrefix(line, "{") {
		ll, ok = parseJSONLine(line)
	} else {
		ll, ok = parseTextLine(line)
	}
	if ok && ll.ts.IsZero() {
		ll.ts = prefixTS
	}
	return ll, ok
}

func parseJSONLine(line string) (logLine, bool) {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return logLine{}, false
	}
	var ll logLine
	ll.msg, _ = m["msg"].(string)
	if ts, ok := m["ts"].(float64); ok {
		sec, frac := math.Modf(ts)
		ll.ts = time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000)
	}
	switch e := m["err"].(type) {
	case string:
		ll.err = e
	case nil:
	default: // an error with a JSON marshaller: keep its JSON
		b, _ := json.Marshal(e)
		ll.err = string(b)
	}
	if r, ok := m["run"].(float64); ok {
		ll.run, ll.hasRun = int64(r), true
	}
	if t, ok := m["thread"].(float64); ok {
		ll.thread = int(t)
	}
	if c, ok := m["code"].(float64); ok {
		ll.code = int(c)
	}
	return ll, true
}

// parseTextLine reads fortio's text format: "[E] file.go:123> msg, k=v, k=v"
// (with an optional "hh:mm:ss " prefix from the standard logger, and without
// "file:line> " when file and line logging is off).
func parseTextLine(line string) (logLine, bool) {
	var ll logLine
	// Drop everything up to the level marker.
	i := strings.Index(line, "] ")
	if i < 0 {
		return ll, false
	}
	rest := line[i+2:]
	if j := strings.Index(rest, "> "); j >= 0 && !strings.Contains(rest[:j], " ") {
		rest = rest[j+2:]
	}
	msg, attrs, _ := strings.Cut(rest, ", ")
	ll.msg = strings.TrimSpace(msg)
	// Attributes are ", key=value"; values are quoted when they are strings.
	for attrs != "" {
		kv, tail := attrs, ""
		if q := strings.Index(attrs, "="); q >= 0 && q+1 < len(attrs) && attrs[q+1] == '"' {
			// quoted value: find its end
			if v, err := strconv.QuotedPrefix(attrs[q+1:]); err == nil {
				kv = attrs[:q+1] + v
				tail = strings.TrimPrefix(attrs[q+1+len(v):], ", ")
			}
		} else if c := strings.Index(attrs, ", "); c >= 0 {
			kv, tail = attrs[:c], attrs[c+2:]
		}
		k, v, _ := strings.Cut(kv, "=")
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		switch k {
		case "err":
			ll.err = v
		case "run":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				ll.run, ll.hasRun = n, true
			}
		case "thread":
			ll.thread, _ = strconv.Atoi(v)
		case "code":
			ll.code, _ = strconv.Atoi(v)
		}
		if tail == attrs {
			break
		}
		attrs = tail
	}
	return ll, ll.msg != ""
}

// Tally counts failure and dead-socket retry lines in log text whatever
// their run id: a running load's errors so far, for progress output while
// its run id is not yet known (fortio tells it with the result).
func Tally(text string) (failures, retries int) {
	for line := range strings.SplitSeq(text, "\n") {
		ll, ok := parseLogLine(line)
		if !ok {
			continue
		}
		switch {
		case failureMsgs[ll.msg]:
			failures++
		case retryMsgs[ll.msg]:
			retries++
		}
	}
	return failures, retries
}

// Live reads the client's log while a load runs (its run id is not known
// until it ends; the client runs one load at a time): the times of its
// -1s and of its 503 answers (logged with LogErrors) from since on.
func Live(text string, since time.Time) (noResponse, unavailable []time.Time) {
	for line := range strings.SplitSeq(text, "\n") {
		ll, ok := parseLogLine(line)
		if !ok || ll.ts.IsZero() || ll.ts.Before(since) {
			continue
		}
		switch {
		case failureMsgs[ll.msg]:
			noResponse = append(noResponse, ll.ts)
		case ll.msg == nonOKMsg && ll.code == 503:
			unavailable = append(unavailable, ll.ts)
		}
	}
	return noResponse, unavailable
}
