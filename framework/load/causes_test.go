package load

import (
	"testing"
	"time"
)

// Lines below are fortio's own formats (fortio.org/log v1.18.3, fhttp
// v1.75.3): JSON as a server logs by default, text as a console logs, and
// the API's timestamps=true prefix. Pure parsing logic, so literal input.
func TestClassifyFormatsAndRunFilter(t *testing.T) {
	start := time.Unix(1700000000, 500000000)
	text := `{"ts":1700000000.100000,"level":"err","r":12,"file":"http_client.go","line":962,"msg":"Unable to connect","dest":{"IP":"127.0.0.1","Port":1,"Zone":""},"err":"dial tcp 127.0.0.1:1: connect: connection refused","numfd":12,"thread":0,"run":7}
{"ts":1700000000.600000,"level":"err","r":12,"file":"http_client.go","line":1138,"msg":"Read error","err":"read tcp 127.0.0.1:5->127.0.0.1:6: read: connection reset by peer","size":0,"header_len":0,"thread":1,"run":7}
{"ts":1700000000.700000,"level":"info","r":12,"file":"http_client.go","line":1028,"msg":"Closing dead socket","err":"write tcp 127.0.0.1:5->127.0.0.1:6: write: broken pipe","thread":1,"run":7}
{"ts":1700000000.800000,"level":"info","r":12,"file":"http_client.go","line":1119,"msg":"Closing dead socket (err at first read)","err":"EOF","thread":2,"run":7}
{"ts":1700000000.900000,"level":"err","r":12,"file":"http_client.go","line":1138,"msg":"Read error","err":"EOF","thread":2,"run":8}
2023-11-14T22:13:20.950000000Z [E] http_client.go:1138> Timeout error (incomplete/invalid response), err="read tcp 127.0.0.1:5->127.0.0.1:6: i/o timeout", size=0, header_len=0, dest="127.0.0.1:6", url="http://x/", thread=3, run=7
[E] http_client.go:535> Unable to send request, method="GET", url="http://x/", err="Get \"http://x/\": EOF", thread=0, run=7
{"ts":1700000001.000000,"level":"info","r":12,"file":"periodic.go","line":598,"msg":"Run ended","run":7,"elapsed":1000,"calls":10,"qps":10}
not a log line at all
`
	// Progress tallies every run's lines: 5 failures (warm-up included,
	// run 8 included) and 2 dead-socket retries.
	if f, r := Tally(text); f != 5 || r != 2 {
		t.Errorf("Tally = %d failures, %d retries; want 5, 2", f, r)
	}
	a := Classify(text, 7, start)
	if !a.RunEnded {
		t.Error("Run ended not seen")
	}
	if len(a.Warmup) != 1 || a.Warmup[0].Cause != CauseRefused {
		t.Errorf("warm-up: %+v, want one refused before StartTime", a.Warmup)
	}
	got := Count(a.Failures)
	want := map[Cause]int{CauseReset: 1, CauseTimeout: 1, CauseEOF: 1}
	if len(got) != len(want) {
		t.Fatalf("failures %v, want %v (run 8's line must be ignored)", got, want)
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("failures[%s] = %d, want %d (all: %v)", c, got[c], n, got)
		}
	}
	r := Count(a.Retries)
	if len(a.Retries) != 2 || r[CauseReset] != 1 || r[CauseEOF] != 1 {
		t.Errorf("retries %v, want reset (broken pipe) and eof", r)
	}
	if a.Failures[0].Thread != 1 || a.Failures[0].Time.IsZero() {
		t.Errorf("first failure lost its thread or time: %+v", a.Failures[0])
	}
	ts := time.Date(2023, 11, 14, 22, 13, 20, 950000000, time.UTC)
	if !a.Failures[1].Time.Equal(ts) {
		t.Errorf("timestamp prefix not used: %v", a.Failures[1].Time)
	}
}

func TestCauseOf(t *testing.T) {
	for _, c := range []struct {
		msg, err string
		want     Cause
	}{
		{"Read error", "read: connection reset by peer", CauseReset},
		{"Unable to write", "write: broken pipe", CauseReset},
		{"Unable to connect", "connect: connection refused", CauseRefused},
		{"Timeout error (incomplete/invalid response)", "", CauseTimeout},
		{"Unable to connect", "dial tcp 10.0.0.1:80: i/o timeout", CauseTimeout},
		{"Read error", "EOF", CauseEOF},
		{"Unable to send request", "unexpected EOF", CauseEOF},
		{"Unable to resolve hostname", "lookup x: no such host", CauseOther},
	} {
		if got := CauseOf(c.msg, c.err); got != c.want {
			t.Errorf("CauseOf(%q, %q) = %s, want %s", c.msg, c.err, got, c.want)
		}
	}
}

func TestFilterTimestamped(t *testing.T) {
	in := "2026-01-01T00:00:01Z a\n2026-01-01T00:00:03Z b\nplain\n"
	got := filterTimestamped(in, time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC))
	if got != "2026-01-01T00:00:01Z a\nplain\n" {
		t.Errorf("got %q", got)
	}
}
