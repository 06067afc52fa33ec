package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
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
	d.Record(report.Record{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar, Measured: verdict.Measured{Outcome: "no-http-response", Detail: "connection reset by peer"}})
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
