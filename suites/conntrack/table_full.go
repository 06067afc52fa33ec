// Package conntrack declares the spec of HYBRID's full conntrack table.
package conntrack

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: in a disposable User-Mode Linux VM (its own kernel, so its
// nf_conntrack_max is its own to lower), for each limit HYBRID lists
// (262,144, 2,048, 1,024): wait until the table holds fewer than 500
// entries, set the limit, open 4,000 TCP connections on loopback at once
// with a 5 s connect timeout. Expectation: 0, 2,087 and 3,031 of them not
// established. Without the VM layer (no user-mode-linux) inconclusive.
var _ = spec.Declare(spec.Def{
	Claim:    "conntrack.table-full",
	Area:     "conntrack",
	Scenario: "4,000 loopback connects at once in a disposable VM per nf_conntrack_max, counting those not established within 5 s",
	Needs:    []spec.Need{needUMLVM},
	Measure:  conntrackTableFull,
})
