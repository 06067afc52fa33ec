package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/meshclaims/meshclaims"
	"github.com/meshclaims/meshclaims/framework/claims"
)

// parseArgs parses a subcommand's flags wherever they stand among its
// positional arguments (`report DIR --complete` as `report --complete DIR`;
// after `--` everything is positional) and returns the positional ones.
// The exit code is -1 to go on, 0 after -h/--help (the usage printed on
// stdout), 2 on a bad flag (named, with the usage, on stderr).
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int) {
	var pos []string
	for {
		var msg bytes.Buffer
		fs.SetOutput(&msg)
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(msg.Bytes())
			return nil, 0
		}
		if err != nil {
			stderr.Write(msg.Bytes())
			return nil, 2
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), -1
		}
		if len(rest) == 0 {
			return pos, -1
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet is a subcommand's flag set; its usage is the usage line and
// the flags' defaults.
func newFlagSet(name, usageLine string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: meshclaims %s %s\n", name, usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// fileUsage is the --file flag's help, shared by claims and report.
const fileUsage = "claims registry `file` (default: the registry built into this binary, " + meshclaims.ClaimsFile + " of its version)"

// loadRegistry loads file, or the embedded registry when file is empty.
func loadRegistry(file string) (*claims.Registry, error) {
	if file == "" {
		return claims.Parse(meshclaims.ClaimsYAML, meshclaims.ClaimsFile)
	}
	return claims.Load(file)
}
