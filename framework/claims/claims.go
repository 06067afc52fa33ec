// Package claims loads and validates the claims registry (testdata/claims.yaml):
// every published claim about Istio's modes that the suite turns into a spec,
// with its provenance, the setup it was measured under, the documented value
// per mode and the tolerance it is judged with.
//
// The registry is data, not code: a spec looks its claim up by id, and a
// change of tolerance is a reviewed change of one line of YAML. Validation is
// strict (unknown fields, modes, metrics and duplicate ids are errors naming
// file, line and claim) because a typo in a tolerance would otherwise turn a
// failing measurement into a silent pass.
package claims

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// SchemaVersion is the registry format this package reads.
const SchemaVersion = 1

// Kind says how a claim is judged.
type Kind string

const (
	// Requirement is a pass/fail property ("plaintext is blocked").
	Requirement Kind = "requirement"
	// Measurement is a number to reproduce within a tolerance.
	Measurement Kind = "measurement"
	// Model is arithmetic from assumed inputs (REVIEW: a budget, not a measurement);
	// its spec checks the arithmetic and sets measured values beside it.
	Model Kind = "model"
)

var kinds = []Kind{Requirement, Measurement, Model}

// Metric names what a claim's value measures; the verdict package knows how
// to judge each one and registers it (RegisterMetric).
type Metric string

const (
	Outcome            Metric = "outcome"                // what a probe observed: an Outcome value
	LatencyPercentiles Metric = "latency_percentiles_ms" // P50..P99.9 in ms
	LatencyOverhead    Metric = "latency_overhead_ms"    // P50 (or mean) minus the same-run baseline, ms
	LatencyMean        Metric = "latency_mean_ms"        // mean latency, ms
	ErrorRate          Metric = "error_rate"             // count of total (503, -1, ...)
	RateRatio          Metric = "rate_ratio"             // one mode's rate over another's
	DuplicateCount     Metric = "duplicate_count"        // duplicate executions of a non-idempotent request
	Throughput         Metric = "throughput_qps"         // requests per second at saturation
	Bandwidth          Metric = "bandwidth_mbs"          // MB/s of one large download
	IntervalMs         Metric = "interval_ms"            // spacing of streamed events, ms
	TimeToReady        Metric = "time_to_ready_s"        // seconds until a Service answers as its latest change says (a new Service, a changed endpoint)
	ResourceBudget     Metric = "resource_budget"        // MB and vCPU
	QueriesPerCore     Metric = "queries_per_core"       // throughput per CPU core
	Stability          Metric = "stability"              // spread of throughput/latency under churn
	SuccessRate        Metric = "success_rate"           // share of requests answered 200
	CostShare          Metric = "cost_share"             // a part of a latency overhead as a share of the whole (0..1)
	FailureRate        Metric = "failure_rate"           // requests the client saw fail after the mesh's retries, of those sent
	ProxyFootprint     Metric = "proxy_footprint"        // one proxy's working set (value, MiB) and CPU (vcpu) under a stated load
	// ConnectFailureRate: connections not established within the connect
	// timeout, of those opened at once (conntrack.table-full).
	ConnectFailureRate Metric = "connect_failure_rate"
	// Attribution: events of one kind (fortio -1s, 503s) counted per
	// category of what caused them; the share of the categories the source
	// names is judged.
	Attribution Metric = "attribution"
)

// MetricRules checks what one metric's judge needs of a claim's documented
// values, beyond the structure Parse checks for every metric. The judging
// layer registers one per metric it judges (framework/verdict's metrics), so
// the registry accepts exactly the metrics that can be judged.
type MetricRules interface {
	// ValidateDocumented reports each problem of c's documented values
	// through add.
	ValidateDocumented(c *Claim, add func(format string, a ...any))
}

// metrics are the registered metrics in the order they were registered
// (the order an unknown metric's error lists them in), rules their checks.
var (
	metrics []Metric
	rules   = map[Metric]MetricRules{}
)

// RegisterMetric makes name a metric the registry accepts, its documented
// values checked by r. A name registered twice is a programming error.
func RegisterMetric(name Metric, r MetricRules) {
	if _, dup := rules[name]; dup {
		panic(fmt.Sprintf("claims: metric %q registered twice", name))
	}
	metrics = append(metrics, name)
	rules[name] = r
}

