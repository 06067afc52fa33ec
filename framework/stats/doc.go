// Package stats is the pure statistics behind meshclaims' verdicts: binomial
// rates with Wilson score intervals, ratios of rates with Katz log intervals,
// latency overheads against a same-run baseline, the Little's-law and
// histogram-resolution cross-check that caught HYBRID's sub-millisecond
// percentiles, errors per rollout cycle, summaries of repeated runs with
// Student-t intervals, pooling of repeated binomial runs, percentiles of raw
// samples, and quantiles of histograms (fortio's) with distribution-free
// intervals and the difference of two, and a studentized permutation test
// of two means for a few skewed values (error rates per restart cycle).
//
// It depends on the standard library only, so verdicts, fortio result
// analysis and reports can all share one implementation and a report can be
// rebuilt from a results directory without a cluster.
//
// Conventions: a confidence is a fraction in (0,1), e.g. 0.95; a latency is in
// seconds unless a name says otherwise; functions that can be given bad input
// return an error naming the bad value and what is accepted.
package stats
