package verdict

import (
	"fmt"
	"math"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// stability is the largest relative change of a load under churn, judged
// against the claim's relative tolerance beside a no-mesh control; it has
// no band around a documented value.
type stabilityMetric struct{ plain }

func (stabilityMetric) Judge(c *claims.Claim, _ mode.Mode, _ claims.Value, got Measurement) (Result, string, []Part) {
	res, reason := judgeStability(c, got)
	return res, reason, nil
}

func (stabilityMetric) Bands(*claims.Claim, mode.Mode, claims.Value) ([]Band, int) { return nil, 0 }

// NoMeshChange is the Extra key of a stability measurement's no-mesh
// control: the largest relative change the same churn caused to the same
// load in the namespace without a mesh.
const NoMeshChange = "no_mesh_change"

// judgeStability: Value is the largest relative change under churn. When
// the no-mesh control changed beyond the tolerance too, the cluster itself
// does not hold a saturating load steady under churn (a small or shared
// host), and the mesh's change cannot be told from it: inconclusive.
func judgeStability(c *claims.Claim, got Measurement) (Result, string) {
	if got.Value == nil || c.Tolerance.Relative == nil {
		return Inconclusive, "no stability measurement or no relative tolerance"
	}
	if ctl, ok := got.Extra[NoMeshChange]; ok && math.Abs(ctl) > *c.Tolerance.Relative {
		return Inconclusive, fmt.Sprintf("largest change under churn %s, but without a mesh the same churn changed the same load %s (> %s): the cluster, not the mesh, does not hold steady",
			pct(*got.Value), pct(ctl), pct(*c.Tolerance.Relative))
	}
	if math.Abs(*got.Value) <= *c.Tolerance.Relative {
		return Reproduced, fmt.Sprintf("largest change under churn %s <= %s", pct(*got.Value), pct(*c.Tolerance.Relative))
	}
	return NotReproduced, fmt.Sprintf("largest change under churn %s > %s", pct(*got.Value), pct(*c.Tolerance.Relative))
}
