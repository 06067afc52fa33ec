// Package config holds everything a run is told: flags, their validation and
// every timeout in one struct (Gateway API conformance's habit), so a slow
// cluster is tuned in one place and no spec hides its own sleep.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/meshclaims/meshclaims/framework/config/timeouts"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/requirements"
)

// Providers a run can use.
var Providers = []string{"kind", "existing", "local"}

// IstioInstall choices.
var IstioInstalls = []string{"helm", "skip"}

// FailOn choices: what makes a claim's spec fail.
const (
	// FailOnNotReproduced fails a spec unless its claim is reproduced (or
	// recorded, where nothing is documented): the qualification gate.
	FailOnNotReproduced = "not-reproduced"
	// FailOnError fails a spec only when the measurement could not be made
	// or a precondition is missing; verdicts are judged and reported but do
	// not gate. For hosts whose absolute numbers are not what the claims
	// describe (a CI runner's single-node cluster).
	FailOnError = "error"
	// FailOnRequirement fails a spec when its claim is a requirement (a
	// pass/fail property: plaintext blocked, 403 for the wrong principal, 200
	// in the mesh) that was not reproduced, as well as on errors; a
	// measurement against GUIDE's EKS numbers is judged and reported, not
	// gated. What a CI gate on a slow runner can still hold to.
	FailOnRequirement = "requirement"
)

// FailOns lists the -fail-on values.
var FailOns = []string{FailOnNotReproduced, FailOnRequirement, FailOnError}

// Timeouts are every wait of the suite (see package timeouts, which holds
// them apart from config so that packages config depends on can use them).
type Timeouts = timeouts.Timeouts

// DefaultTimeouts returns the defaults.
func DefaultTimeouts() Timeouts { return timeouts.Default() }

// Config is one run's configuration.
type Config struct {
	ModesFlag     string
	Modes         []mode.Mode
	Provider      string
	Kubeconfig    string
	Context       string
	ClusterName   string
	KindNodeImage string // "" = framework/cluster.DefaultNodeImage (Kubernetes 1.36)
	KindConfig    string // "" = testdata/kind/cluster.yaml
	// KindKubeProxyMode is the kube-proxy mode of a kind cluster the run
	// creates ("" = the shipped config's iptables).
	KindKubeProxyMode string
	// NetPolEnableCommand is a sh command line that turns the cluster's
	// NetworkPolicy enforcement on during the run ("" = none): the claim
	// that enforcement is not retroactive needs pods that ran before it.
	NetPolEnableCommand string
	// NetPolEnforcer names the cluster's NetworkPolicy enforcer where the
	// read-only lookup (framework/netpolenforcer) cannot find it: one that
	// runs outside any DaemonSet or is not among the known ones
	// (-provider=existing only; "" = look it up).
	NetPolEnforcer string
	ReuseCluster   bool
	KeepCluster    bool
	IstioVersion   string
	IstioInstall   string
	// IstioRevision installs Istio as that revision beside an Istio the
	// cluster already runs (-istio-revision; sidecar mode); "" = none.
	IstioRevision string
	IstioCharts   string // local chart directory; empty = Istio's chart repository
	// IstioValues is the per-chart Helm values file after Validate: the
	// -istio-values flag, or the provider's default (DefaultIstioValues);
	// empty = the charts' own defaults.
	IstioValues string
	ClaimsFile  string
	ResultsDir  string // the run's directory: <results-root>/<run id>
	ResultsRoot string
	RunID       string
	// Overwrite lets a run replace an earlier run's results directory
	// (same -results and -run-id); without it that run is refused.
	Overwrite bool
	// Resume is -resume: the results directory of an interrupted run that
	// this one continues (package resume); Validate makes it ResultsDir.
	Resume        string
	Repeats       int
	DurationScale float64
	Registry      string // push images here (EKS); empty = load into nodes
	FailOn        string // FailOnNotReproduced, FailOnRequirement or FailOnError
	// EvidenceMax caps how many specs of a run collect evidence (each
	// verdict other than reproduced or recorded collects some), so a run
	// with many failures stays small; 0 collects none.
	EvidenceMax int
	Timeouts    Timeouts
	// Sequential lets a load stop once its verdict can no longer change
	// (framework/sequential); false runs every load for its full duration.
	Sequential bool
	// Plan prints the plan (each spec's loads and durations, the costs an
	// earlier run measured, the estimated total) and runs nothing.
	Plan bool
	// PlanCosts is the results directory whose measured costs the plan
	// reads, or several comma-separated (loadplan.MergeCosts); empty = the
	// earlier run of the same provider under ResultsRoot that suits the
	// plan best (report.LatestCosts), or without one of the plan's scale
	// the project's records (report.ShippedCosts).
	PlanCosts string
	// ConcurrentModes runs the selected modes' rate loads (the T1 rollout
	// runs) at once, each in its own namespace against its own echo, with
	// an interference check in the same run (framework/interference);
	// latency loads always run alone. Off: every load runs alone.
	ConcurrentModes bool

	// Istio's images (images.go): registry prefix and tag for the charts
	// (empty: docker.io/istio and the -istio-version), and a directory of
	// image archives to load into the nodes (or push to Registry).
	IstioHub      string
	IstioTag      string
	ImageArchives string
	// RegistryCA is a PEM file of the CA that signed -image-registry's
	// certificate, when the system does not trust it (a private registry).
	RegistryCA string

	// RequirementsFile is -requirements: the tiers' requirements the run's
	// modes are set against (package requirements); Requirements is the
	// file as Validate read it, nil without one.
	RequirementsFile string
	Requirements     *requirements.File

	sharedKubeconfig *flag.Flag
}