// AttributionCategories are the categories an attribution claim may name:
// the causes of fortio's -1 as the load engine classifies them
// (framework/load's Cause values), and where a 503's upstream host stood on
// the rollout's pod timeline (rollout.503-attribution's reading of the
// client sidecar's access log).
var AttributionCategories = []string{
	"reset", "eof", "timeout", "refused", "other", // fortio -1 causes
	"terminating", "gone", "live", "no-upstream", // a 503's upstream host
}

// Unattributed is the category of events nothing explains (a -1 without a
// log line, a 503 whose upstream host is not on the timeline); a judge counts
// it neither for nor against the source's categories.
const Unattributed = "unattributed"

// Outcomes a probe can observe; requirement claims name one per mode.
var outcomes = []string{
	"http-200", "http-403", "http-503",
	"no-http-response", // reset or EOF: the request got no status line
	"blocked",          // connection never established (timeout or refused)
	"honoured", "not-honoured", "verified",
}

// Registry is the loaded, validated claims file.
type Registry struct {
	File    string
	Version int
	Sources map[string]Source
	Claims  []*Claim
	byID    map[string]*Claim
}

// Source is one document the claims come from.
type Source struct {
	Title string `yaml:"title" json:"title"`
	// Date is when the document was published or last updated, as it
	// says (or "not stated"); Version is the revision or the versions it
	// declares it covers. With the title and a claim's section they let a
	// reader find the passage; File is where this registry's maintainers
	// read it and is not shown in reports.
	Date    string `yaml:"date" json:"date"`
	Version string `yaml:"version" json:"version"`
	File    string `yaml:"file" json:"file"`
	// Platform is where the document measured: cluster, versions, hardware.
	Platform string `yaml:"platform" json:"platform"`
}

// Ref locates a claim in its source document.
type Ref struct {
	Doc     string `yaml:"doc" json:"doc"`
	Section string `yaml:"section" json:"section"`
}

// Setup is what a claim was measured under. Zero values mean "not stated".
type Setup struct {
	QPS         float64 `yaml:"qps" json:"qps,omitempty"` // 0 = unlimited when Saturate
	Saturate    bool    `yaml:"saturate" json:"saturate,omitempty"`
	Connections int     `yaml:"connections" json:"connections,omitempty"`
	Duration    string  `yaml:"duration" json:"duration,omitempty"` // Go duration, e.g. "600s"
	Requests    int64   `yaml:"requests" json:"requests,omitempty"`
	Runs        int     `yaml:"runs" json:"runs,omitempty"`
	Replicas    int     `yaml:"replicas" json:"replicas,omitempty"`
	Rollout     bool    `yaml:"rollout" json:"rollout,omitempty"` // restart loop during the load
	Hardened    bool    `yaml:"hardened" json:"hardened,omitempty"`
	Istio       string  `yaml:"istio" json:"istio,omitempty"`
	Kubernetes  string  `yaml:"kubernetes" json:"kubernetes,omitempty"`
	Fortio      string  `yaml:"fortio" json:"fortio,omitempty"`
	Notes       string  `yaml:"notes" json:"notes,omitempty"`
}

