package config

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
)

// registerResumeFlag defines -resume.
func registerResumeFlag(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Resume, "resume", "", "continue an interrupted run in its results directory DIR (e.g. results/20261129-214800; a relative DIR missing from the working directory is taken from the repository root): "+
		"set-up runs as usual, then only the selected specs without a measured record in DIR; the report covers both parts and says the run was resumed. "+
		"Refused with exit 2, before any cluster is touched, when DIR holds no run.json (not a results directory, or a run stopped before it began) or when a flag, "+
		"the cluster, the suite's version, the claims, the charts or the image archives differ from the run's (each named with both values; DIR/run.json lists them); "+
		"-results and -run-id, if given, must name DIR; -overwrite is refused with it")
}

// resolveResume makes -resume's directory the run's: its parent is the
// results root and its name the run id, and a -results, -run-id or
// -overwrite that says otherwise is refused, naming both. A relative
// directory missing from the working directory is looked for in the
// repository root, where the default results root is: `go test ./e2e`
// runs the suite in e2e/, so results/<run id> is meant from the root.
func (c *Config) resolveResume(repoRoot string, bad func(string, ...any)) {
	if c.Resume == "" {
		return
	}
	dir, err := filepath.Abs(c.Resume)
	if err != nil {
		bad("-resume=%q: %v", c.Resume, err)
		return
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(c.Resume) {
		if fromRoot := filepath.Join(repoRoot, c.Resume); exists(fromRoot) {
			if dir, err = filepath.Abs(fromRoot); err != nil {
				bad("-resume=%q: %v", c.Resume, err)
				return
			}
		}
	}
	root, id := filepath.Dir(dir), filepath.Base(dir)
	if c.Overwrite {
		bad("-resume=%q with -overwrite: -overwrite deletes the results directory a resumed run continues; accepted: one of the two", c.Resume)
	}
	if c.ResultsRoot != "" {
		if given, err := filepath.Abs(c.ResultsRoot); err != nil || given != root {
			bad("-resume=%q with -results=%q: the resumed run writes into %s, whose results root is %s; accepted: -resume alone, or -results=%s", c.Resume, c.ResultsRoot, dir, root, root)
		}
	}
	if c.RunID != "" && c.RunID != id {
		bad("-resume=%q with -run-id=%q: the resumed run's id is its directory's name, %q; accepted: -resume alone, or -run-id=%s", c.Resume, c.RunID, id, id)
	}
	c.ResultsRoot, c.RunID = root, id
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