var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Register defines the suite's flags on fs and returns the config they fill.
func Register(fs *flag.FlagSet) *Config {
	c := &Config{Timeouts: DefaultTimeouts()}
	fs.StringVar(&c.ModesFlag, "mode", "ambient-l4", "modes to test: "+mode.Accepted())
	fs.StringVar(&c.Provider, "provider", "kind", "cluster provider: "+strings.Join(Providers, ", "))
	// controller-runtime registers -kubeconfig on the command line itself
	// when linked in; share that flag instead of panicking on a redefinition.
	if f := fs.Lookup("kubeconfig"); f != nil {
		c.sharedKubeconfig = f
	} else {
		fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig for -provider=existing (default $KUBECONFIG or ~/.kube/config)")
	}
	fs.StringVar(&c.Context, "context", "", "kubeconfig context for -provider=existing (default: its current context, pinned at start)")
	fs.StringVar(&c.ClusterName, "cluster-name", "meshclaims", "kind or local cluster name")
	fs.StringVar(&c.KindNodeImage, "kind-node-image", "", "node image for every kind node, e.g. kindest/node:v1.36.4@sha256:... (default: the pinned Kubernetes 1.36 image of kind v0.33.0's release notes, framework/cluster.DefaultNodeImage); the report records the image that ran")
	fs.StringVar(&c.KindConfig, "kind-config", "", "kind cluster config file (default testdata/kind/cluster.yaml: 1 control plane, 3 workers; testdata/kind/podman.yaml: 1 control plane, 2 workers, for cgroup v1 hosts and the node image of make kind-node-image)")
	fs.StringVar(&c.KindKubeProxyMode, "kind-kube-proxy-mode", "", "kube-proxy mode of the kind cluster the run creates: iptables, ipvs or nftables (default: the shipped testdata/kind/cluster.yaml's iptables); HYBRID measured a new Service's time per mode. A reused cluster keeps the mode it was created with: the kube-proxy specs read the mode from the cluster")
	fs.StringVar(&c.NetPolEnforcer, "netpol-enforcer", "", "-provider=existing only: the cluster's NetworkPolicy enforcer, named when the read-only look-up of its DaemonSets cannot find it (one outside any DaemonSet, e.g. kube-router as a host process, or one the suite does not know); the netpol preflight's controls still prove it enforces. Without it a run whose specs need NetworkPolicy stops before any write when no known enforcer is found")
	fs.StringVar(&c.NetPolEnableCommand, "netpol-enable-command", "", "-provider=existing only: a sh command line that turns the VPC CNI's NetworkPolicy enforcement on, run by netpol.enforcement-not-retroactive while its pods run, e.g. "+
		`aws eks update-addon --cluster-name NAME --addon-name vpc-cni --configuration-values '{"enableNetworkPolicy":"true"}' --resolve-conflicts OVERWRITE && aws eks wait addon-active --cluster-name NAME --addon-name vpc-cni`+
		"; the suite then waits until kube-system/aws-node runs its agent with --enable-network-policy=true on every node (-netpol-enable-timeout). Without it that claim is inconclusive")
	fs.DurationVar(&c.Timeouts.NetPolEnable, "netpol-enable-timeout", c.Timeouts.NetPolEnable, "limit for -netpol-enable-command and the aws-node rollout after it")
	fs.BoolVar(&c.ReuseCluster, "reuse-cluster", false, "reuse a cluster of that name if it exists")
	fs.BoolVar(&c.KeepCluster, "keep-cluster", false, "keep the cluster (and the suite's namespaces) after the run")
	fs.StringVar(&c.IstioVersion, "istio-version", "1.30.2", "Istio version to install (GUIDE measured 1.30.2)")
	fs.StringVar(&c.IstioInstall, "istio-install", "helm", "how to install Istio: "+strings.Join(IstioInstalls, ", ")+
		"; skip qualifies the Istio the cluster already runs, installing nothing")
	fs.StringVar(&c.IstioRevision, "istio-revision", "", "on a cluster that already runs an Istio (sidecar mode): install the qualified release as this revision "+
		"beside it (istiod-NAME, namespaces labelled istio.io/rev=NAME), leaving the running Istio untouched, and remove it after the run. "+
		"Without it, a run that finds an Istio it did not install stops before its first write")
	fs.StringVar(&c.IstioCharts, "istio-charts", "", "directory holding Istio's charts (base, istiod, cni, ztunnel); default: Istio's chart repository")
	fs.StringVar(&c.IstioValues, "istio-values", "", "per-chart Helm values file (keys base, istiod, cni, ztunnel); "+
		"default for -provider=kind and local: testdata/istio/values.yaml (one istiod requesting 100m CPU and 256Mi instead of the chart's 500m and 2Gi), "+
		"for existing: none (the charts' defaults; EKS on arm64: testdata/istio/values-eks-arm64.yaml); "+IstioValuesNone+" = the charts' defaults")
	fs.StringVar(&c.ClaimsFile, "claims", "", "claims registry (default: testdata/claims.yaml of this repository)")
	fs.StringVar(&c.ResultsRoot, "results", "", "results root; each run writes <results>/<run id>/ (default: results/ of this repository)")
	fs.StringVar(&c.RunID, "run-id", "", "run id (default: UTC time, e.g. 20261129-214800); a run id whose directory already holds results is refused unless -overwrite")
	fs.BoolVar(&c.Overwrite, "overwrite", false, "replace the results of an earlier run with the same -results and -run-id (deleted before the run starts)")
	fs.IntVar(&c.Repeats, "repeats", 1, "repeat each measurement this many times (REVIEW: report spread)")
	fs.Float64Var(&c.DurationScale, "duration-scale", 1, "scale every documented duration, e.g. 0.1 for a quick run (stated in the report)")
	fs.StringVar(&c.Registry, "image-registry", "", "push the workload image (and -image-archives) to this registry instead of loading them into nodes (EKS: the ECR host); credentials from $DOCKER_CONFIG/config.json or ~/.docker/config.json and its credential helpers, checked before any cluster write")
	fs.StringVar(&c.FailOn, "fail-on", FailOnNotReproduced, "what fails a spec: "+FailOnNotReproduced+" (any verdict but reproduced/recorded), "+FailOnRequirement+" (a requirement claim not reproduced, or an error; measurements reported) or "+FailOnError+" (only a measurement that could not be made or a missing precondition; verdicts still reported)")
	fs.IntVar(&c.EvidenceMax, "evidence-max", 20, "collect evidence (events, logs, proxy and istiod debug dumps) for at most this many specs whose verdict is not reproduced; 0 = none")
	fs.DurationVar(&c.Timeouts.ConfigPushed, "config-pushed-timeout", c.Timeouts.ConfigPushed, "limit for the proxies' admin dumps (or kube-router's rules) to carry an applied policy")
	fs.DurationVar(&c.Timeouts.FilterChainDrain, "filter-chain-drain-timeout", c.Timeouts.FilterChainDrain, "limit, after an Envoy carries an AuthorizationPolicy, for its filter chains from before it to drain (must exceed Istio's drainDuration, 45 s by default)")
	fs.DurationVar(&c.Timeouts.RolloutComplete, "rollout-timeout", c.Timeouts.RolloutComplete, "limit for one rollout to complete (GUIDE: 60s)")
	fs.DurationVar(&c.Timeouts.WorkloadsReady, "ready-timeout", c.Timeouts.WorkloadsReady, "limit for a mode's workloads to become ready")
	fs.BoolVar(&c.Sequential, "sequential", true, "stop a rollout load as soon as its verdict can no longer change (anytime-valid confidence sequences over restart cycles, at least 20 cycles; only loads every reader judges on their rates against bands); false runs the source's fixed durations")
	fs.BoolVar(&c.Plan, "plan", false, "print the plan (per mode and spec the loads and their durations at -duration-scale, the set-up costs an earlier run measured, the estimated total) and run nothing; dry runs print it too")
	fs.StringVar(&c.PlanCosts, "plan-costs", "", "results directory of an earlier run whose measured set-up and per-spec costs the plan uses, or several, comma-separated (each spec's cost from the first that measured it, the set-up the longest: for modes measured in separate runs); default: the earlier run of the same -provider under -results of the same -duration-scale that measured most of the planned specs, the newest among equals; without one of that scale, the project's records under testdata/ (the plan names them)")
	fs.BoolVar(&c.ConcurrentModes, "concurrent-modes", false, "run the selected modes' rollout loads (GUIDE T1, the same claim's same load and hardening) at once, each in its own namespace against its own echo with its own restart loop, and check in the same run that one mode's rates and P50 alongside the others match a reference run alone; latency loads (T5, latency.*, sidecar cost) still run alone. Needs two or more modes")
	fs.StringVar(&c.RequirementsFile, "requirements", "", "YAML file of workload tiers and what each needs (mTLS, L7 routing, NetworkPolicies as they are, at most a P50 overhead and a rollout error rate; testdata/requirements/): the report recommends per tier the modes that meet every requirement, and the run fails when a tier has none")
	registerImageFlags(fs, c)
	registerResumeFlag(fs, c)
	return c
}

