package all

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/report/reporttest"
)

func TestParseBenchArms(t *testing.T) {
	for in, want := range map[string]string{"": "fixed,sequential", "sequential": "sequential", " fixed ": "fixed", "fixed,fixed": "fixed", "sequential,fixed": "sequential,fixed", "concurrent": "concurrent"} {
		arms, err := parseBenchArms(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		var names []string
		for _, a := range arms {
			names = append(names, a.Name)
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("%q: arms %s, want %s", in, got, want)
		}
	}
	_, err := parseBenchArms("fixed,seq")
	if err == nil || !strings.Contains(err.Error(), `"seq"`) || !strings.Contains(err.Error(), "accepted: fixed") {
		t.Errorf("unknown arm: %v", err)
	}
}

// The comparison across arms on two real none-mode runs (fortio on
// loopback), written under the arms' run ids: nothing until both exist;
// then the verdict that differs (10% 503s injected into the sequential
// arm's steady load flip latency.all-ok) and, as the control, none between
// two clean runs (three real runs in all).
func TestCompareBenchArms(t *testing.T) {
	reg, err := claims.Load(filepath.Join(repoRoot(), "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(root, id string, cfg reporttest.Run) {
		cfg.ID = id
		if _, err := reporttest.NoneRun(t, filepath.Join(root, id), cfg).Rebuild(reg); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	run(root, benchRunID(0, benchArms[0], "none"), reporttest.Run{})
	if flips, err := compareBenchArms(root, 0, "none"); err != nil || flips != nil {
		t.Fatalf("one arm only: %v, %v", flips, err)
	}
	run(root, benchRunID(0, benchArms[1], "none"), reporttest.Run{EchoStatus: "503:10"})
	flips, err := compareBenchArms(root, 0, "none")
	if err != nil {
		t.Fatal(err)
	}
	if len(flips) == 0 || !strings.Contains(strings.Join(flips, "\n"), "latency.all-ok none") {
		t.Errorf("503s injected into one arm: differing verdicts %q", flips)
	}

	// The control pairs the first clean run with another clean run.
	clean := t.TempDir()
	if err := os.Symlink(filepath.Join(root, benchRunID(0, benchArms[0], "none")), filepath.Join(clean, benchRunID(0, benchArms[0], "none"))); err != nil {
		t.Fatal(err)
	}
	run(clean, benchRunID(0, benchArms[1], "none"), reporttest.Run{})
	if flips, err := compareBenchArms(clean, 0, "none"); err != nil || flips == nil || len(flips) != 0 {
		t.Errorf("two clean runs: differing verdicts %q, %v", flips, err)
	}

	// A run of several modes in one process (the concurrent arm) is
	// compared with each mode's own fixed run, their entries together,
	// and only once every one of them is there. The second mode's run is
	// the same real none run linked under sidecar's id: the join does not
	// read modes, so what is checked is that both runs' entries are in it.
	one, err := report.LoadResults(filepath.Join(root, benchRunID(0, benchArms[0], "none"), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := fixedReference(clean, 0, "none,sidecar"); err != nil || ref != nil {
		t.Errorf("sidecar's fixed run missing: reference %v, %v; want none yet", ref, err)
	}
	if err := os.Symlink(filepath.Join(root, benchRunID(0, benchArms[0], "none")), filepath.Join(clean, benchRunID(0, benchArms[0], "sidecar"))); err != nil {
		t.Fatal(err)
	}
	ref, err := fixedReference(clean, 0, "none,sidecar")
	if err != nil || ref == nil || len(ref.Entries) != 2*len(one.Entries) || !strings.Contains(ref.Environment.RunID, "+") {
		t.Fatalf("both modes' fixed runs: reference %+v, %v; want the entries of both", ref, err)
	}
	// all is every mode, as -mode reads it: with only none's and
	// sidecar's fixed runs there, its reference is incomplete; a bad mode
	// is an error naming it.
	if ref, err := fixedReference(clean, 0, "all"); err != nil || ref != nil {
		t.Errorf("all with two of four modes' fixed runs: reference %v, %v; want none yet", ref, err)
	}
	if _, err := fixedReference(clean, 0, "none,sidecr"); err == nil || !strings.Contains(err.Error(), `"sidecr"`) {
		t.Errorf("a misspelt mode: %v; want an error naming it", err)
	}
	run(clean, benchRunID(0, benchArms[2], "none,sidecar"), reporttest.Run{EchoStatus: "503:10"})
	flips, err = compareBenchArms(clean, 0, "none,sidecar")
	if err != nil || !strings.Contains(strings.Join(flips, "\n"), "concurrent not reproduced") || !strings.Contains(strings.Join(flips, "\n"), "latency.all-ok none: fixed ") {
		t.Errorf("503s injected into the concurrent arm: differing verdicts %q, %v", flips, err)
	}
}

func TestBenchRunIDNamesArmAndModes(t *testing.T) {
	for _, c := range []struct {
		arm   benchArm
		modes string
		want  string
	}{
		{benchArms[0], "none,sidecar", "bench-0-fixed-none_sidecar"},
		{benchArms[1], "sidecar", "bench-0-sequential-sidecar"},
		{benchArms[1], "none, sidecar", "bench-0-sequential-none_sidecar"},
	} {
		if got := benchRunID(0, c.arm, c.modes); got != c.want {
			t.Errorf("benchRunID(0, %s, %q) = %q, want %q", c.arm.Name, c.modes, got, c.want)
		}
		// The e2e binary must take it as its -run-id; "+" it refused.
		if got := benchRunID(0, c.arm, c.modes); !config.RunIDChars.MatchString(got) {
			t.Errorf("benchRunID(0, %s, %q) = %q, which -run-id refuses", c.arm.Name, c.modes, got)
		}
	}
	// A run of one mode is never taken for a run of another.
	if benchRunID(0, benchArms[1], "none") == benchRunID(0, benchArms[1], "sidecar") {
		t.Error("the run ids of two modes' runs collide")
	}
}

// The failure message of an hours-long arm carries the end of its output,
// however much came before.
func TestTailBufferKeepsTheEnd(t *testing.T) {
	var tb tailBuffer
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&tb, "line %04d\n", i)
	}
	got := tb.String()
	if len(got) != 4000 {
		t.Fatalf("kept %d bytes, want 4000", len(got))
	}
	if !strings.HasSuffix(got, "line 2999\n") {
		t.Fatalf("lost the last line: ...%q", got[len(got)-40:])
	}
	if strings.Contains(got, "line 0000") {
		t.Fatal("kept the first line of 30000 bytes")
	}
}
