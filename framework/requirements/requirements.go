// Package requirements reads a requirements file: what each workload tier
// needs of a mesh mode (mTLS, L7 routing, NetworkPolicies kept as they are,
// a P50 overhead and a rollout error rate at most so much). Package
// decision turns a run's summary and a tier's requirements into a
// recommendation. A bad file is refused with its file, line and field and
// what the field accepts.
//
//	version: 1
//	tiers:
//	  - name: checkout
//	    mtls: required                 # required | optional (default optional)
//	    l7_routing: required           # required | optional (default optional)
//	    networkpolicy: existing-rules  # existing-rules | hbone-allowed | any (default any)
//	    max_p50_overhead_ms: 1         # ms over the no-mesh P50, >= 0
//	    max_rollout_error_rate: 0.1%   # 503s and -1s per request during rollouts: 0.001 or 0.1%
//	    rollout: as-deployed           # as-deployed | hardened (default as-deployed)
package requirements

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Version is the file format this package reads.
const Version = 1

// NetworkPolicy values.
const (
	ExistingRules = "existing-rules" // an 8080-only ingress policy keeps working (GUIDE ✅)
	HBONEAllowed  = "hbone-allowed"  // allowing 15008 as well is acceptable (GUIDE ⚠️)
	AnyPolicy     = "any"
)

// Rollout values: which T1 run the error rate is read from.
const (
	AsDeployed = "as-deployed" // rollout.baseline
	Hardened   = "hardened"    // rollout.hardened (preStop sleep, grace period, sidecar drain)
)

// Tier is one workload tier's requirements.
type Tier struct {
	Name          string `json:"name"`
	MTLS          bool   `json:"mtls,omitempty"`
	L7Routing     bool   `json:"l7_routing,omitempty"`
	NetworkPolicy string `json:"networkpolicy"`
	// MaxP50OverheadMs and MaxRolloutErrorRate are nil when not required.
	MaxP50OverheadMs    *float64 `json:"max_p50_overhead_ms,omitempty"`
	MaxRolloutErrorRate *float64 `json:"max_rollout_error_rate,omitempty"` // a fraction of requests
	Rollout             string   `json:"rollout"`
	Line                int      `json:"line"`
}

// File is a requirements file.
type File struct {
	Path  string
	Tiers []Tier
	// Data is the file as read, kept beside a run's results.
	Data []byte
}

// fields a tier accepts, with what each accepts.
var fields = []struct{ name, accepts string }{
	{"name", "the tier's name (letters, digits, ., _, -)"},
	{"mtls", "required or optional"},
	{"l7_routing", "required or optional"},
	{"networkpolicy", ExistingRules + ", " + HBONEAllowed + " or " + AnyPolicy},
	{"max_p50_overhead_ms", "a number of milliseconds >= 0, e.g. 1"},
	{"max_rollout_error_rate", "a fraction in [0, 1] or a percentage, e.g. 0.001 or 0.1%"},
	{"rollout", AsDeployed + " or " + Hardened},
}

func fieldNames() string {
	var out []string
	for _, f := range fields {
		out = append(out, f.name)
	}
	return strings.Join(out, ", ")
}

func accepts(name string) string {
	for _, f := range fields {
		if f.name == name {
			return f.accepts
		}
	}
	return ""
}

// Load reads and validates a requirements file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("requirements: %w", err)
	}
	return Parse(data, path)
}

