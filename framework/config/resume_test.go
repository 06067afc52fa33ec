package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -resume=DIR makes DIR the run's results directory (its parent the root,
// its name the run id); a -results or -run-id naming DIR is accepted, one
// naming another directory is refused with both, and so is -overwrite.
func TestResumeFlag(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "20261129-214800")
	c, err := parse(t, "-resume="+dir)
	if err != nil || c.ResultsDir != dir || c.RunID != "20261129-214800" || c.ResultsRoot != root {
		t.Fatalf("-resume alone: %v, dir %s, run id %s, root %s", err, c.ResultsDir, c.RunID, c.ResultsRoot)
	}
	if c, err := parse(t, "-resume="+dir, "-results="+root, "-run-id=20261129-214800"); err != nil || c.ResultsDir != dir {
		t.Fatalf("-results and -run-id naming DIR refused: %v", err)
	}
	cases := map[string][]string{
		`-resume="` + dir + `" with -results="` + filepath.Join(root, "other") + `": the resumed run writes into ` + dir + `, whose results root is ` + root: {"-resume=" + dir, "-results=" + filepath.Join(root, "other")},
		`-resume="` + dir + `" with -run-id="r2": the resumed run's id is its directory's name, "20261129-214800"`:                                           {"-resume=" + dir, "-run-id=r2"},
		`-resume="` + dir + `" with -overwrite`: {"-resume=" + dir, "-overwrite"},
	}
	for want, args := range cases {
		if _, err := parse(t, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v\nwant %q", args, err, want)
		}
	}
}

// A relative -resume is the working directory's when it is there, else
// the repository root's: `go test ./e2e` runs in e2e/, and the default
// results root is the root's results/.
func TestResumeRelativeDirectory(t *testing.T) {
	root, err := filepath.Abs(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("testdata", "examples", "local-none")
	t.Chdir(t.TempDir())
	c, err := parse(t, "-resume="+rel)
	if err != nil || c.ResultsDir != filepath.Join(root, rel) {
		t.Fatalf("-resume=%s from elsewhere: %v, dir %s; want the repository root's", rel, err, c.ResultsDir)
	}
	// The control: the same name in the working directory is that one.
	if err := os.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if c, err := parse(t, "-resume="+rel); err != nil || c.ResultsDir != filepath.Join(wd, rel) {
		t.Fatalf("-resume=%s present in the working directory: %v, dir %s; want %s", rel, err, c.ResultsDir, filepath.Join(wd, rel))
	}
}