// RunIDChars is what -run-id accepts: the run's results directory is named
// after it, so it holds no path separator and nothing a shell would expand.
var RunIDChars = regexp.MustCompile(`^[0-9A-Za-z._-]+$`)

// Validate checks every value and fills derived fields. Its errors name the
// flag, the bad value and what is accepted; it touches no cluster.
func (c *Config) Validate(repoRoot string, now time.Time) error {
	if c.sharedKubeconfig != nil && c.Kubeconfig == "" {
		c.Kubeconfig = c.sharedKubeconfig.Value.String()
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	modes, err := mode.Parse(c.ModesFlag)
	if err != nil {
		bad("-mode: %v", err)
	}
	c.Modes = modes
	if !contains(Providers, c.Provider) {
		bad("-provider=%q is not known; accepted: %s", c.Provider, strings.Join(Providers, ", "))
	}
	if !contains(IstioInstalls, c.IstioInstall) {
		bad("-istio-install=%q is not known; accepted: %s", c.IstioInstall, strings.Join(IstioInstalls, ", "))
	}
	if _, err := istio.ParseRevision(c.IstioRevision); err != nil {
		bad("%v", err)
	} else if c.IstioRevision != "" {
		if c.IstioInstall == string(istio.MethodSkip) {
			bad("-istio-revision=%q with -istio-install=skip: skip installs nothing, a revision installs istiod beside the running Istio; accepted: one of the two", c.IstioRevision)
		}
		for _, m := range c.Modes {
			if m.Ambient() {
				bad("-istio-revision=%q with -mode %s: a revision is for sidecar mode (ambient's ztunnel and istio-cni run one per node and cannot run beside another Istio's); accepted modes: none, sidecar", c.IstioRevision, m)
				break
			}
		}
	}
	if !contains(FailOns, c.FailOn) {
		bad("-fail-on=%q is not known; accepted: %s", c.FailOn, strings.Join(FailOns, ", "))
	}
	if c.EvidenceMax < 0 {
		bad("-evidence-max=%d is negative; accepted: 0 (no evidence) or more", c.EvidenceMax)
	}
	if c.Timeouts.ConfigPushed < c.Timeouts.ConvergePoll || c.Timeouts.ConvergePoll <= 0 || c.Timeouts.ConvergeTimes < 1 {
		bad("-config-pushed-timeout=%s must be at least the poll interval %s (and the wait needs >= 1 consecutive read, got %d)", c.Timeouts.ConfigPushed, c.Timeouts.ConvergePoll, c.Timeouts.ConvergeTimes)
	}
	if c.Timeouts.FilterChainDrain < c.Timeouts.ConvergePoll {
		bad("-filter-chain-drain-timeout=%s must be at least the poll interval %s (and above Istio's drainDuration, 45 s by default)", c.Timeouts.FilterChainDrain, c.Timeouts.ConvergePoll)
	}
	if !versionPattern.MatchString(c.IstioVersion) {
		bad("-istio-version=%q is not a version like 1.30.2", c.IstioVersion)
	}
	if !dnsLabel.MatchString(c.ClusterName) || len(c.ClusterName) > 40 {
		bad("-cluster-name=%q must be a DNS label (lowercase letters, digits, dashes; at most 40)", c.ClusterName)
	}
	if c.Repeats < 1 || c.Repeats > 100 {
		bad("-repeats=%d must be between 1 and 100", c.Repeats)
	}
	if c.DurationScale <= 0 || c.DurationScale > 10 {
		bad("-duration-scale=%g must be in (0, 10]", c.DurationScale)
	}
	if c.Provider != "existing" && (c.Kubeconfig != "" || c.Context != "") {
		bad("-kubeconfig and -context apply to -provider=existing only (got -provider=%s)", c.Provider)
	}
	if c.KindConfig != "" && c.Provider != "kind" {
		bad("-kind-config applies to -provider=kind only (got -provider=%s)", c.Provider)
	}
	if c.KindNodeImage != "" {
		if c.Provider != "kind" {
			bad("-kind-node-image applies to -provider=kind only (got -provider=%s)", c.Provider)
		} else if _, err := name.ParseReference(c.KindNodeImage); err != nil {
			bad("-kind-node-image=%q is not an image reference: %v; accepted: REPOSITORY[:TAG][@sha256:DIGEST], e.g. kindest/node:v1.36.4@sha256:<64 hex digits>", c.KindNodeImage, err)
		}
	}
	if c.KindKubeProxyMode != "" {
		if c.Provider != "kind" {
			bad("-kind-kube-proxy-mode applies to -provider=kind only (got -provider=%s)", c.Provider)
		} else if !slices.Contains([]string{"iptables", "ipvs", "nftables"}, c.KindKubeProxyMode) {
			bad("-kind-kube-proxy-mode=%q; accepted: iptables, ipvs, nftables (kind's none is refused: the suite installs no kube-proxy replacement, so no Service would answer)", c.KindKubeProxyMode)
		}
	}
	if c.ConcurrentModes && len(modes) < 2 && err == nil {
		bad("-concurrent-modes needs two or more modes to run at once, got -mode=%s; accepted: a comma list such as -mode=none,sidecar, or all", c.ModesFlag)
	}
	c.validateNetPolEnable(bad)
	if c.IstioCharts != "" {
		if st, err := os.Stat(c.IstioCharts); err != nil || !st.IsDir() {
			bad("-istio-charts=%q is not a directory", c.IstioCharts)
		}
	}
	if err := c.resolveIstioValues(repoRoot); err != nil {
		bad("%v", err)
	}
	if c.ClaimsFile == "" {
		c.ClaimsFile = filepath.Join(repoRoot, "testdata", "claims.yaml")
	}
	if _, err := os.Stat(c.ClaimsFile); err != nil {
		bad("-claims=%q: %v", c.ClaimsFile, err)
	}
	c.resolveResume(repoRoot, bad)
	if c.ResultsRoot == "" {
		c.ResultsRoot = filepath.Join(repoRoot, "results")
	}
	if c.RunID == "" {
		c.RunID = now.UTC().Format("20060102-150405")
	}
	if !dnsLabel.MatchString(c.RunID) && !RunIDChars.MatchString(c.RunID) {
		bad("-run-id=%q may hold only letters, digits, dot, dash and underscore", c.RunID)
	}
	c.ResultsDir = filepath.Join(c.ResultsRoot, c.RunID)
	c.validateImageFlags(bad)
	if c.RequirementsFile != "" {
		f, err := requirements.Load(c.RequirementsFile)
		if err != nil {
			bad("-requirements=%q: %s", c.RequirementsFile, strings.ReplaceAll(err.Error(), "\n", "\n    "))
		}
		c.Requirements = f
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid flags:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// ClaimResultsDir makes sure the run's results directory holds no earlier
// run, so a repeated -run-id cannot mix two runs' records or lose the first:
// a directory with anything in it is refused, naming it, unless -overwrite
// was given, in which case it is deleted here. Dry runs write no results and
// do not call it.
func (c *Config) ClaimResultsDir() error {
	entries, err := os.ReadDir(c.ResultsDir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("-results=%q -run-id=%q: %v", c.ResultsRoot, c.RunID, err)
	}
	if !c.Overwrite {
		return fmt.Errorf("-run-id=%q: %s already holds a run (%d entries, e.g. %s); choose another -run-id, or pass -overwrite to delete it and run again", c.RunID, c.ResultsDir, len(entries), entries[0].Name())
	}
	if err := os.RemoveAll(c.ResultsDir); err != nil {
		return fmt.Errorf("-overwrite: deleting %s: %v", c.ResultsDir, err)
	}
	return nil
}

// validateNetPolEnable checks -netpol-enable-command without running it:
// the provider it applies to, and its syntax as sh reads it (sh -n parses
// and executes nothing), so an unbalanced quote in the JSON fails before
// any cluster is touched rather than minutes into the run.
func (c *Config) validateNetPolEnable(bad func(string, ...any)) {
	if c.Timeouts.NetPolEnable <= 0 {
		bad("-netpol-enable-timeout=%s must be positive", c.Timeouts.NetPolEnable)
	}
	if c.NetPolEnforcer != "" && c.Provider != "existing" {
		bad("-netpol-enforcer applies to -provider=existing only (got -provider=%s): kind's and the local provider's clusters are the suite's own, with kube-router enforcing", c.Provider)
	}
	if c.NetPolEnforcer != "" && strings.TrimSpace(c.NetPolEnforcer) == "" {
		bad("-netpol-enforcer=%q is blank; accepted: the enforcer's name, e.g. kube-router", c.NetPolEnforcer)
	}
	if c.NetPolEnableCommand == "" {
		return
	}
	example := `aws eks update-addon --cluster-name NAME --addon-name vpc-cni --configuration-values '{"enableNetworkPolicy":"true"}'`
	if c.Provider != "existing" {
		bad("-netpol-enable-command applies to -provider=existing only (got -provider=%s): kind's and the local provider's CNI enforce NetworkPolicy from the start, with nothing to turn on", c.Provider)
		return
	}
	if strings.TrimSpace(c.NetPolEnableCommand) == "" {
		bad("-netpol-enable-command=%q is blank; accepted: one sh command line, e.g. %s", c.NetPolEnableCommand, example)
		return
	}
	out, err := exec.Command("sh", "-n", "-c", c.NetPolEnableCommand).CombinedOutput()
	if err != nil {
		bad("-netpol-enable-command=%q is not a command line sh can parse (%v: %s); accepted: one sh command line, e.g. %s", c.NetPolEnableCommand, err, strings.TrimSpace(string(out)), example)
	}
}

// IstioValuesNone is the -istio-values value that passes no values file.
const IstioValuesNone = "none"

// DefaultIstioValues is the values file a provider gets when -istio-values
// is not given, relative to the repository root; empty = none. A kind or
// local cluster is one laptop or CI runner: the istiod chart's own request
// (500m CPU, 2Gi) would not schedule next to the workloads.
func DefaultIstioValues(provider string) string {
	switch provider {
	case "kind", "local":
		return filepath.Join("testdata", "istio", "values.yaml")
	}
	return ""
}

// resolveIstioValues applies the provider's default and reads the file with
// the installer's own parser, so a missing file, bad YAML or an unknown
// chart key fails here, before any cluster is touched.
func (c *Config) resolveIstioValues(repoRoot string) error {
	flagValue := c.IstioValues
	switch flagValue {
	case IstioValuesNone:
		c.IstioValues = ""
		return nil
	case "":
		def := DefaultIstioValues(c.Provider)
		if def == "" {
			return nil
		}
		c.IstioValues = filepath.Join(repoRoot, def)
	}
	if _, err := istio.LoadValuesFile(c.IstioValues); err != nil {
		if flagValue == "" {
			return fmt.Errorf("-istio-values (default for -provider=%s, %s): %v", c.Provider, c.IstioValues, err)
		}
		return fmt.Errorf("-istio-values=%q: %v; accepted: a YAML map from chart name (base, istiod, cni, ztunnel) to that chart's values, or %s", flagValue, err, IstioValuesNone)
	}
	return nil
}

// Scale applies -duration-scale to a documented duration, never below min
// (a load shorter than a few seconds measures start-up, not steady state).
func (c *Config) Scale(d, min time.Duration) time.Duration {
	s := time.Duration(float64(d) * c.DurationScale)
	if s < min {
		return min
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