// Parse validates requirements data; file names it in errors. Every
// problem is returned (errors.Join), each as "file:line: ...".
func Parse(data []byte, file string) (*File, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%s: not YAML: %v", file, err)
	}
	var errs []error
	bad := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...)))
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a map with version and tiers", file, root.Line)
	}
	top := root.Content[0]
	out := &File{Path: file, Data: data}
	var version *yaml.Node
	var tiers *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "version":
			version = v
		case "tiers":
			tiers = v
		default:
			bad(k.Line, "unknown field %q; accepted: version, tiers", k.Value)
		}
	}
	switch {
	case version == nil:
		bad(top.Line, "no version; accepted: version: %d", Version)
	case version.Value != strconv.Itoa(Version):
		bad(version.Line, "field \"version\": %q is not supported; accepted: %d", version.Value, Version)
	}
	if tiers == nil || tiers.Kind != yaml.SequenceNode || len(tiers.Content) == 0 {
		line := top.Line
		if tiers != nil {
			line = tiers.Line
		}
		bad(line, "field \"tiers\": want a list of one or more tiers, each a map of %s", fieldNames())
		return nil, errors.Join(errs...)
	}
	seen := map[string]int{}
	for _, n := range tiers.Content {
		t, tierErrs := parseTier(n, file)
		errs = append(errs, tierErrs...)
		if t.Name != "" {
			if first, dup := seen[t.Name]; dup {
				bad(t.Line, "tier %q: duplicate name (first at line %d)", t.Name, first)
			}
			seen[t.Name] = t.Line
		}
		out.Tiers = append(out.Tiers, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func parseTier(n *yaml.Node, file string) (Tier, []error) {
	t := Tier{Line: n.Line, NetworkPolicy: AnyPolicy, Rollout: AsDeployed}
	var errs []error
	if n.Kind != yaml.MappingNode {
		return t, []error{fmt.Errorf("%s:%d: a tier must be a map of %s", file, n.Line, fieldNames())}
	}
	who := func() string {
		if t.Name == "" {
			return "tier"
		}
		return fmt.Sprintf("tier %q", t.Name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			t.Name = n.Content[i+1].Value
		}
	}
	bad := func(k *yaml.Node, v *yaml.Node, why string) {
		errs = append(errs, fmt.Errorf("%s:%d: %s: field %q: %q %s; accepted: %s", file, v.Line, who(), k.Value, v.Value, why, accepts(k.Value)))
	}
	required := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if accepts(k.Value) == "" {
			errs = append(errs, fmt.Errorf("%s:%d: %s: unknown field %q; accepted: %s", file, k.Line, who(), k.Value, fieldNames()))
			continue
		}
		if required[k.Value] {
			errs = append(errs, fmt.Errorf("%s:%d: %s: field %q given twice", file, k.Line, who(), k.Value))
		}
		required[k.Value] = true
		if v.Kind != yaml.ScalarNode {
			bad(k, v, "is not a single value")
			continue
		}
		switch k.Value {
		case "name":
			if !validName(v.Value) {
				bad(k, v, "is not a name")
			}
		case "mtls", "l7_routing":
			var on bool
			switch v.Value {
			case "required":
				on = true
			case "optional":
			default:
				bad(k, v, "is not known")
			}
			if k.Value == "mtls" {
				t.MTLS = on
			} else {
				t.L7Routing = on
			}
		case "networkpolicy":
			if !slices.Contains([]string{ExistingRules, HBONEAllowed, AnyPolicy}, v.Value) {
				bad(k, v, "is not known")
			}
			t.NetworkPolicy = v.Value
		case "rollout":
			if v.Value != AsDeployed && v.Value != Hardened {
				bad(k, v, "is not known")
			}
			t.Rollout = v.Value
		case "max_p50_overhead_ms":
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil || f < 0 || f != f {
				bad(k, v, "is not a number of milliseconds >= 0")
				continue
			}
			t.MaxP50OverheadMs = &f
		case "max_rollout_error_rate":
			f, ok := rate(v.Value)
			if !ok {
				bad(k, v, "is not a rate")
				continue
			}
			t.MaxRolloutErrorRate = &f
		}
	}
	if t.Name == "" {
		errs = append(errs, fmt.Errorf("%s:%d: tier without a name; accepted: name: %s", file, n.Line, accepts("name")))
	}
	if len(errs) == 0 && !t.MTLS && !t.L7Routing && t.NetworkPolicy == AnyPolicy && t.MaxP50OverheadMs == nil && t.MaxRolloutErrorRate == nil {
		errs = append(errs, fmt.Errorf("%s:%d: %s requires nothing; set at least one of mtls, l7_routing, networkpolicy, max_p50_overhead_ms, max_rollout_error_rate", file, n.Line, who()))
	}
	if t.Rollout == Hardened && t.MaxRolloutErrorRate == nil && required["rollout"] {
		errs = append(errs, fmt.Errorf("%s:%d: %s: field \"rollout\" without max_rollout_error_rate says nothing; accepted: set max_rollout_error_rate too", file, n.Line, who()))
	}
	return t, errs
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// rate reads 0.001 or 0.1% as a fraction in [0, 1].
func rate(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(p), 0.01
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return 0, false
	}
	f *= scale
	return f, f >= 0 && f <= 1
}

// Describe says what a tier requires, in words.
func (t Tier) Describe() string {
	var out []string
	if t.MTLS {
		out = append(out, "mTLS required")
	}
	if t.L7Routing {
		out = append(out, "L7 routing required")
	}
	switch t.NetworkPolicy {
	case ExistingRules:
		out = append(out, "existing NetworkPolicies kept as they are")
	case HBONEAllowed:
		out = append(out, "NetworkPolicies may need the HBONE port 15008")
	}
	if t.MaxP50OverheadMs != nil {
		out = append(out, fmt.Sprintf("P50 overhead at most %s ms", strconv.FormatFloat(*t.MaxP50OverheadMs, 'g', -1, 64)))
	}
	if t.MaxRolloutErrorRate != nil {
		out = append(out, fmt.Sprintf("rollout error rate at most %s%% (%s)", strconv.FormatFloat(*t.MaxRolloutErrorRate*100, 'g', -1, 64), t.Rollout))
	}
	return strings.Join(out, ", ")
}
