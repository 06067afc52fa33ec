package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/decision"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/requirements"
)

// The shipped scale-1 records, re-judged in memory (nothing is written):
// each run with sidecar opens with GUIDE's summary, whose sidecar column
// reads STRICT verified, existing NetworkPolicies working, a P50 overhead
// beyond any mode of GUIDE and rollout 503s that GUIDE's hardening
// removes; the no-mesh-only runs have none.
func TestGuideSummaryOfBenchRecords(t *testing.T) {
	reg := claimstest.Registry(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(root, "testdata", "bench", "scale1", "bench-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("bench records: %v, %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			d := &Dir{Path: dir}
			env, recs, err := d.load()
			if err != nil {
				t.Fatal(err)
			}
			res, err := Judge(env, recs, reg)
			if err != nil {
				t.Fatal(err)
			}
			s := GuideSummary(res, reg)
			hasSidecar := false
			for _, m := range env.Modes {
				hasSidecar = hasSidecar || m == mode.Sidecar
			}
			if !hasSidecar {
				if s != nil {
					t.Fatalf("a run without a meshed mode got a summary: %+v", s)
				}
				return
			}
			if s == nil {
				t.Fatal("no summary for a run with sidecar")
			}
			for req, want := range map[decision.Requirement]decision.Mark{
				decision.MTLS: decision.Pass, decision.NetworkPolicy: decision.Pass, decision.Latency: decision.Fail, decision.Rollout: decision.Caveat,
			} {
				if c, _ := s.Cell(req, mode.Sidecar); c.Mark != want {
					t.Errorf("%s: %s %s — %s, want %s", req, c.Mark, c.Measured, c.Why, want)
				}
			}
			var md strings.Builder
			if err := Markdown(&md, res, reg); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(md.String(), "# meshclaims report — run "+env.RunID+"\n\n## GUIDE's decision summary, from this run\n") {
				t.Errorf("report.md does not open with the summary:\n%.300s", md.String())
			}
		})
	}
}

// report.html opens with the same summary, in a section of its own.
func TestGuideSummaryHTML(t *testing.T) {
	reg := claimstest.Registry(t)
	d := sampleDir(t)
	if _, err := d.Rebuild(reg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.Path, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	i, j := strings.Index(h, `id="guide-decision-summary"`), strings.Index(h, `id="environment"`)
	if i < 0 || j < 0 || i > j {
		t.Fatalf("the summary is not above the environment (at %d, %d)", i, j)
	}
	for _, want := range []string{"Zero-downtime rollout", "GUIDE: ⚠️ condition", `id="guide-conclusion"`} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A results directory that keeps requirements.yaml gets each tier's
// recommendation in results.json and both reports; without the file there
// is none.
func TestRequirementsInReport(t *testing.T) {
	reg := claimstest.Registry(t)
	d := sampleDir(t)
	res, err := d.Rebuild(reg)
	if err != nil || res.Requirements != nil {
		t.Fatalf("without requirements: %v, %+v", err, res.Requirements)
	}
	f, err := requirements.Parse([]byte("version: 1\ntiers:\n  - name: quiet\n    max_rollout_error_rate: 1%\n  - name: spotless\n    max_rollout_error_rate: 0.1%\n"), "tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveRequirements(f); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rebuild(reg); err != nil {
		t.Fatal(err)
	}
	back, err := LoadResults(filepath.Join(d.Path, "results.json"))
	if err != nil || back.Requirements == nil || len(back.Requirements.Tiers) != 2 {
		t.Fatalf("results.json: %v, %+v", err, back)
	}
	if q, s := back.Requirements.Tiers[0], back.Requirements.Tiers[1]; len(q.Meets) != 1 || q.Meets[0] != mode.Sidecar || len(s.Meets) != 0 {
		t.Errorf("meets: quiet %v, spotless %v", q.Meets, s.Meets)
	}
	for _, name := range []string{"report.md", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(d.Path, name))
		for _, want := range []string{"Recommendation per tier (requirements.yaml)", "ier quiet: sidecar meets every requirement", "ier spotless: no measured mode meets every requirement"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	os.WriteFile(filepath.Join(d.Path, RequirementsFile), []byte("version: 1\ntiers:\n  - name: x\n    mtls: sure\n"), 0o644)
	if _, err := d.Rebuild(reg); err == nil || !strings.Contains(err.Error(), `requirements.yaml:4: tier "x": field "mtls"`) {
		t.Errorf("a broken kept file: %v", err)
	}
}
