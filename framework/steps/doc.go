// Package steps holds the traffic that claim specs of several areas reuse:
// loads and their results, rollouts under load (alone, in several modes at
// once, stopped early by the sequential rule), streams, traffic splits, the
// timing of new Services, and the reads of pods and proxies that several
// areas' measurements share. A claim's own measurement and judge sit beside
// its declaration in its area's package under suites/; the engine they all
// run in (apply, await, restore, needs) is framework/scenario.
package steps
