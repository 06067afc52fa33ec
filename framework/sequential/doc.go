// Package sequential holds confidence sequences: intervals that stay valid
// however often they are looked at, so a load can be judged after every
// restart cycle (or latency batch) and stopped as soon as its verdict can
// no longer change, without the inflated error rate of recomputing a
// fixed-sample interval at every look.
//
// The observations are the units of independence, not requests: for a
// rollout load one restart cycle's error proportion (errors cluster by
// cycle: one pod going away fails a burst of requests), for latency one
// batch's mean. Two sequences:
//
//   - Asymptotic (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas,
//     "Time-uniform central limit theory and asymptotic confidence
//     sequences", Ann. Statist. 2024): the normal-mixture boundary with a
//     running variance, its mixture spread set in a scale fixed before the
//     data (the claim's band width). For per-cycle error proportions and
//     for latency batch means; valid as the number of observations grows.
//     The simulation tests (cycle-clustered errors, 40 cycles) hold its
//     false verdict rate under 5% with a look after every cycle, where
//     naive repeated Wilson intervals give 15-78%.
//   - Betting (Waudby-Smith & Ramdas, "Estimating means of bounded random
//     variables by betting", JRSS-B 2024): the hedged capital process for
//     observations in [0, 1], valid at every sample size with no variance
//     assumption, but with only the [0, 1] bound it cannot certify a 0.1%
//     rate from tens of cycles; kept for bounded means that are not small.
//
// Decide turns an interval and a claim's acceptance band into a stopping
// decision. The package is pure: no clock, no cluster.
package sequential
