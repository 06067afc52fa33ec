package claims

import (
	"bytes"
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
	if !slices.Contains(metrics, c.Metric) {
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
		if (v.Count == nil) != (v.Total == nil) && c.Metric == ErrorRate {
			add(line("documented"), "mode %s: an error rate needs both count and total", m)
		}
	}
	if c.Kind == Requirement && c.Metric == Outcome {
		for _, m := range c.Modes {
			if v, ok := c.Documented[m]; !ok || v.Outcome == "" {
				add(line("documented"), "requirement has no documented outcome for mode %s", m)
			}
		}
	}
	t := c.Tolerance
	if t.Absolute == nil && t.Relative == nil && t.Factor == nil && t.MaxRate == nil && !t.Exact {
		add(line("tolerance"), "missing tolerance (set absolute, relative, factor, max_rate or exact)")
	}
	if strings.TrimSpace(t.Why) == "" {
		add(line("tolerance"), "tolerance has no why: say where the bound comes from")
	}
	for name, p := range map[string]*float64{"absolute": t.Absolute, "relative": t.Relative, "max_rate": t.MaxRate} {
		if p != nil && *p < 0 {
			add(line("tolerance"), "tolerance %s %v is negative", name, *p)
		}
	}
	if t.Factor != nil && *t.Factor < 1 {
		add(line("tolerance"), "tolerance factor %v must be >= 1", *t.Factor)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
