package suiteflags

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// global stands for flag.CommandLine after imports: go test's, Ginkgo's and
// a library's flags, fortio-style -timeout among them.
func global() (*flag.FlagSet, *time.Duration, *time.Duration) {
	g := flag.NewFlagSet("e2e.test", flag.ContinueOnError)
	testTimeout := g.Duration("test.timeout", 0, "panic after d")
	g.String("ginkgo.label-filter", "", "labels")
	fortioTimeout := g.Duration("timeout", 3*time.Second, "Connection and read timeout value (for HTTP)")
	g.Bool("k", false, "Do not verify certs")
	return g, testTimeout, fortioTimeout
}

func TestIsolate(t *testing.T) {
	g, testTimeout, fortioTimeout := global()
	ours := flag.NewFlagSet("ours", flag.ContinueOnError)
	mode := ours.String("mode", "ambient-l4", "modes to test")
	fs := Isolate(g, ours)
	if !slices.Equal(fs.Dropped, []string{"k", "timeout"}) {
		t.Errorf("dropped %v", fs.Dropped)
	}
	if err := fs.Parse([]string{"-mode=none", "-timeout", "8h", "-ginkgo.label-filter=claim:x"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if *mode != "none" {
		t.Errorf("-mode = %q", *mode)
	}
	// -timeout is the run's limit, never the library's HTTP timeout.
	if *testTimeout != 8*time.Hour || *fortioTimeout != 3*time.Second {
		t.Errorf("-timeout 8h set test.timeout %s and the library's timeout %s", *testTimeout, *fortioTimeout)
	}
	if v := g.Lookup("ginkgo.label-filter").Value.String(); v != "claim:x" {
		t.Errorf("ginkgo flag not bound: %q", v)
	}
	// The library's other flags are refused by name (the negative control:
	// on the global set, -k parses).
	if err := g.Parse([]string{"-k"}); err != nil {
		t.Fatalf("control: %v", err)
	}
	err := fs.Parse([]string{"-k"}, io.Discard)
	if err == nil || err.Error() != "flag provided but not defined: -k (a flag a linked library, fortio, registers; not one of the suite's); e2e.test -h lists the flags" {
		t.Errorf("-k: %v", err)
	}
	if err := fs.Parse([]string{"-nosuch"}, io.Discard); err == nil || strings.Contains(err.Error(), "fortio") {
		t.Errorf("-nosuch: %v", err)
	}
	var help bytes.Buffer
	if err := fs.Parse([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "The suite's flags:") {
		t.Errorf("-h: %v\n%s", err, help.String())
	}
}

func TestUsageListsTheSuiteFirst(t *testing.T) {
	g, _, _ := global()
	ours := flag.NewFlagSet("ours", flag.ContinueOnError)
	ours.String("mode", "ambient-l4", "modes to test")
	fs := Isolate(g, ours)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Usage()
	s := out.String()
	if !strings.Contains(s, "-mode string") || !strings.Contains(s, "-ginkgo.label-filter") || !strings.Contains(s, "-test.timeout") {
		t.Fatalf("usage:\n%s", s)
	}
	if strings.Index(s, "-mode") > strings.Index(s, "-ginkgo.label-filter") {
		t.Errorf("the suite's flags are not first:\n%s", s)
	}
	if strings.Contains(s, "Do not verify certs") || strings.Contains(s, "for HTTP") {
		t.Errorf("usage lists a dropped flag:\n%s", s)
	}
}

// Under go test the binary is a temporary file go test deletes: the hint
// names the go test command instead. A binary of one's own is named as run.
func TestHelpHintUnderGoTest(t *testing.T) {
	for name, want := range map[string]string{
		filepath.Join(os.TempDir(), "go-build3920192", "b001", "e2e.test"): "go test ./e2e -args -h lists the flags",
		"./e2e.test": "./e2e.test -h lists the flags",
	} {
		g := flag.NewFlagSet(name, flag.ContinueOnError)
		fs := Isolate(g, flag.NewFlagSet("ours", flag.ContinueOnError))
		err := fs.Parse([]string{"-nosuch"}, io.Discard)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %v; want it to end %q", name, err, want)
		}
		var help bytes.Buffer
		if err := fs.Parse([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) {
			t.Fatal(err)
		}
		if strings.Contains(help.String(), "go-build") {
			t.Errorf("%s: the usage names the temporary binary:\n%s", name, help.String())
		}
	}
}
