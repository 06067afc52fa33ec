// Package all imports every suite so its claim declarations register; the
// e2e entry point and the registry-coverage test import it.
package all

import (
	_ "github.com/meshclaims/meshclaims/suites/authz"
	_ "github.com/meshclaims/meshclaims/suites/canary"
	_ "github.com/meshclaims/meshclaims/suites/conntrack"
	_ "github.com/meshclaims/meshclaims/suites/kubeproxy"
	_ "github.com/meshclaims/meshclaims/suites/l7"
	_ "github.com/meshclaims/meshclaims/suites/latency"
	_ "github.com/meshclaims/meshclaims/suites/method"
	_ "github.com/meshclaims/meshclaims/suites/mtls"
	_ "github.com/meshclaims/meshclaims/suites/netpol"
	_ "github.com/meshclaims/meshclaims/suites/resources"
	_ "github.com/meshclaims/meshclaims/suites/retry"
	_ "github.com/meshclaims/meshclaims/suites/rollout"
	_ "github.com/meshclaims/meshclaims/suites/scale"
	_ "github.com/meshclaims/meshclaims/suites/sidecarcost"
)
