package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/closest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Selection is what narrows a run beyond -mode: Ginkgo's label filter and
// its focus and skip expressions (matched, as Ginkgo matches them, against
// the suite's description and the spec's text).
type Selection struct {
	Description string // RunSpecs' description
	LabelFilter string
	Focus, Skip []string
}

// labelRef is a "key:value" label a filter names: claim:, mode: or area:.
var labelRef = regexp.MustCompile(`\b(claim|mode|area):\s*([A-Za-z0-9._-]+)`)

// CheckSelection refuses a selection that would run nothing, before anything
// runs: a run that selects no spec passes with nothing measured (a false
// green). It names a claim id, mode or area the filter mentions that does
// not exist, with the closest known ones; a claim that exists but does not
// apply to the selected modes, with the modes it applies to; and otherwise
// says that the filters match none of the planned specs.
func CheckSelection(reg *claims.Registry, planned []Planned, modes []mode.Mode, sel Selection) error {
	var errs []string
	areas := plannedAreas(planned)
	allAreas := areas
	for _, d := range Defs() {
		if !slices.Contains(allAreas, d.Area) {
			allAreas = append(allAreas, d.Area)
		}
	}
	for _, m := range labelRef.FindAllStringSubmatch(sel.LabelFilter, -1) {
		key, val := m[1], m[2]
		switch key {
		case "claim":
			c, ok := reg.Get(val)
			if !ok {
				errs = append(errs, unknown("claim id", val, reg.IDs()))
				continue
			}
			var applies []string
			for _, md := range mode.All() {
				if c.AppliesTo(md) {
					applies = append(applies, string(md))
				}
			}
			if !slices.ContainsFunc(modes, c.AppliesTo) {
				errs = append(errs, fmt.Sprintf("claim %q applies to -mode=%s, not to the selected -mode=%s", val, strings.Join(applies, ","), mode.Join(modes, ",")))
			}
		case "mode":
			var names []string
			for _, md := range mode.All() {
				names = append(names, string(md))
			}
			if !slices.Contains(names, val) {
				errs = append(errs, unknown("mode", val, names))
			}
		case "area":
			if !slices.Contains(allAreas, val) {
				errs = append(errs, unknown("area", val, allAreas))
			}
		}
	}
	chosen, err := Selected(planned, sel)
	if err != nil {
		return err
	}
	if len(chosen) == 0 {
		var by []string
		if sel.LabelFilter != "" {
			by = append(by, fmt.Sprintf("-ginkgo.label-filter=%q", sel.LabelFilter))
		}
		for _, f := range sel.Focus {
			by = append(by, fmt.Sprintf("-ginkgo.focus=%q", f))
		}
		for _, s := range sel.Skip {
			by = append(by, fmt.Sprintf("-ginkgo.skip=%q", s))
		}
		what := "no spec is planned"
		if len(by) > 0 {
			what = fmt.Sprintf("%s match none of the %d specs planned", strings.Join(by, " and "), len(planned))
		}
		errs = append(errs, fmt.Sprintf("%s for -mode=%s, so the run would measure nothing; list them with -ginkgo.dry-run -ginkgo.v (areas: %s)", what, mode.Join(modes, ","), strings.Join(areas, ", ")))
	}
	if len(errs) > 0 {
		return fmt.Errorf("selection:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// Selected are the planned specs the selection runs, matched as Ginkgo
// matches them (its label filter, focus and skip expressions).
func Selected(planned []Planned, sel Selection) ([]Planned, error) {
	var filter types.LabelFilter
	if sel.LabelFilter != "" {
		f, err := types.ParseLabelFilter(sel.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("-ginkgo.label-filter=%q: %v", sel.LabelFilter, err)
		}
		filter = f
	}
	focus, err := anyOf(sel.Focus)
	if err != nil {
		return nil, fmt.Errorf("-ginkgo.focus: %v", err)
	}
	skip, err := anyOf(sel.Skip)
	if err != nil {
		return nil, fmt.Errorf("-ginkgo.skip: %v", err)
	}
	var out []Planned
	for _, p := range planned {
		text := sel.Description + " " + p.Def.Area + " " + p.Name()
		if filter != nil && !filter(p.Labels()) {
			continue
		}
		if focus != nil && !focus.MatchString(text) {
			continue
		}
		if skip != nil && skip.MatchString(text) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Needing names ("claim [mode]") the specs among ps that declare the need
// named need (spec.Need.Name).
func Needing(ps []Planned, need string) []string {
	var out []string
	for _, p := range ps {
		for _, n := range p.Def.Needs {
			if n.Name == need {
				out = append(out, fmt.Sprintf("%s [%s]", p.Claim.ID, p.Mode))
				break
			}
		}
	}
	return out
}

func unknown(what, val string, known []string) string {
	s := fmt.Sprintf("%s %q is not known", what, val)
	if near := closest.Names(val, known, 3); len(near) > 0 {
		s += "; closest: " + strings.Join(near, ", ")
	}
	return s
}

func anyOf(exprs []string) (*regexp.Regexp, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	return regexp.Compile(strings.Join(exprs, "|"))
}

func plannedAreas(planned []Planned) []string {
	var out []string
	for _, p := range planned {
		if !slices.Contains(out, p.Def.Area) {
			out = append(out, p.Def.Area)
		}
	}
	return out
}
