package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func runClaims(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("claims", "[--file F] [--validate] [--mode M] [--json]")
	file := fs.String("file", "", fileUsage)
	validate := fs.Bool("validate", false, "only validate the registry; exit 1 with located errors if broken")
	modeFlag := fs.String("mode", "all", "list only claims for these modes ("+mode.Accepted()+")")
	asJSON := fs.Bool("json", false, "print the claims as JSON")
	pos, code := parseArgs(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "claims: unexpected argument %q: claims takes flags only (meshclaims claims -h)\n", pos[0])
		return 2
	}
	modes, err := mode.Parse(*modeFlag)
	if err != nil {
		fmt.Fprintln(stderr, "claims:", err)
		return 2
	}
	reg, err := loadRegistry(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *validate {
		fmt.Fprintf(stdout, "%s: %d claims, valid\n", reg.File, len(reg.Claims))
		return 0
	}
	var list []*claims.Claim
	for _, c := range reg.Claims {
		for _, m := range modes {
			if c.AppliesTo(m) {
				list = append(list, c)
				break
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	// One block per claim: a table cannot hold the titles and documented
	// values, which are what a person picking a claim needs.
	for i, c := range list {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s: %s\n", c.ID, c.Title)
		fmt.Fprintf(stdout, "  %s, metric %s; source %s %s\n", c.Kind, c.Metric, c.Source.Doc, c.Source.Section)
		for _, m := range c.Modes {
			if !slices.Contains(modes, m) {
				continue
			}
			fmt.Fprintf(stdout, "  %-11s documented %s\n", string(m)+":", verdict.DocumentedText(c, m))
		}
	}
	fmt.Fprintf(stdout, "\n%d claims for -mode %s (meshclaims claims --json for every field)\n", len(list), *modeFlag)
	return 0
}
