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
