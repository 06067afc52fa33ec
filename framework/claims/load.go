package claims

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// Error is one problem in the registry, located by file, line and claim.
type Error struct {
	File  string
	Line  int
	Claim string // empty for file-level problems
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Claim != "" {
		return fmt.Sprintf("%s: claim %q: %s", loc, e.Claim, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

type fileDoc struct {
	Version int               `yaml:"version"`
	Sources map[string]Source `yaml:"sources"`
	Claims  []*Claim          `yaml:"claims"`
}

// Load reads and validates a registry file.
func Load(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("claims registry: %w", err)
	}
	return Parse(data, path)
}

var idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+(-[a-z0-9]+)*$`)
var lineInMsg = regexp.MustCompile(`^line (\d+): (.*)$`)

// Parse validates registry data; file names it in errors. All problems found
// are returned together (errors.Join of *Error), so one run shows every typo.
func Parse(data []byte, file string) (*Registry, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, locate(file, nil, err)
	}
	starts := claimStarts(&root)

	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // an unknown field is a typo, not an extension
	if err := dec.Decode(&doc); err != nil {
		return nil, locate(file, starts, err)
	}

	var errs []error
	add := func(line int, claim, format string, a ...any) {
		errs = append(errs, &Error{File: file, Line: line, Claim: claim, Msg: fmt.Sprintf(format, a...)})
	}
	if doc.Version != SchemaVersion {
		add(0, "", "version %d is not supported; this meshclaims reads version %d", doc.Version, SchemaVersion)
	}
	if len(doc.Claims) == 0 {
		add(0, "", "no claims")
	}
	for _, key := range sortedKeys(doc.Sources) {
		src := doc.Sources[key]
		for _, f := range []struct{ name, v string }{{"title", src.Title}, {"date", src.Date}, {"version", src.Version}} {
			if strings.TrimSpace(f.v) == "" {
				add(0, "", "source %s has no %s: a reader needs title, date and version to find the passage (write \"not stated\" where the document gives none)", key, f.name)
			}
		}
	}
	reg := &Registry{File: file, Version: doc.Version, Sources: doc.Sources, Claims: doc.Claims, byID: map[string]*Claim{}}
	for i, c := range doc.Claims {
		node := (*yaml.Node)(nil)
		if i < len(starts) {
			node = starts[i].node
			c.Line = node.Line
		}
		line := func(key string) int { return fieldLine(node, key, c.Line) }
		if c.ID == "" {
			add(c.Line, fmt.Sprintf("#%d", i+1), "missing id")
			continue
		}
		if !idPattern.MatchString(c.ID) {
			add(line("id"), c.ID, "id must look like area.name (lowercase, digits, dashes)")
		}
		if prev, dup := reg.byID[c.ID]; dup {
			add(line("id"), c.ID, "duplicate id (first defined at line %d)", prev.Line)
			continue
		}
		reg.byID[c.ID] = c
		validateClaim(c, doc.Sources, line, func(l int, f string, a ...any) { add(l, c.ID, f, a...) })
	}
	// References name other claims, so they are checked once all are read.
	for i, c := range doc.Claims {
		if c.ID == "" || c.Reference == nil || reg.byID[c.ID] != c {
			continue
		}
		node := (*yaml.Node)(nil)
		if i < len(starts) {
			node = starts[i].node
		}
		validateReference(c, reg, fieldLine(node, "reference", c.Line), func(l int, f string, a ...any) { add(l, c.ID, f, a...) })
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return reg, nil
}

func validateClaim(c *Claim, sources map[string]Source, line func(string) int, add func(int, string, ...any)) {
	if c.Title == "" {
		add(line("id"), "missing title")
	}
	if _, ok := sources[c.Source.Doc]; !ok {
		add(line("source"), "unknown source document %q; known: %s", c.Source.Doc, strings.Join(sortedKeys(sources), ", "))
	}
	if c.Source.Section == "" {
		add(line("source"), "source section is missing")
	}
	if !slices.Contains(kinds, c.Kind) {
		add(line("kind"), "unknown kind %q; accepted: %s", c.Kind, join(kinds))
	}
	metric, known := rules[c.Metric]
	if !known {
		add(line("metric"), "unknown metric %q; accepted: %s", c.Metric, join(metrics))
	}
	if len(c.Modes) == 0 {
		add(line("modes"), "no modes")
	}
	for _, m := range c.Modes {
		if !m.Valid() {
			add(line("modes"), "unknown mode %q; accepted: %s", m, join(mode.All()))
		}
	}
	if c.Baseline != "" && !c.Baseline.Valid() {
		add(line("baseline"), "unknown baseline mode %q; accepted: %s", c.Baseline, join(mode.All()))
	}
	if c.Setup.Duration != "" {
		if _, err := time.ParseDuration(c.Setup.Duration); err != nil {
			add(line("setup"), "setup duration %q is not a Go duration (e.g. 600s, 1m)", c.Setup.Duration)
		}
	}
	for m, v := range c.Documented {
		if !m.Valid() {
			add(line("documented"), "documented value for unknown mode %q; accepted: %s", m, join(mode.All()))
			continue
		}
		if !c.AppliesTo(m) && m != c.Baseline {
			add(line("documented"), "documented value for mode %q, which is neither in modes [%s] nor the baseline", m, join(c.Modes))
		}
		if v.Outcome != "" && !slices.Contains(outcomes, v.Outcome) {
			add(line("documented"), "mode %s: unknown outcome %q; accepted: %s", m, v.Outcome, strings.Join(outcomes, ", "))
		}
		if v.Count != nil && v.Total != nil && (*v.Count < 0 || *v.Count > *v.Total) {
			add(line("documented"), "mode %s: count %d is not within 0..total %d", m, *v.Count, *v.Total)
		}
		if v.At != nil && (c.Metric != TimeToReady || v.Value == nil || v.At.Services <= 0) {
			add(line("documented"), "mode %s: at (a value at a scale) needs metric %s, a value to grow from and services > 0", m, TimeToReady)
		}
		validateByKubeProxy(c, m, v, line("documented"), add)
		validateByConntrackMax(c, m, v, line("documented"), add)
		if v.VCPU != nil && c.Metric != ProxyFootprint {
			add(line("documented"), "mode %s: vcpu is the CPU of metric %s; metric %s has none", m, ProxyFootprint, c.Metric)
		}
		if (v.Attribution != nil) != (c.Metric == Attribution) {
			add(line("documented"), "mode %s: an attribution (of, to) goes with metric %s and every documented value of it needs one", m, Attribution)
		}
		if a := v.Attribution; a != nil {
			if a.Of <= 0 || len(a.To) == 0 {
				add(line("documented"), "mode %s: attribution needs of > 0 (the events the source attributes) and at least one category in to", m)
			}
			for _, cat := range a.To {
				if !slices.Contains(AttributionCategories, cat) {
					add(line("documented"), "mode %s: unknown attribution category %q; accepted: %s", m, cat, strings.Join(AttributionCategories, ", "))
				}
			}
		}
	}
	if known {
		metric.ValidateDocumented(c, func(f string, a ...any) { add(line("documented"), f, a...) })
	}
	validateTolerance(c.Tolerance, "tolerance", line("tolerance"), add)
	validateDistinct(c, line("distinct"), add)
}

// validateByKubeProxy checks a value stated per kube-proxy mode: known
// modes, a scalar each, and nothing beside them the judge would ignore.
func validateByKubeProxy(c *Claim, m mode.Mode, v Value, at int, add func(int, string, ...any)) {
	if len(v.ByKubeProxy) == 0 {
		return
	}
	if v.Value != nil || v.At != nil || v.Low != nil || v.High != nil || len(v.Percentiles) > 0 || v.Count != nil {
		add(at, "mode %s: by_kube_proxy states the values; the mode's own value, at, low, high, percentiles_ms or count beside it would never be judged", m)
	}
	for _, kp := range sortedKeys(v.ByKubeProxy) {
		x := v.ByKubeProxy[kp]
		if !slices.Contains(KubeProxyModes, kp) {
			add(at, "mode %s: by_kube_proxy names unknown kube-proxy mode %q; accepted: %s", m, kp, join(KubeProxyModes))
		}
		if x.Value == nil {
			add(at, "mode %s: by_kube_proxy %s has no value", m, kp)
		}
		if len(x.ByKubeProxy) > 0 || x.At != nil || x.Outcome != "" || x.Count != nil || len(x.Percentiles) > 0 {
			add(at, "mode %s: by_kube_proxy %s sets only value, low, high and text", m, kp)
		}
	}
	if c.Metric != TimeToReady {
		add(at, "mode %s: by_kube_proxy (values per kube-proxy mode) is judged for metric %s only, not %s", m, TimeToReady, c.Metric)
	}
}

// validateByConntrackMax checks a value stated per nf_conntrack_max:
// positive limits, a count of a total each, nothing beside them the judge
// would ignore, and the metric that reads them.
func validateByConntrackMax(c *Claim, m mode.Mode, v Value, at int, add func(int, string, ...any)) {
	if len(v.ByConntrackMax) == 0 {
		return
	}
	if c.Metric != ConnectFailureRate {
		add(at, "mode %s: by_conntrack_max (values per nf_conntrack_max) is judged for metric %s only, not %s", m, ConnectFailureRate, c.Metric)
	}
	if len(v.ByKubeProxy) > 0 {
		add(at, "mode %s: a value is stated per kube-proxy mode or per nf_conntrack_max, not both", m)
	}
	if v.Value != nil || v.Count != nil || v.Total != nil || v.At != nil || len(v.Percentiles) > 0 {
		add(at, "mode %s: by_conntrack_max states the values; the mode's own value, count, total, at or percentiles_ms beside it would never be judged", m)
	}
	for _, n := range sortedKeys(v.ByConntrackMax) {
		x := v.ByConntrackMax[n]
		if n <= 0 {
			add(at, "mode %s: by_conntrack_max limit %d: want a positive nf_conntrack_max", m, n)
		}
		switch {
		case x.Count == nil || x.Total == nil:
			add(at, "mode %s: by_conntrack_max %d needs count (connections that failed) and total (connections opened)", m, n)
		case *x.Total <= 0 || *x.Count < 0 || *x.Count > *x.Total:
			add(at, "mode %s: by_conntrack_max %d: count %d of total %d; want 0 <= count <= total, total > 0", m, n, *x.Count, *x.Total)
		}
		if len(x.ByConntrackMax) > 0 || len(x.ByKubeProxy) > 0 || x.Value != nil || x.At != nil || x.Outcome != "" || len(x.Percentiles) > 0 {
			add(at, "mode %s: by_conntrack_max %d sets only count, total and text", m, n)
		}
	}
}

func validateTolerance(t Tolerance, name string, at int, add func(int, string, ...any)) {
	if t.Absolute == nil && t.Relative == nil && t.Factor == nil && t.MaxRate == nil && t.AtLeast == nil && t.AtMost == nil && !t.Exact {
		add(at, "missing %s (set absolute, relative, factor, max_rate, at_least, at_most or exact)", name)
	}
	if strings.TrimSpace(t.Why) == "" {
		add(at, "%s has no why: say where the bound comes from", name)
	}
	for field, p := range map[string]*float64{"absolute": t.Absolute, "relative": t.Relative, "max_rate": t.MaxRate} {
		if p != nil && *p < 0 {
			add(at, "%s %s %v is negative", name, field, *p)
		}
	}
	if t.Factor != nil && *t.Factor < 1 {
		add(at, "%s factor %v must be >= 1", name, *t.Factor)
	}
	if t.AtLeast != nil && t.AtMost != nil && *t.AtLeast > *t.AtMost {
		add(at, "%s at_least %v is above at_most %v: the band is empty", name, *t.AtLeast, *t.AtMost)
	}
}

// validateDistinct requires, for a claim judged within a band in two or more
// documented modes, a statement of which modes the source tells apart, and
// checks that it groups exactly those modes.
func validateDistinct(c *Claim, at int, add func(int, string, ...any)) {
	judged := c.JudgedDocumented()
	d := c.Distinct
	if d == nil {
		if len(judged) >= 2 && !c.Tolerance.Exact {
			add(at, "documents values for %d judged modes (%s) but no distinct: say which modes the source tells apart (groups) and quote it (text)", len(judged), join(judged))
		}
		return
	}
	if strings.TrimSpace(d.Text) == "" {
		add(at, "distinct has no text: quote the source's words that tell the modes apart (or say they are alike)")
	}
	seen := map[mode.Mode]bool{}
	for _, g := range d.Groups {
		if len(g) == 0 {
			add(at, "distinct has an empty group")
		}
		for _, m := range g {
			switch {
			case seen[m]:
				add(at, "distinct names mode %q in more than one group", m)
			case !slices.Contains(judged, m):
				add(at, "distinct names mode %q, which is not a judged documented mode; accepted: %s", m, join(judged))
			}
			seen[m] = true
		}
	}
	for _, m := range judged {
		if !seen[m] {
			add(at, "distinct leaves out judged documented mode %s; every one belongs to a group", m)
		}
	}
	validateKubeProxyGroups(c, at, add)
}

// validateKubeProxyGroups requires, for values stated per kube-proxy mode
// in two or more kube-proxy modes, kube_proxy_groups that group exactly the
// documented kube-proxy modes.
func validateKubeProxyGroups(c *Claim, at int, add func(int, string, ...any)) {
	documented := map[KubeProxyMode]bool{}
	for _, m := range c.JudgedDocumented() {
		for kp := range c.Documented[m].ByKubeProxy {
			documented[kp] = true
		}
	}
	var groups [][]KubeProxyMode
	if c.Distinct != nil {
		groups = c.Distinct.KubeProxyGroups
	}
	if len(groups) == 0 {
		if len(documented) >= 2 && !c.Tolerance.Exact {
			add(at, "documents values for %d kube-proxy modes (%s) but no distinct.kube_proxy_groups: say which kube-proxy modes the source tells apart", len(documented), join(sortedKeys(documented)))
		}
		return
	}
	seen := map[KubeProxyMode]bool{}
	for _, g := range groups {
		if len(g) == 0 {
			add(at, "distinct.kube_proxy_groups has an empty group")
		}
		for _, kp := range g {
			switch {
			case seen[kp]:
				add(at, "distinct.kube_proxy_groups names kube-proxy mode %q in more than one group", kp)
			case !documented[kp]:
				add(at, "distinct.kube_proxy_groups names kube-proxy mode %q, which no by_kube_proxy documents; accepted: %s", kp, join(sortedKeys(documented)))
			}
			seen[kp] = true
		}
	}
	for _, kp := range sortedKeys(documented) {
		if !seen[kp] {
			add(at, "distinct.kube_proxy_groups leaves out documented kube-proxy mode %s; every one belongs to a group", kp)
		}
	}
}

// validateReference checks a same-run comparison: the reference exists,
// fits the comparison, and documents what the documented comparison needs.
func validateReference(c *Claim, reg *Registry, at int, add func(int, string, ...any)) {
	r := c.Reference
	if !slices.Contains(comparisons, r.Compare) {
		add(at, "reference: unknown compare %q; accepted: %s", r.Compare, join(comparisons))
		return
	}
	if strings.TrimSpace(r.Text) == "" {
		add(at, "reference has no text: quote the source's words the comparison rests on")
	}
	switch r.Compare {
	case Difference:
		if r.Claim != "" || len(r.Modes) > 0 || r.Tolerance != nil {
			add(at, "reference compare difference takes a mode only (its band is the claim's tolerance); remove claim, modes and tolerance")
		}
		if c.Metric != LatencyPercentiles {
			add(at, "reference compare difference judges percentiles; metric %s is not %s", c.Metric, LatencyPercentiles)
		}
		if !r.Mode.Valid() {
			add(at, "reference mode %q is not a mode; accepted: %s", r.Mode, join(mode.All()))
			return
		}
		if _, ok := c.Documented[r.Mode]; !ok {
			add(at, "reference mode %s has no documented value to take differences from", r.Mode)
		}
	case RateRatioOf:
		if r.Mode != "" {
			add(at, "reference compare rate_ratio takes a claim (the same mode's reference run), not a mode")
		}
		if c.Metric != ErrorRate {
			add(at, "reference compare rate_ratio judges rates; metric %s is not %s", c.Metric, ErrorRate)
		}
		if r.Tolerance == nil {
			add(at, "reference compare rate_ratio needs its own tolerance (the band of the ratio)")
		} else {
			validateTolerance(*r.Tolerance, "reference tolerance", at, add)
		}
		for _, m := range r.Modes {
			if !c.AppliesTo(m) {
				add(at, "reference mode %q is not one of the claim's modes [%s]", m, join(c.Modes))
			}
		}
		of, ok := reg.Get(r.Claim)
		if !ok {
			add(at, "reference claim %q is not in the registry", r.Claim)
			return
		}
		if of == c {
			add(at, "reference claim %q is the claim itself", r.Claim)
			return
		}
		if of.Metric != ErrorRate {
			add(at, "reference claim %s has metric %s; a rate_ratio needs %s", of.ID, of.Metric, ErrorRate)
		}
		r.Of = of
		for _, m := range c.Modes {
			if !r.AppliesTo(m) {
				continue
			}
			if _, ok := c.Documented[m]; !ok {
				continue
			}
			if v, ok := of.Documented[m]; !ok || v.Count == nil || v.Total == nil || *v.Count == 0 {
				add(at, "reference claim %s documents no nonzero count for mode %s, so no documented ratio exists", of.ID, m)
			}
		}
	}
}

type claimStart struct {
	id   string
	node *yaml.Node
}

// claimStarts finds each claim's mapping node so errors can name lines.
func claimStarts(root *yaml.Node) []claimStart {
	if root == nil || len(root.Content) == 0 {
		return nil
	}
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "claims" || top.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var out []claimStart
		for _, n := range top.Content[i+1].Content {
			cs := claimStart{node: n}
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == "id" {
					cs.id = n.Content[j+1].Value
				}
			}
			out = append(out, cs)
		}
		return out
	}
	return nil
}

func fieldLine(n *yaml.Node, key string, fallback int) int {
	if n == nil {
		return fallback
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == key {
			return n.Content[j].Line
		}
	}
	return fallback
}

// locate turns a yaml error into *Errors naming the claim whose block holds
// the offending line.
func locate(file string, starts []claimStart, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, m := range msgs {
		e := &Error{File: file, Msg: m}
		if sm := lineInMsg.FindStringSubmatch(m); sm != nil {
			e.Line, _ = strconv.Atoi(sm[1])
			e.Msg = sm[2]
			for _, s := range starts {
				if s.node.Line <= e.Line {
					e.Claim = s.id
				}
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
