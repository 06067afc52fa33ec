package report

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/meshclaims/meshclaims/framework/loadplan"
)

// Costs reads what the run in d measured besides its loads, for a later
// run's plan: the suite's set-up and each spec's wall time beyond the loads
// it ran itself (shared loads cost it nothing), and its whole wall time for
// a plan that does not count its loads (undeclared). A run whose records
// and environment keep no wall times (written before they were kept) is
// read from its junit.xml instead (junitCosts); without one it gives no
// cost.
func (d *Dir) Costs() (*loadplan.Costs, error) {
	env, recs, err := d.load()
	if err != nil {
		return nil, err
	}
	c := &loadplan.Costs{Run: env.RunID + " (" + d.Path + ")", Scale: env.DurationScale, SetUp: env.SetUp, Beyond: map[string]time.Duration{}, Whole: map[string]time.Duration{}}
	for _, r := range recs {
		if r.Took <= 0 {
			continue
		}
		beyond := r.Took
		for _, l := range r.Loads {
			if !l.Shared {
				beyond -= l.Took
			}
		}
		k := loadplan.Key(r.Claim, r.Mode)
		c.Beyond[k] = max(beyond, 0)
		c.Whole[k] = r.Took
	}
	if c.SetUp == 0 && len(c.Beyond) == 0 {
		if err := d.junitCosts(c, recs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return c, nil
}

// junitCosts reads the costs of a run whose records keep no wall times
// from the JUnit report Ginkgo wrote beside them: the set-up is the
// [BeforeSuite] node's time, each spec's wall time its [It] test case's
// (named "... <claim> [<mode>] ..."), and the loads it ran itself are its
// raw fortio results (raw/<claim>__<mode>__<load>.json, named by the spec
// that ran the load; a spec that read a shared load has none), each its
// ActualDuration.
func (d *Dir) junitCosts(c *loadplan.Costs, recs []Record) error {
	data, err := os.ReadFile(filepath.Join(d.Path, "junit.xml"))
	if err != nil {
		return err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(d.Path, "junit.xml"), err)
	}
	var its []reporters.JUnitTestCase
	for _, s := range suites.TestSuites {
		for _, tc := range s.TestCases {
			switch {
			case tc.Skipped != nil:
			case tc.Name == "[BeforeSuite]":
				c.SetUp += seconds(tc.Time)
			case strings.HasPrefix(tc.Name, "[It] "):
				its = append(its, tc)
			}
		}
	}
	for _, r := range recs {
		key := " " + r.Claim + " [" + string(r.Mode) + "]"
		for _, tc := range its {
			if !strings.Contains(tc.Name, key) {
				continue
			}
			whole := seconds(tc.Time)
			own, err := d.rawLoadsTook(r)
			if err != nil {
				return err
			}
			k := loadplan.Key(r.Claim, r.Mode)
			c.Beyond[k] = max(whole-own, 0)
			c.Whole[k] = whole
			break
		}
	}
	return nil
}

// rawLoadsTook sums the ActualDuration of the fortio results r's spec
// wrote itself (not their .options or .timeline companions).
func (d *Dir) rawLoadsTook(r Record) (time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(d.Path, "raw", r.Claim+"__"+string(r.Mode)+"__*.json"))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, f := range files {
		if strings.HasSuffix(f, ".options.json") || strings.HasSuffix(f, ".timeline.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var res struct{ ActualDuration time.Duration }
		if err := json.Unmarshal(data, &res); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		sum += res.ActualDuration
	}
	return sum, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// LatestCosts is Costs of the earlier run under root made with provider
// that suits a plan of scale and of the specs keys ("claim [mode]",
// loadplan.Key) best, skipping the directory skip (the run about to
// start): a run of the same -duration-scale first (costs beyond loads
// scale too: kubeproxy's extra Services), then the one that measured
// most of keys, then the newest by its start. Before, the newest run
// alone was taken, so a sidecar plan at scale 1 read a none run at 0.05
// that knew none of its costs. nil when no run recorded any cost.
func LatestCosts(root, provider, skip string, scale float64, keys []string) *loadplan.Costs {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "environment.json"))
	var best *loadplan.Costs
	var bestRank costsRank
	for _, f := range dirs {
		dir := filepath.Dir(f)
		if skip != "" && filepath.Clean(dir) == filepath.Clean(skip) {
			continue
		}
		d := &Dir{Path: dir}
		env, err := d.LoadEnvironment()
		if err != nil || env.Provider != provider {
			continue
		}
		c, err := d.Costs()
		if err != nil || (c.SetUp == 0 && len(c.Beyond) == 0) {
			continue
		}
		r := costsRank{sameScale: c.Scale == scale, started: env.Started}
		for _, k := range keys {
			if _, ok := c.Beyond[k]; ok {
				r.covered++
			}
		}
		if best == nil || r.better(bestRank) {
			best, bestRank = c, r
		}
	}
	return best
}

// costsRank orders the candidates of LatestCosts.
type costsRank struct {
	sameScale bool
	covered   int
	started   time.Time
}

func (r costsRank) better(o costsRank) bool {
	switch {
	case r.sameScale != o.sameScale:
		return r.sameScale
	case r.covered != o.covered:
		return r.covered > o.covered
	default:
		return r.started.After(o.started)
	}
}

// load reads environment.json and every measured record.
func (d *Dir) load() (Environment, []Record, error) {
	env, err := d.LoadEnvironment()
	if err != nil {
		return Environment{}, nil, err
	}
	recs, err := d.Records()
	return env, recs, err
}
