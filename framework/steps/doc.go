// Package steps holds reusable traffic for claim specs: loads and their
// results, rollouts under load (alone, in several modes at once, stopped
// early by the sequential rule), streams, traffic splits and the
// measurements specs of several areas read. The engine they run in (apply,
// await, restore, needs) is framework/scenario.
package steps
