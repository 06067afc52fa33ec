package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"

	"github.com/meshclaims/meshclaims/framework/fortioresult/fortiotest"
	"github.com/meshclaims/meshclaims/framework/stats"
)

func analyze(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runAnalyze(args, &out, &errb)
	return code, out.String(), errb.String()
}

// fortioRate is the status line the text output must show, computed from
// fortio's own counts.
func fortioRate(t *testing.T, res *fhttp.HTTPRunnerResults, code int) string {
	t.Helper()
	var total int64
	for _, n := range res.RetCodes {
		total += n
	}
	p, err := stats.Wilson(res.RetCodes[code], total, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return "status " + padLeft(strconv.Itoa(code), 4) + ": " + p.String()
}

func padLeft(s string, n int) string {
	for len(s) < n {
		s = " " + s
	}
	return s
}

// section returns the text block of one file in analyze's text output.
func section(t *testing.T, out, path string) string {
	t.Helper()
	i := strings.Index(out, path+"\n")
	if i < 0 {
		t.Fatalf("output does not name %s:\n%s", path, out)
	}
	rest := out[i:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestAnalyzeTextEqualsFortio(t *testing.T) {
	clean, cleanRes := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithConnections(4), fortiotest.WithLabels("clean"))
	errs, errsRes := fortiotest.Run(t, fortiotest.WithQPS(300), fortiotest.WithConnections(3),
		fortiotest.WithStatus("503:20"), fortiotest.WithLabels("503s"))

	code, out, stderr := analyze(clean, errs)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, c := range []struct {
		path string
		res  *fhttp.HTTPRunnerResults
	}{{clean, cleanRes}, {errs, errsRes}} {
		sec := section(t, out, c.path)
		want := []string{
			"requests " + strconv.FormatInt(c.res.DurationHistogram.Count, 10) + " at " +
				strconv.FormatFloat(c.res.ActualQPS, 'f', 1, 64) + " qps (requested " + c.res.RequestedQPS + ")",
			"mean " + msText(c.res.DurationHistogram.Avg*1e3),
			"sockets " + strconv.FormatInt(c.res.SocketCount, 10) + " for " + strconv.Itoa(c.res.NumThreads) + " connections",
			fortioRate(t, c.res, -1),
			fortioRate(t, c.res, 503),
			fortioRate(t, c.res, 200),
			"histogram resolution 0.1 ms (recorded)",
			"little's law: ",
		}
		for _, p := range c.res.DurationHistogram.Percentiles {
			want = append(want, "P"+strconv.FormatFloat(p.Percentile, 'f', -1, 64)+" "+msText(p.Value*1e3))
		}
		for _, w := range want {
			if !strings.Contains(sec, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.path, w, sec)
			}
		}
	}
	if errsRes.RetCodes[503] == 0 {
		t.Errorf("no 503 injected: %v", errsRes.RetCodes)
	}
	t.Logf("analyze output:\n%s", out)
}

func TestAnalyzeJSONEqualsFortio(t *testing.T) {
	clean, cleanRes := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithConnections(4))
	killed, killedRes := fortiotest.Run(t, fortiotest.WithQPS(200), fortiotest.WithDuration(1500*time.Millisecond),
		fortiotest.WithConnections(4), fortiotest.WithKillBackendAfter(500*time.Millisecond))

	code, out, stderr := analyze("--json", clean, killed)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per file, got %d:\n%s", len(lines), out)
	}
	for i, c := range []struct {
		path string
		res  *fhttp.HTTPRunnerResults
	}{{clean, cleanRes}, {killed, killedRes}} {
		var got struct {
			File          string             `json:"file"`
			Requests      int64              `json:"requests"`
			Codes         map[string]int64   `json:"codes"`
			SocketErrors  int64              `json:"socket_errors"`
			Sockets       int64              `json:"sockets"`
			Connections   int                `json:"connections"`
			QPS           float64            `json:"qps"`
			PercentilesMs map[string]float64 `json:"percentiles_ms"`
			MeanMs        float64            `json:"mean_ms"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, lines[i])
		}
		r := c.res
		if got.File != c.path || got.Requests != r.DurationHistogram.Count || got.SocketErrors != r.RetCodes[-1] ||
			got.Sockets != r.SocketCount || got.Connections != r.NumThreads || got.QPS != r.ActualQPS ||
			got.MeanMs != r.DurationHistogram.Avg*1e3 {
			t.Errorf("line %d: %+v\nfortio: count %d -1s %d sockets %d threads %d qps %v avg %v",
				i, got, r.DurationHistogram.Count, r.RetCodes[-1], r.SocketCount, r.NumThreads, r.ActualQPS, r.DurationHistogram.Avg)
		}
		if len(got.Codes) != len(r.RetCodes) {
			t.Errorf("line %d: codes %v, fortio %v", i, got.Codes, r.RetCodes)
		}
		for code, n := range r.RetCodes {
			if got.Codes[strconv.Itoa(code)] != n {
				t.Errorf("line %d: codes %v, fortio %v", i, got.Codes, r.RetCodes)
			}
		}
		for _, p := range r.DurationHistogram.Percentiles {
			k := strconv.FormatFloat(p.Percentile, 'f', -1, 64)
			if got.PercentilesMs[k] != p.Value*1e3 {
				t.Errorf("line %d: P%s %v ms, fortio %v s", i, k, got.PercentilesMs[k], p.Value)
			}
		}
	}
	if killedRes.RetCodes[-1] == 0 || killedRes.SocketCount <= int64(killedRes.NumThreads) {
		t.Errorf("killed backend produced no -1 or no reconnection: %v, %d sockets", killedRes.RetCodes, killedRes.SocketCount)
	}
}

func TestAnalyzeBadFiles(t *testing.T) {
	good, _ := fortiotest.Run(t, fortiotest.WithDuration(500*time.Millisecond))
	dir := t.TempDir()
	notFortio := filepath.Join(dir, "deployment.json")
	if err := os.WriteFile(notFortio, []byte(`{"kind":"Deployment"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(dir, "absent.json")

	code, out, stderr := analyze(notFortio, good, absent)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, bad := range []string{notFortio, absent} {
		if !strings.Contains(stderr, bad) {
			t.Errorf("stderr does not name %s:\n%s", bad, stderr)
		}
	}
	if !strings.Contains(stderr, "missing RetCodes") {
		t.Errorf("stderr does not say what is wrong:\n%s", stderr)
	}
	if !strings.Contains(out, good+"\n") {
		t.Errorf("the good file was not summarized:\n%s", out)
	}
}

func TestAnalyzeUsage(t *testing.T) {
	code, out, stderr := analyze()
	if code != 2 || out != "" || !strings.Contains(stderr, "usage: meshclaims analyze [--json] FILE...") {
		t.Errorf("no files: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = analyze("--jsn", "x.json")
	if code != 2 || !strings.Contains(stderr, "jsn") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr)
	}
	code, _, _ = analyze("--json")
	if code != 2 {
		t.Errorf("--json without files: exit %d, want 2", code)
	}
}

// TestAnalyzeThroughMain checks the command is wired into the CLI.
func TestAnalyzeThroughMain(t *testing.T) {
	good, res := fortiotest.Run(t, fortiotest.WithDuration(500*time.Millisecond))
	var out, errb bytes.Buffer
	if code := run([]string{"analyze", "--json", good}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["requests"] != float64(res.DurationHistogram.Count) {
		t.Errorf("requests %v, fortio %d", got["requests"], res.DurationHistogram.Count)
	}
}

// line returns the line of sec that starts with prefix (after indentation).
func line(t *testing.T, sec, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, sec)
	return ""
}

// The Little's-law line: "not applicable" for a paced run (fixed qps reached,
// connections idle), even with a coarse histogram, which its own line flags;
// OK for a saturated run that obeys it and FAIL for the same file with its
// mean doubled (the negative control).
func TestAnalyzeLittleLine(t *testing.T) {
	paced, _ := fortiotest.Run(t, fortiotest.WithQPS(100), fortiotest.WithConnections(4),
		fortiotest.WithDelay("200us"), fortiotest.WithResolution(0.001), fortiotest.WithLabels("paced"))
	saturated, _ := fortiotest.Run(t, fortiotest.WithQPS(0), fortiotest.WithConnections(4),
		fortiotest.WithDelay("2ms"), fortiotest.WithResolution(1e-5), fortiotest.WithLabels("saturated"))
	var m map[string]any
	data, err := os.ReadFile(saturated)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	h := m["DurationHistogram"].(map[string]any)
	h["Avg"] = h["Avg"].(float64) * 2
	doubled := filepath.Join(t.TempDir(), "doubled-mean.json")
	data, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(doubled, data, 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := analyze(paced, saturated, doubled)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, c := range []struct{ path, little, histogram string }{
		{paced, "little's law: not applicable: not saturated (", "histogram resolution 1 ms (recorded): coarse: "},
		{saturated, "little's law: OK: mean ", "histogram resolution 0.01 ms (recorded): fine: "},
		{doubled, "little's law: FAIL: mean ", "histogram resolution 0.01 ms (recorded): fine: "},
	} {
		sec := section(t, out, c.path)
		if l := line(t, sec, "little's law:"); !strings.HasPrefix(l, c.little) {
			t.Errorf("%s: %q, want it to start with %q", filepath.Base(c.path), l, c.little)
		}
		if l := line(t, sec, "histogram resolution"); !strings.HasPrefix(l, c.histogram) {
			t.Errorf("%s: %q, want it to start with %q", filepath.Base(c.path), l, c.histogram)
		}
	}
}

// A real gRPC run (fortio's gRPC runner against its ping server on
// loopback) is analyzed like an HTTP one: SERVING/ERROR rates, percentiles,
// no socket numbers (fortio's gRPC runner counts none); a truncated copy is
// refused with an error that names it, while the good file still prints.
func TestAnalyzeGRPC(t *testing.T) {
	good, res := fortiotest.RunGRPC(t, fortiotest.WithQPS(200), fortiotest.WithConnections(4),
		fortiotest.WithResolution(1e-5), fortiotest.WithLabels("grpc-sidecar-run1"))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "grpc-truncated.json")
	if err := os.WriteFile(truncated, data[:len(data)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := analyze(good, truncated)
	if code != 1 {
		t.Errorf("exit %d, want 1 (one bad file)", code)
	}
	if !strings.Contains(stderr, truncated+": not a fortio result") || !strings.Contains(stderr, "unexpected end of JSON input") {
		t.Errorf("stderr does not name the truncated file and its fault:\n%s", stderr)
	}
	sec := section(t, out, good)
	p, err := stats.Wilson(res.RetCodes["SERVING"], res.DurationHistogram.Count, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`grpc run "GRPC Ping"`,
		"url " + res.Destination,
		"requests " + strconv.FormatInt(res.DurationHistogram.Count, 10) + " at " + strconv.FormatFloat(res.ActualQPS, 'f', 1, 64) + " qps",
		"status SERVING: " + p.String(),
		"status ERROR: 0/",
		"mean " + msText(res.DurationHistogram.Avg*1e3),
		"sockets not recorded (fortio's grpc runner does not count them); 4 concurrent calls",
		"histogram resolution 0.01 ms (inferred): fine: ",
		"little's law: not applicable: ",
	}
	for _, p := range res.DurationHistogram.Percentiles {
		want = append(want, "P"+strconv.FormatFloat(p.Percentile, 'f', -1, 64)+" "+msText(p.Value*1e3))
	}
	for _, w := range want {
		if !strings.Contains(sec, w) {
			t.Errorf("output lacks %q:\n%s", w, sec)
		}
	}

	t.Logf("analyze output:\n%s", out)
	code, out, _ = analyze("--json", good)
	var got struct {
		Protocol        string           `json:"protocol"`
		Requests        int64            `json:"requests"`
		Codes           map[string]int64 `json:"codes"`
		SocketsRecorded bool             `json:"sockets_recorded"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v: %s", code, err, out)
	}
	if got.Protocol != "grpc" || got.Requests != res.DurationHistogram.Count || got.Codes["SERVING"] != res.RetCodes["SERVING"] || got.SocketsRecorded {
		t.Errorf("--json: %+v, fortio count %d codes %v", got, res.DurationHistogram.Count, res.RetCodes)
	}
}
