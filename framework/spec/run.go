package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// Env is what the suite's set-up prepared, shared by every spec. The e2e
// package fills it in its before-all; Cluster is whatever the provider gave
// (an interface, so framework/spec does not depend on a provider).
type Env struct {
	Config   *config.Config
	Registry *claims.Registry
	Results  *report.Dir
	// Cluster is the suite's cluster handle (set by e2e; nil in dry runs).
	Cluster any
	// Where says where measurements come from, for every record.
	Where string
	// Proxy says which proxy and istiod settings a measurement through the
	// proxyv2 image ran with (report.ProxyRan.Summary); empty without Istio.
	Proxy string
}

// WhereFor is Where for a record of mode m: with the proxy beside it when
// m's traffic passes through proxyv2 (report.ThroughProxy).
func (e *Env) WhereFor(m mode.Mode) string {
	if e.Proxy == "" || !report.ThroughProxy(m) {
		return e.Where
	}
	return e.Where + "; " + e.Proxy
}

// Run is one spec's view: its claim, its mode and the shared Env.
type Run struct {
	Claim *claims.Claim
	Mode  mode.Mode
	Env   *Env
	// Out receives progress lines (GinkgoWriter in the suite).
	Out   io.Writer
	start time.Time
	raw   []string
	setup string
	evid  []string
	names map[string]int
	// onCleanup registers an undo; Ginkgo's DeferCleanup inside a spec, a
	// list run by Close elsewhere (tests, tools).
	onCleanup func(func(context.Context) error)
	undo      []func(context.Context) error
}

// NewRun makes a Run; exported for tests of measure functions.
func NewRun(c *claims.Claim, m mode.Mode, env *Env, out io.Writer) *Run {
	if out == nil {
		out = io.Discard
	}
	r := &Run{Claim: c, Mode: m, Env: env, Out: out, start: time.Now()}
	r.onCleanup = func(f func(context.Context) error) { r.undo = append(r.undo, f) }
	return r
}

// Defer registers f to undo something the spec changed (a policy applied, a
// Deployment hardened or scaled); it runs when the spec ends, pass or fail.
func (r *Run) Defer(f func(context.Context) error) { r.onCleanup(f) }

// Close runs the undos registered outside a Ginkgo spec, last first.
func (r *Run) Close(ctx context.Context) error {
	var errs []error
	for i := len(r.undo) - 1; i >= 0; i-- {
		errs = append(errs, r.undo[i](ctx))
	}
	r.undo = nil
	return errors.Join(errs...)
}

// Namespace is the mode's namespace.
func (r *Run) Namespace() string { return r.Mode.Namespace() }

// Logf prints a progress line prefixed with the claim, mode and elapsed time.
func (r *Run) Logf(format string, a ...any) {
	fmt.Fprintf(r.Out, "[%s %s +%s] %s\n", r.Claim.ID, r.Mode, time.Since(r.start).Round(time.Second), fmt.Sprintf(format, a...))
}

// SaveRaw keeps a raw result (fortio JSON) and the options that produced it
// in the results directory, and lists it in the spec's record.
func (r *Run) SaveRaw(name string, data []byte, options any) error {
	if r.Env == nil || r.Env.Results == nil {
		return nil
	}
	// A name used twice in one spec (stats before and after) gets a
	// suffix, so no raw result overwrites another.
	if r.names == nil {
		r.names = map[string]int{}
	}
	r.names[name]++
	if n := r.names[name]; n > 1 {
		name = fmt.Sprintf("%s-%d", name, n)
	}
	p, err := r.Env.Results.SaveRaw(report.Name(r.Claim.ID, string(r.Mode), name), data, options)
	if err != nil {
		return err
	}
	r.raw = append(r.raw, p)
	return nil
}

// SetSetup states what was actually run (after -duration-scale), for the report.
func (r *Run) SetSetup(format string, a ...any) { r.setup = fmt.Sprintf(format, a...) }

// AddEvidence lists a failure-evidence path (relative to the results dir).
func (r *Run) AddEvidence(path string) { r.evid = append(r.evid, path) }

// Raw, Setup and Evidence are what the record will carry.
func (r *Run) Raw() []string      { return r.raw }
func (r *Run) Setup() string      { return r.setup }
func (r *Run) Evidence() []string { return r.evid }

// Reuse lists raw results and the setup of a measurement another spec of the
// run made and this one shares (GUIDE judged several claims on one load).
func (r *Run) Reuse(raw []string, setup string) {
	r.raw = append(r.raw, raw...)
	if r.setup == "" {
		r.setup = setup
	}
}