// Value is what a document reports for one mode. Only the fields the metric
// needs are set; Text keeps the document's own words.
type Value struct {
	Text    string   `yaml:"text" json:"text,omitempty"`
	Outcome string   `yaml:"outcome" json:"outcome,omitempty"`
	Count   *int64   `yaml:"count" json:"count,omitempty"`
	Total   *int64   `yaml:"total" json:"total,omitempty"`
	Value   *float64 `yaml:"value" json:"value,omitempty"`
	// VCPU is the CPU, in cores, beside Value's memory (proxy_footprint).
	VCPU        *float64           `yaml:"vcpu" json:"vcpu,omitempty"`
	Low         *float64           `yaml:"low" json:"low,omitempty"` // a documented range
	High        *float64           `yaml:"high" json:"high,omitempty"`
	Percentiles map[string]float64 `yaml:"percentiles_ms" json:"percentiles_ms,omitempty"`
	MeanMs      *float64           `yaml:"mean_ms" json:"mean_ms,omitempty"`
	Cycles      *int64             `yaml:"cycles" json:"cycles,omitempty"`
	Sockets     *int64             `yaml:"sockets" json:"sockets,omitempty"`
	Unanswered  *int64             `yaml:"socket_errors" json:"socket_errors,omitempty"` // fortio -1
	// Attribution is what the source attributes the mode's events to
	// (metric attribution): Of events, each to one of To.
	Attribution *Attributed `yaml:"attribution" json:"attribution,omitempty"`
	// At is the value at a stated scale (kubeproxy.service-scale: with
	// 10,000 Services), for claims about how a value grows; the growth
	// from Value to At.Value is judged.
	At *AtScale `yaml:"at" json:"at,omitempty"`
	// ByKubeProxy holds values the source states per kube-proxy mode
	// (HYBRID's kind runs: a new Service answers after 1.04 s under
	// iptables, 0.12 s under ipvs): what a cluster should give depends on
	// the mode its kube-proxy runs, not on the mesh mode, so the judge picks
	// the value of the mode the spec read from the cluster. Each entry sets
	// value (and text); the outer value then sets only text.
	ByKubeProxy map[KubeProxyMode]Value `yaml:"by_kube_proxy" json:"by_kube_proxy,omitempty"`
	// ByConntrackMax holds values the source states per nf_conntrack_max
	// (HYBRID's full table: of 4,000 connections, 0 fail at 262,144, 2,087
	// at 2,048, 3,031 at 1,024): the judge picks the value of the limit the
	// measurement ran under. Each entry sets count and total (and text);
	// the outer value then sets only text.
	ByConntrackMax map[int64]Value `yaml:"by_conntrack_max" json:"by_conntrack_max,omitempty"`
	// Expected marks a value the document did not state but that follows from
	// it (e.g. no mesh: 8080 allowed gives 200); reports show it as expected,
	// not documented.
	Expected bool `yaml:"expected" json:"expected,omitempty"`
}

// KubeProxyMode is how kube-proxy programs Services: the mode field of its
// KubeProxyConfiguration.
type KubeProxyMode string

const (
	KubeProxyIPTables KubeProxyMode = "iptables"
	KubeProxyIPVS     KubeProxyMode = "ipvs"
	KubeProxyNFTables KubeProxyMode = "nftables"
)

// KubeProxyModes are the modes kube-proxy accepts on Linux (kernelspace is
// Windows-only and no source measures it).
var KubeProxyModes = []KubeProxyMode{KubeProxyIPTables, KubeProxyIPVS, KubeProxyNFTables}

// ForKubeProxy returns the value documented for kube-proxy mode kp when the
// value is stated per kube-proxy mode, and v itself when it is not.
func (v Value) ForKubeProxy(kp KubeProxyMode) (Value, bool) {
	if len(v.ByKubeProxy) == 0 {
		return v, true
	}
	return v.For(Variant{KubeProxy: kp})
}

// Variant is a setting of the system under test that a value may be
// stated per, beside the mesh mode: kube-proxy's mode, nf_conntrack_max.
// The zero Variant is "not stated per any".
type Variant struct {
	KubeProxy    KubeProxyMode
	ConntrackMax int64
}

// String is "kube-proxy ipvs", "nf_conntrack_max 1024", or "".
func (v Variant) String() string {
	var s []string
	if v.KubeProxy != "" {
		s = append(s, "kube-proxy "+string(v.KubeProxy))
	}
	if v.ConntrackMax != 0 {
		s = append(s, fmt.Sprintf("nf_conntrack_max %d", v.ConntrackMax))
	}
	return strings.Join(s, ", ")
}

// For returns the value documented for variant u: the entry of the
// setting v is stated per (by_kube_proxy, by_conntrack_max), or v itself
// when it is stated per none; false when v is stated per a setting and u
// names no documented entry of it.
func (v Value) For(u Variant) (Value, bool) {
	switch {
	case len(v.ByKubeProxy) > 0:
		x, ok := v.ByKubeProxy[u.KubeProxy]
		return x, ok
	case len(v.ByConntrackMax) > 0:
		x, ok := v.ByConntrackMax[u.ConntrackMax]
		return x, ok
	}
	return v, true
}

// Variants lists the documented variants of v in a fixed order
// (kube-proxy modes as KubeProxyModes, limits descending), or the one zero
// Variant of a value stated per none.
func (v Value) Variants() []Variant {
	var out []Variant
	for _, kp := range KubeProxyModes {
		if _, ok := v.ByKubeProxy[kp]; ok {
			out = append(out, Variant{KubeProxy: kp})
		}
	}
	limits := make([]int64, 0, len(v.ByConntrackMax))
	for n := range v.ByConntrackMax {
		limits = append(limits, n)
	}
	slices.Sort(limits)
	slices.Reverse(limits)
	for _, n := range limits {
		out = append(out, Variant{ConntrackMax: n})
	}
	if len(out) == 0 {
		return []Variant{{}}
	}
	return out
}

