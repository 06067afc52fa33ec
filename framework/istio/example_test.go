package istio_test

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
)

func ExampleProfileForModes() {
	p, ok, _ := istio.ProfileForModes([]mode.Mode{mode.None, mode.Sidecar, mode.AmbientL7})
	charts, _ := istio.ChartsFor(p)
	fmt.Println(p, ok, charts)
	// Output: ambient true [base istiod cni ztunnel]
}

func ExampleParseVersion() {
	_, err := istio.ParseVersion("v1.30")
	fmt.Println(err)
	// Output: malformed Istio version "v1.30"; accepted: MAJOR.MINOR.PATCH such as 1.30.2, optionally with a pre-release suffix such as 1.31.0-beta.1 (no leading v)
}
