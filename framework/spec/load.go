package spec

import "github.com/meshclaims/meshclaims/framework/loadplan"

// Ran records a load the spec ran (steps.Load calls it for every load).
func (r *Run) Ran(l loadplan.LoadRan) { r.loads = append(r.loads, l) }

// Loads are the loads the spec ran or shared, in order.
func (r *Run) Loads() []loadplan.LoadRan { return r.loads }
