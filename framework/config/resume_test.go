package config

import (
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
