package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Env is what the suite's set-up prepared, shared by every spec. The e2e
// package fills it in its before-all.
type Env struct {
	Config   *config.Config
	Registry *claims.Registry
	Results  *report.Dir
	// Cluster is the suite's cluster handle (set by the set-up; nil in dry
	// runs and in tests of pure measure logic).
	Cluster *Cluster
	// Where says where measurements come from, for every record.
	Where string
	// Proxy says which proxy and istiod settings a measurement through the
	// proxyv2 image ran with (report.ProxyRan.Summary); empty without Istio.
	Proxy string
	// WaypointProxy is Proxy for ambient-l7 measurements: with the
	// waypoint's adaptations and what it lacks where the proxy is upstream
	// Envoy (report.ProxyRan.SummaryFor); empty means Proxy.
	WaypointProxy string
	// NoSidecarHBONE says why this run's sidecars accept no HBONE, where
	// they do not (upstream Envoy: istio.UpstreamEnvoyIstiodValues); empty
	// under Istio's defaults, where the ambient profile's sidecars do.
	NoSidecarHBONE string
	// Selected are the specs the run's selection (-ginkgo.label-filter,
	// focus, skip) runs; nil means every planned spec. Loads that run at
	// once (-concurrent-modes) are started only for modes whose selected
	// specs read them.
	Selected []Planned
	// Note adds a sentence to the run's environment notes, which the
	// report prints above the tables (the interference check of
	// -concurrent-modes); nil in dry runs and tests.
	Note func(string)
	// Out receives the specs' progress lines as they happen (the
	// console); nil means GinkgoWriter alone, which Ginkgo holds back
	// until the spec ends unless -ginkgo.v.
	Out io.Writer
}

// WhereFor is Where for a record of mode m: with the proxy beside it when
// m's traffic passes through proxyv2 (report.ThroughProxy).
func (e *Env) WhereFor(m mode.Mode) string {
	if e.Proxy == "" || !report.ThroughProxy(m) {
		return e.Where
	}
	if m == mode.AmbientL7 && e.WaypointProxy != "" {
		return e.Where + "; " + e.WaypointProxy
	}
	return e.Where + "; " + e.Proxy
}

// Cluster is what the suite's set-up hands every spec: the API clients of
// the cluster under test, whichever provider made it.
type Cluster struct {
	Kube    *kube.Cluster
	Applier *apply.Applier
	// Options are the fixture options the set-up deployed with; specs that
	// re-apply a base object (hardening) use the same ones.
	Options fixtures.Options
	// NodesShareHost says the nodes are containers on one host (kind), so
	// the cluster's cores are one node's, not the sum (cluster.Facts).
	NodesShareHost bool
}

// Run is one spec's view: its claim, its mode and the shared Env.
type Run struct {
	Claim *claims.Claim
	Mode  mode.Mode
	Env   *Env
	// Out receives progress lines (Env.Out or GinkgoWriter in the suite).
	Out   io.Writer
	start time.Time
	raw   []string
	setup string
	where string
	evid  []string
	waits []converge.Wait
	// judged is the verdict once the spec judged its measurement (nil
	// before, and for a spec whose measurement itself failed).
	judged *verdict.Verdict
	// touched are namespaces besides the mode's that the spec used (a
	// comparison spec's other mode): evidence is collected from them too.
	touched []string
	names   map[string]int
	loads   []loadplan.LoadRan
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

// Judged is the spec's verdict, or nil if it did not get as far as judging.
func (r *Run) Judged() *verdict.Verdict { return r.judged }

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

// SetWhere states where the measurement ran when that is not the suite's
// cluster (conntrack.table-full: a disposable VM of its own kernel): the
// record names it instead of the cluster, which took no part.
func (r *Run) SetWhere(format string, a ...any) { r.where = fmt.Sprintf(format, a...) }

// Where is where the record says the measurement ran: SetWhere's, or the
// suite's cluster (Env.WhereFor).
func (r *Run) Where() string {
	if r.where != "" || r.Env == nil {
		return r.where
	}
	return r.Env.WhereFor(r.Mode)
}

// AddEvidence lists a failure-evidence path (relative to the results dir).
func (r *Run) AddEvidence(path string) { r.evid = append(r.evid, path) }

// AddWait records one converging (or bounded) wait the spec made before
// measuring: what it waited for and how long it took.
func (r *Run) AddWait(w converge.Wait) {
	r.waits = append(r.waits, w)
	r.Logf("waited %s for %s (%d polls)", w.Took.Round(time.Millisecond), w.For, w.Polls)
}

// Waits are the waits AddWait recorded, for the measured record.
func (r *Run) Waits() []converge.Wait { return r.waits }

// Touch records a namespace the spec used besides its mode's own (a
// comparison spec's second mode, the no-mesh baseline).
func (r *Run) Touch(ns string) {
	if ns == r.Namespace() || slices.Contains(r.touched, ns) {
		return
	}
	r.touched = append(r.touched, ns)
}

// Namespaces is every namespace the spec touched, its mode's first.
func (r *Run) Namespaces() []string { return append([]string{r.Namespace()}, r.touched...) }

// Raw, Setup and Evidence are what the record will carry.
func (r *Run) Raw() []string      { return r.raw }
func (r *Run) Setup() string      { return r.setup }
func (r *Run) Evidence() []string { return r.evid }

// Reuse lists raw results, loads and the setup of a measurement another
// spec of the run made and this one shares (GUIDE judged several claims on
// one load); the loads are marked Shared.
func (r *Run) Reuse(raw []string, loads []loadplan.LoadRan, setup string) {
	r.raw = append(r.raw, raw...)
	for _, l := range loads {
		l.Shared = true
		r.loads = append(r.loads, l)
	}
	if r.setup == "" {
		r.setup = setup
	}
}
