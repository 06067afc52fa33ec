package mtls

import (
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Needs: at least two meshed modes deployed side by side in this run, and
// sidecars that accept HBONE where sidecar meets an ambient mode.
// Policy: each namespace's own STRICT PeerAuthentication (base set).
// Scenario: this mode's in-mesh client calls every other meshed mode's echo
// and their clients call this mode's echo (sidecar <-> ambient); plaintext
// from outside the mesh calls this mode's echo pod.
// Expectation: verified (every cross-mode call 200, plaintext refused).
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.mixed-namespaces",
	Area:     "mtls",
	Scenario: "in-mesh calls across the meshed modes' namespaces both ways under STRICT; plaintext refused",
	Needs:    []spec.Need{scenario.NeedMeshedModes(2), scenario.NeedSidecarHBONE},
	Measure:  mixedNamespaces,
})
