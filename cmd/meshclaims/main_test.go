package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/report/reporttest"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

const registry = "../../testdata/claims.yaml"

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestClaimsValidateShipped(t *testing.T) {
	code, out, errs := runCLI("claims", "--file", registry, "--validate")
	if code != 0 || !strings.Contains(out, "claims, valid") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errs)
	}
}

func TestClaimsValidateRejectsBroken(t *testing.T) {
	data, err := os.ReadFile(registry)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "modes: [ambient-l7]\n    baseline: sidecar", "modes: [ambient-l7, waypoint]\n    baseline: sidecar", 1)
	if broken == string(data) {
		t.Fatal("registry text changed; update this test")
	}
	p := filepath.Join(t.TempDir(), "claims.yaml")
	os.WriteFile(p, []byte(broken), 0o644)
	code, _, errs := runCLI("claims", "--file", p, "--validate")
	if code != 1 || !strings.Contains(errs, p+":") || !strings.Contains(errs, `claim "rollout.l7-vs-sidecar": unknown mode "waypoint"`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestClaimsListByMode(t *testing.T) {
	code, out, _ := runCLI("claims", "--file", registry, "--mode", "none")
	if code != 0 || !strings.Contains(out, "kubeproxy.service-scale") || strings.Contains(out, "mtls.plaintext-blocked") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// Each claim with its title and what it documents per mode.
	for _, want := range []string{"kubeproxy.service-scale: time until a new Service answers", "  none:       documented "} {
		if !strings.Contains(out, want) {
			t.Errorf("claims --mode none lacks %q:\n%s", want, out)
		}
	}
	code, _, errs := runCLI("claims", "--file", registry, "--mode", "bogus")
	if code != 2 || !strings.Contains(errs, `unknown mode "bogus"`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, errs := runCLI("nope")
	if code != 2 || !strings.Contains(errs, "accepted: claims, analyze, report, diff") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestReportRebuild(t *testing.T) {
	d, err := report.Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	d.SaveEnvironment(report.Environment{RunID: "x", Started: time.Now(), Provider: "local", Modes: []mode.Mode{mode.Sidecar}, DurationScale: 1})
	d.Record(report.Record{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar, Measurement: verdict.Measurement{Outcome: "no-http-response", Detail: "connection reset by peer"}})
	code, out, errs := runCLI("report", "--file", registry, d.Path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, _ := os.ReadFile(filepath.Join(d.Path, "report.md"))
	if page, err := os.ReadFile(filepath.Join(d.Path, "report.html")); err != nil || !strings.Contains(string(page), `<table id="decision-summary">`) {
		t.Errorf("report.html not written with the summary: %v", err)
	}
	if !strings.Contains(out, "report.md") || !strings.Contains(string(md), "observed no-http-response (connection reset by peer) as documented") {
		t.Fatalf("out %q\n%s", out, md)
	}
	// Only one of sidecar's claims was measured: --complete says which are missing.
	code, _, errs = runCLI("report", "--file", registry, "--complete", d.Path)
	if code != 1 || !strings.Contains(errs, "`mtls.in-mesh-ok` (sidecar)") || strings.Contains(errs, "`mtls.plaintext-blocked` (sidecar)") {
		t.Fatalf("--complete: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI("report", "--file", registry, t.TempDir()); code != 1 || !strings.Contains(errs, "not a meshclaims results directory") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// -h exits 0, with the usage on stdout, for every subcommand.
func TestHelpExitsZeroForEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"claims", "-h"}, {"analyze", "-h"}, {"report", "--help"}, {"diff", "-h"}} {
		code, out, errs := runCLI(args...)
		if code != 0 || !strings.Contains(out, "usage") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	// The control: a bad flag is a usage error, named on stderr.
	if code, _, errs := runCLI("claims", "-bogus"); code != 2 || !strings.Contains(errs, "-bogus") {
		t.Errorf("claims -bogus: exit %d, stderr %q", code, errs)
	}
}

// Flags after positional arguments are read; after -- nothing is a flag.
func TestFlagsAfterArguments(t *testing.T) {
	dir := realRun(t, filepath.Join(t.TempDir(), "run"), reporttest.Run{ID: "run"})
	if code, out, errs := runCLI("report", dir, "--file", registry); code != 0 || !strings.Contains(out, "report.md") {
		t.Errorf("report DIR --file F: exit %d, %q %q", code, out, errs)
	}
	code, out, _ := runCLI("diff", dir, dir, "--json")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("diff OLD NEW --json: exit %d, %q", code, out)
	}
	if code, _, errs := runCLI("report", "--", "--complete"); code != 1 || !strings.Contains(errs, "--complete is not a meshclaims results directory") {
		t.Errorf("report -- --complete: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("claims", "--mode", "none", "extra"); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("claims extra: exit %d, %q", code, errs)
	}
}

// The registry is built in: claims and report work from a directory with no
// testdata/ beside it, and --file still overrides it.
func TestRegistryBuiltIn(t *testing.T) {
	dir := realRun(t, filepath.Join(t.TempDir(), "run"), reporttest.Run{ID: "run"})
	reg, err := filepath.Abs(registry)
	if err != nil {
		t.Fatal(err)
	}
	file, err := claims.Load(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("testdata/claims.yaml: %d claims, valid\n", len(file.Claims))
	t.Chdir(t.TempDir())
	if code, out, errs := runCLI("claims", "--validate"); code != 0 || out != want {
		t.Errorf("built-in registry: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := runCLI("report", dir); code != 0 {
		t.Errorf("report with the built-in registry: exit %d, %q", code, errs)
	}
	if code, out, _ := runCLI("claims", "--validate", "--file", reg); code != 0 || !strings.HasPrefix(out, reg+":") {
		t.Errorf("--file: exit %d, %q", code, out)
	}
	if code, _, errs := runCLI("claims", "--file", "nope.yaml"); code != 1 || !strings.Contains(errs, "nope.yaml") {
		t.Errorf("--file nope.yaml: exit %d, %q", code, errs)
	}
}
