package report

import (
	"path/filepath"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
)

// Costs reads what the run in d measured besides its loads, for a later
// run's plan: the suite's set-up and each spec's wall time beyond the loads
// it ran itself (shared loads cost it nothing), and its whole wall time for
// a plan that does not count its loads (undeclared). Records from before
// the report kept wall times give no cost.
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
	return c, nil
}

// LatestCosts is Costs of the newest run under root (by its start) made
// with provider that recorded any cost, skipping the directory skip (the
// run about to start); nil when there is none.
func LatestCosts(root, provider, skip string) *loadplan.Costs {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "environment.json"))
	var best *loadplan.Costs
	var bestStart time.Time
	for _, f := range dirs {
		dir := filepath.Dir(f)
		if skip != "" && filepath.Clean(dir) == filepath.Clean(skip) {
			continue
		}
		d := &Dir{Path: dir}
		env, err := d.LoadEnvironment()
		if err != nil || env.Provider != provider || !env.Started.After(bestStart) {
			continue
		}
		c, err := d.Costs()
		if err != nil || (c.SetUp == 0 && len(c.Beyond) == 0) {
			continue
		}
		best, bestStart = c, env.Started
	}
	return best
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
