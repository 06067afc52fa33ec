// Package suiteflags gives the e2e binary a command line of its own. Go
// libraries may register flags on flag.CommandLine when merely imported:
// fortio's bincommon (linked in through its REST API) adds -timeout (an HTTP
// timeout), -k, -L, -H, -payload and some twenty more, so `e2e.test -timeout
// 8h` would silently set fortio's HTTP timeout and `-h` would list them all
// beside the suite's. Isolate keeps the suite's own flags, Ginkgo's
// (-ginkgo.*) and go test's (-test.*), and nothing else: any other flag is
// refused by name like any unknown flag.
package suiteflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// CommandLine is the binary's own flag set.
type CommandLine struct {
	*flag.FlagSet
	// Dropped are the flags libraries registered that the set leaves out.
	Dropped []string
}

// Isolate returns a flag set holding ours, and the -ginkgo.* and -test.*
// flags of global (bound to the same values, so Ginkgo and testing read
// them as before), plus -timeout as another name for -test.timeout (go
// test's -timeout, for a binary run directly). Dropped are the names of
// global's other flags, none of which a user can then set. The usage lists
// ours first, then the others by name.
func Isolate(global, ours *flag.FlagSet) *CommandLine {
	fs := flag.NewFlagSet(global.Name(), flag.ContinueOnError)
	ours.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	var ginkgo, test, dropped []string
	global.VisitAll(func(f *flag.Flag) {
		switch {
		case ours.Lookup(f.Name) != nil:
		case strings.HasPrefix(f.Name, "ginkgo."):
			fs.Var(f.Value, f.Name, f.Usage)
			ginkgo = append(ginkgo, f.Name)
		case strings.HasPrefix(f.Name, "test."):
			fs.Var(f.Value, f.Name, f.Usage)
			test = append(test, f.Name)
		default:
			dropped = append(dropped, f.Name)
		}
	})
	if t := global.Lookup("test.timeout"); t != nil && ours.Lookup("timeout") == nil {
		fs.Var(alias{t.Value}, "timeout", timeoutUsage)
	}
	fs.Usage = func() { usage(fs.Output(), fs.Name(), ours, ginkgo, test) }
	sort.Strings(dropped)
	return &CommandLine{FlagSet: fs, Dropped: dropped}
}

// Parse parses args. -h or -help prints the usage on stdout and returns
// flag.ErrHelp (exit 0); any other error is one line naming the flag, and
// says so when a library, not the suite, defines it elsewhere.
func (c *CommandLine) Parse(args []string, stdout io.Writer) error {
	var out strings.Builder
	c.SetOutput(&out)
	err := c.FlagSet.Parse(args)
	c.SetOutput(stdout)
	if errors.Is(err, flag.ErrHelp) {
		c.Usage()
		return err
	}
	if err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok && slices.Contains(c.Dropped, name) {
			msg += " (a flag a linked library, fortio, registers; not one of the suite's)"
		}
		return fmt.Errorf("%s; %s lists the flags", msg, helpCommand(c.Name()))
	}
	return nil
}

const timeoutUsage = "the same as -test.timeout (go test's -timeout): the run's time limit, e.g. 8h"

// alias sets another flag's value.
type alias struct{ flag.Value }

// helpCommand is how to list the flags of the binary run as name: go test
// runs a binary it builds in a temporary directory and deletes afterwards,
// whose path would be no use to anyone; a binary of one's own (go test -c)
// is named as run.
func helpCommand(name string) string {
	if underGoTest(name) {
		return "go test ./e2e -args -h"
	}
	return name + " -h"
}

// underGoTest says whether name, a binary's os.Args[0], is one go test
// built: a *.test file in a go-build directory of the temporary directory.
func underGoTest(name string) bool {
	return strings.HasSuffix(name, ".test") && strings.Contains(filepath.ToSlash(name), "/go-build")
}

func usage(w io.Writer, name string, ours *flag.FlagSet, ginkgo, test []string) {
	if underGoTest(name) {
		fmt.Fprintf(w, "Usage: go test ./e2e [go test flags] [flags]   (this help: go test ./e2e -args -h)\n\nThe suite's flags:\n")
	} else {
		fmt.Fprintf(w, "Usage: %s [flags]   (or: go test ./e2e [go test flags] [flags])\n\nThe suite's flags:\n", name)
	}
	o := ours.Output()
	ours.SetOutput(w)
	ours.PrintDefaults()
	ours.SetOutput(o)
	fmt.Fprintf(w, "  -timeout duration\n    \t%s\n", timeoutUsage)
	fmt.Fprintf(w, "\nGinkgo's flags (https://onsi.github.io/ginkgo/#ginkgo-cli-overview), e.g. -ginkgo.label-filter='claim:latency.percentiles', -ginkgo.dry-run -ginkgo.v:\n  %s\n", wrap(ginkgo))
	fmt.Fprintf(w, "\ngo test's flags (go help testflag):\n  %s\n", wrap(test))
}

// wrap lists flag names as -a -b -c, about 100 characters a line.
func wrap(names []string) string {
	var b strings.Builder
	n := 0
	for i, s := range names {
		if i > 0 {
			if n+len(s) > 96 {
				b.WriteString("\n  ")
				n = 0
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString("-" + s)
		n += len(s) + 2
	}
	return b.String()
}