// Attributed is a source's attribution of a number of events to causes:
// GUIDE's 84 -1s in the column "TCP reset/EOF" are Of 84, To [reset, eof].
type Attributed struct {
	Of int64    `yaml:"of" json:"of"`
	To []string `yaml:"to" json:"to"`
}

// AtScale is a documented value under a stated number of objects.
type AtScale struct {
	Services int64   `yaml:"services" json:"services"`
	Value    float64 `yaml:"value" json:"value"`
}

// Tolerance is how far a measurement may be from the documented value and
// still count as reproducing it. At least one bound must be set, and Why
// must say where the bound comes from.
type Tolerance struct {
	// Absolute: |measured - documented| <= Absolute, in the metric's unit.
	Absolute *float64 `yaml:"absolute" json:"absolute,omitempty"`
	// Relative: |measured - documented| <= Relative * documented.
	Relative *float64 `yaml:"relative" json:"relative,omitempty"`
	// Factor: documented/Factor <= measured <= documented*Factor (rates, ratios).
	Factor *float64 `yaml:"factor" json:"factor,omitempty"`
	// MaxRate: a "zero" claim holds when the 95% upper bound of the rate is <= MaxRate.
	MaxRate *float64 `yaml:"max_rate" json:"max_rate,omitempty"`
	// AtLeast and AtMost bound the band on one or both sides, for claims the
	// source states as a bound ("cut by more than half": at_most 0.5 of the
	// reference). With absolute, relative or factor they clip that band;
	// alone they are the band.
	AtLeast *float64 `yaml:"at_least" json:"at_least,omitempty"`
	AtMost  *float64 `yaml:"at_most" json:"at_most,omitempty"`
	// Exact: the observed outcome must equal the documented one.
	Exact bool   `yaml:"exact" json:"exact,omitempty"`
	Why   string `yaml:"why" json:"why"`
}

// Claim is one registry entry.
type Claim struct {
	ID         string              `yaml:"id" json:"id"`
	Title      string              `yaml:"title" json:"title"`
	Source     Ref                 `yaml:"source" json:"source"`
	Kind       Kind                `yaml:"kind" json:"kind"`
	Metric     Metric              `yaml:"metric" json:"metric"`
	Modes      []mode.Mode         `yaml:"modes" json:"modes"`
	Baseline   mode.Mode           `yaml:"baseline" json:"baseline,omitempty"` // the mode overheads are taken over
	Setup      Setup               `yaml:"setup" json:"setup"`
	Documented map[mode.Mode]Value `yaml:"documented" json:"documented"`
	Tolerance  Tolerance           `yaml:"tolerance" json:"tolerance"`
	// Reference, when set, judges the claim against a measurement of the
	// same run (another mode's, or another claim's in the same mode), so
	// what differs between clusters cancels out.
	Reference *Reference `yaml:"reference" json:"reference,omitempty"`
	// Distinct says which modes the source tells apart; required when two
	// or more judged modes have documented values and the tolerance is a band.
	Distinct *Distinct `yaml:"distinct" json:"distinct,omitempty"`
	// Needs lists preconditions a spec must prove before judging
	// (e.g. "networkpolicy-enforcement"); missing ones fail the spec.
	Needs []string `yaml:"needs" json:"needs,omitempty"`
	Line  int      `yaml:"-" json:"-"`
}

// Comparison says how a measurement is set against its same-run reference.
type Comparison string

const (
	// Difference: the claim's tolerance judges measured minus reference
	// against documented minus the reference's documented value, per
	// percentile (latency_percentiles_ms). The reference is another mode.
	Difference Comparison = "difference"
	// RateRatio of the claim's rate over the reference's rate in the same
	// mode, with its Katz interval, judged by the reference's own tolerance
	// in addition to the claim's. The reference is another claim.
	RateRatioOf Comparison = "rate_ratio"
)

var comparisons = []Comparison{Difference, RateRatioOf}

