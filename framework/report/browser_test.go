package report_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BrowserEnv opts into the browser test: set it to 1 where Debian's
// chromium is installed (CI's .ci/run after `apt-get install -y chromium`).
// Unset, the test is skipped and says so; set without a browser, it fails.
const BrowserEnv = "MESHCLAIMS_BROWSER"

// BrowserResultsEnv, if set, names a results directory of a real cluster
// run (CI: results/local-none after make e2e-local) whose report.html is
// opened too, as `meshclaims report` wrote it.
const BrowserResultsEnv = "MESHCLAIMS_BROWSER_RESULTS"

// TestHTMLReportInHeadlessChromium opens the report of a real none-mode run
// as a person would: in Chromium, from the file, offline. The DOM Chromium
// built must hold the verdict table and the three plots, and a PNG
// screenshot is kept as a test artifact (go test -artifacts keeps it under
// the output directory; otherwise it is in the test's temporary directory,
// logged).
func TestHTMLReportInHeadlessChromium(t *testing.T) {
	if os.Getenv(BrowserEnv) != "1" {
		t.Skipf("%s is not 1: the report is not opened in a browser (install Debian's chromium and set %s=1)", BrowserEnv, BrowserEnv)
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("%s=1 but no chromium on PATH: %v", BrowserEnv, err)
	}
	t.Run("loopback-none-run", func(t *testing.T) {
		openInChromium(t, bin, noneRun(t), 3, []string{`<figure id="fig-latency.percentiles--none">`,
			`<figure id="fig-rollout.baseline--none--rollout-none-baseline">`, "not reproduced"})
	})
	if dir := os.Getenv(BrowserResultsEnv); dir != "" {
		t.Run("cluster-run", func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatalf("%s=%s: %v", BrowserResultsEnv, dir, err)
			}
			if m := externalRef.FindAllString(string(b), -1); len(m) > 0 {
				t.Errorf("report.html refers outside itself: %q", m)
			}
			// A none-mode cluster run measures latency.percentiles: at least its CDF.
			openInChromium(t, bin, dir, -1, []string{`<figure id="fig-latency.percentiles--none">`})
		})
	}
}

// openInChromium loads dir/report.html in headless Chromium with name
// lookups disabled, checks the DOM Chromium built (the verdict table, the
// wanted fragments, svgs plots if >= 0) and keeps a PNG screenshot.
func openInChromium(t *testing.T, bin, dir string, svgs int, want []string) {
	page := "file://" + filepath.Join(dir, "report.html")
	profile := t.TempDir()
	run := func(extra ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
			// Any name lookup fails: a report that needed the network would show it.
			"--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,2400"}, extra...)
		cmd := exec.CommandContext(ctx, bin, append(args, page)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
		}
		return out.Bytes()
	}
	dom := string(run("--dump-dom"))
	for _, w := range append([]string{`<table id="decision-summary">`, "latency (ms, log scale)"}, want...) {
		if !strings.Contains(dom, w) {
			t.Errorf("Chromium's DOM lacks %q", w)
		}
	}
	if n := strings.Count(dom, "<svg"); svgs >= 0 && n != svgs {
		t.Errorf("Chromium's DOM has %d SVG plots, want %d", n, svgs)
	}
	shot := filepath.Join(t.ArtifactDir(), "report.png")
	run("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot is %v", b)
	}
	t.Logf("screenshot: %s", shot)
}
