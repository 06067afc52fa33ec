// Package mode names the data-plane modes a claim can apply to and parses the
// -mode flag. It is the one vocabulary shared by the claims registry, the
// fixtures and the specs, so a typo is caught in one place.
package mode

import (
	"fmt"
	"strings"
)

// Mode is a data-plane mode of a namespace.
type Mode string

const (
	// None is no mesh at all: the baseline the overhead claims are measured against.
	None Mode = "none"
	// Sidecar is the namespace label istio-injection=enabled.
	Sidecar Mode = "sidecar"
	// AmbientL4 is istio.io/dataplane-mode=ambient with ztunnel only.
	AmbientL4 Mode = "ambient-l4"
	// AmbientL7 is ambient plus a waypoint enrolled for the namespace.
	AmbientL7 Mode = "ambient-l7"
)

// All lists every mode in a stable order (the order of reports and matrices).
func All() []Mode { return []Mode{None, Sidecar, AmbientL4, AmbientL7} }

// Meshed lists the modes that run Istio.
func Meshed() []Mode { return []Mode{Sidecar, AmbientL4, AmbientL7} }

// Accepted is the help text listing every value -mode accepts.
func Accepted() string {
	names := make([]string, 0, 5)
	for _, m := range All() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ") + ", a comma list of them, or all"
}

// Valid reports whether m is one of the known modes.
func (m Mode) Valid() bool {
	for _, k := range All() {
		if m == k {
			return true
		}
	}
	return false
}

// Ambient reports whether the mode runs ztunnel.
func (m Mode) Ambient() bool { return m == AmbientL4 || m == AmbientL7 }

// Meshed reports whether the mode runs any Istio data plane.
func (m Mode) Meshed() bool { return m != None }

// Namespace is the namespace a mode's workloads live in, e.g. "meshclaims-ambient-l4".
func (m Mode) Namespace() string { return "meshclaims-" + string(m) }

// Parse turns a -mode value ("ambient-l4", "none,sidecar", "all") into modes,
// in All's order and without duplicates. The error names the bad value and
// what is accepted.
func Parse(s string) ([]Mode, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty -mode; accepted: %s", Accepted())
	}
	if s == "all" {
		return All(), nil
	}
	want := map[Mode]bool{}
	for _, part := range strings.Split(s, ",") {
		m := Mode(strings.TrimSpace(part))
		if !m.Valid() {
			return nil, fmt.Errorf("unknown mode %q in -mode=%q; accepted: %s", part, s, Accepted())
		}
		want[m] = true
	}
	var out []Mode
	for _, m := range All() {
		if want[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Join is the modes' names joined by sep, as flags and reports print them.
func Join(ms []Mode, sep string) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return strings.Join(s, sep)
}