// Reference is a measurement of the same run a claim is judged against.
type Reference struct {
	// Mode is another mode's measurement of the same load (Difference).
	Mode mode.Mode `yaml:"mode" json:"mode,omitempty"`
	// Claim is another claim's measurement in the same mode (RateRatioOf):
	// its documented value for the mode is the documented reference.
	Claim   string     `yaml:"claim" json:"claim,omitempty"`
	Compare Comparison `yaml:"compare" json:"compare"`
	// Modes the comparison applies to (RateRatioOf); empty = all the claim's.
	Modes []mode.Mode `yaml:"modes" json:"modes,omitempty"`
	// Tolerance of the comparison (RateRatioOf only; Difference uses the claim's).
	Tolerance *Tolerance `yaml:"tolerance" json:"tolerance,omitempty"`
	// Text quotes the source's words the comparison rests on.
	Text string `yaml:"text" json:"text"`
	// Of is the referenced claim, resolved by Parse.
	Of *Claim `yaml:"-" json:"-"`
}

// AppliesTo reports whether the comparison judges mode m.
func (r *Reference) AppliesTo(m mode.Mode) bool {
	return len(r.Modes) == 0 || slices.Contains(r.Modes, m)
}

// Distinct groups a claim's judged modes by what the source says: modes in
// different groups have values the source says differ, so one group's
// documented value must not pass another group's band; modes in one group
// the source does not tell apart.
type Distinct struct {
	Groups [][]mode.Mode `yaml:"groups" json:"groups"`
	// KubeProxyGroups does the same for the kube-proxy modes of values
	// stated per kube-proxy mode (Value.ByKubeProxy). Values stated per
	// nf_conntrack_max need no groups: the source states a different
	// outcome for each limit, so every limit's band must exclude every
	// other limit's value.
	KubeProxyGroups [][]KubeProxyMode `yaml:"kube_proxy_groups" json:"kube_proxy_groups,omitempty"`
	Text            string            `yaml:"text" json:"text"`
}

// Group returns the index of m's group, or -1.
func (d *Distinct) Group(m mode.Mode) int {
	for i, g := range d.Groups {
		if slices.Contains(g, m) {
			return i
		}
	}
	return -1
}

// KubeProxyGroup returns the index of kp's kube-proxy group, or -1.
func (d *Distinct) KubeProxyGroup(kp KubeProxyMode) int {
	for i, g := range d.KubeProxyGroups {
		if slices.Contains(g, kp) {
			return i
		}
	}
	return -1
}

// JudgedDocumented returns the modes the claim judges that have a
// documented (or expected) value, in the claim's mode order. A Difference
// reference's own mode is not judged (it is the baseline).
func (c *Claim) JudgedDocumented() []mode.Mode {
	var out []mode.Mode
	for _, m := range c.Modes {
		if _, ok := c.Documented[m]; !ok {
			continue
		}
		if c.Reference != nil && c.Reference.Compare == Difference && c.Reference.Mode == m {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Get returns the claim with the given id.
func (r *Registry) Get(id string) (*Claim, bool) {
	c, ok := r.byID[id]
	return c, ok
}

// MustGet returns the claim or panics naming the id; specs use it at tree
// construction so an unknown id fails the dry run.
func (r *Registry) MustGet(id string) *Claim {
	c, ok := r.byID[id]
	if !ok {
		panic(fmt.Sprintf("claim %q is not in the registry %s", id, r.File))
	}
	return c
}

// IDs returns every claim id, sorted.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.Claims))
	for _, c := range r.Claims {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	return ids
}

// ForMode returns the claims that apply to m, in file order.
func (r *Registry) ForMode(m mode.Mode) []*Claim {
	var out []*Claim
	for _, c := range r.Claims {
		if c.AppliesTo(m) {
			out = append(out, c)
		}
	}
	return out
}

// AppliesTo reports whether the claim is about mode m.
func (c *Claim) AppliesTo(m mode.Mode) bool {
	for _, k := range c.Modes {
		if k == m {
			return true
		}
	}
	return false
}

// DocumentedFor returns the documented (or expected) value for mode m.
func (c *Claim) DocumentedFor(m mode.Mode) (Value, bool) {
	v, ok := c.Documented[m]
	return v, ok
}

// String is "id (DOC section)".
func (c *Claim) String() string {
	return fmt.Sprintf("%s (%s %s)", c.ID, c.Source.Doc, c.Source.Section)
}

func join[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
