package resume

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Decides lists what decides a run's measurements, each by the flag or
// thing it is: the modes, provider and cluster settings (and, on an
// existing cluster, the API server its context points at), scale, repeats,
// sequential stopping, the gate, Istio's version, install, hub and tag,
// the charts', values', image archives', claims' and requirements' content
// (digests, not paths: a moved checkout still matches), the Ginkgo
// selection, every timeout, and the suite's version (its commit and
// uncommitted changes, and Go's). repoRoot is the suite's checkout.
func Decides(cfg *config.Config, sel spec.Selection, repoRoot string) map[string]string {
	d := map[string]string{
		"-mode":                  mode.Join(cfg.Modes, ","),
		"-provider":              cfg.Provider,
		"-duration-scale":        strconv.FormatFloat(cfg.DurationScale, 'g', -1, 64),
		"-repeats":               strconv.Itoa(cfg.Repeats),
		"-sequential":            strconv.FormatBool(cfg.Sequential),
		"-concurrent-modes":      strconv.FormatBool(cfg.ConcurrentModes),
		"-fail-on":               cfg.FailOn,
		"-istio-version":         cfg.IstioVersion,
		"-istio-install":         cfg.IstioInstall,
		"-istio-revision":        cfg.IstioRevision,
		"-istio-hub":             cfg.IstioHub,
		"-istio-tag":             cfg.IstioTag,
		"-istio-charts":          chartsIdentity(cfg.IstioCharts, cfg.IstioVersion),
		"-istio-values":          fileDigest(cfg.IstioValues),
		"-image-archives":        archivesIdentity(cfg.ImageArchives),
		"-image-registry":        cfg.Registry,
		"-kind-node-image":       cfg.KindNodeImage,
		"-kind-config":           fileDigest(cfg.KindConfig),
		"-kind-kube-proxy-mode":  cfg.KindKubeProxyMode,
		"-context":               cfg.Context,
		"cluster":                clusterIdentity(cfg),
		"-netpol-enforcer":       cfg.NetPolEnforcer,
		"-netpol-enable-command": cfg.NetPolEnableCommand,
		"-claims":                fileDigest(cfg.ClaimsFile),
		"-requirements":          "",
		"-ginkgo.label-filter":   sel.LabelFilter,
		"-ginkgo.focus":          strings.Join(sel.Focus, " | "),
		"-ginkgo.skip":           strings.Join(sel.Skip, " | "),
		"suite version":          suiteVersion(repoRoot),
		"go":                     runtime.Version(),
	}
	if cfg.Requirements != nil {
		d["-requirements"] = digest(cfg.Requirements.Data)
	}
	t := reflect.ValueOf(cfg.Timeouts)
	for i := range t.NumField() {
		d["timeout "+t.Type().Field(i).Name] = fmt.Sprint(t.Field(i).Interface())
	}
	return d
}

// clusterIdentity is the cluster the run measures on as the invocation
// names it, read without contacting it: on an existing cluster the API
// server the kubeconfig context points at (its name alone could point
// elsewhere now); a kind or local cluster is one the run creates afresh
// from the node image and config recorded beside it, unless reused.
func clusterIdentity(cfg *config.Config) string {
	if cfg.Provider != "existing" {
		if cfg.ReuseCluster {
			return fmt.Sprintf("%s cluster %q, reused", cfg.Provider, cfg.ClusterName)
		}
		return "a " + cfg.Provider + " cluster the run creates"
	}
	server, err := cluster.KubeconfigSelector{Path: cfg.Kubeconfig, Context: cfg.Context}.Server()
	if err != nil {
		return "unresolved: " + err.Error()
	}
	return "API server " + server
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// fileDigest is a file's content digest; "" for no file.
func fileDigest(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return digest(b)
}

// chartsIdentity is a digest of every file of Istio's charts as the
// installer loads them from dir; "" for Istio's chart repository (the
// version names the charts there).
func chartsIdentity(dir, version string) string {
	if dir == "" {
		return ""
	}
	h := sha256.New()
	src := istio.ChartSource{Dir: dir}
	for _, c := range []istio.Chart{istio.ChartBase, istio.ChartIstiod, istio.ChartCNI, istio.ChartZtunnel} {
		ch, err := src.Load(c, version)
		if err != nil {
			fmt.Fprintf(h, "%s: not loaded\n", c)
			continue
		}
		var names []string
		data := map[string][]byte{}
		for _, f := range ch.Raw {
			names = append(names, f.Name)
			data[f.Name] = f.Data
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(h, "%s/%s %d\n", c, n, len(data[n]))
			h.Write(data[n])
		}
	}
	return "charts sha256:" + hex.EncodeToString(h.Sum(nil))
}

// archivesIdentity is the image archives' identity: their images.json
// (make istio-images: every image's digests) when there is one, and every
// archive's name and size.
func archivesIdentity(dir string) string {
	if dir == "" {
		return ""
	}
	var parts []string
	if b, err := os.ReadFile(filepath.Join(dir, "images.json")); err == nil {
		parts = append(parts, "images.json "+digest(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		parts = append(parts, "images.json unreadable: "+err.Error())
	}
	tars, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	for _, t := range tars {
		if st, err := os.Stat(t); err == nil {
			parts = append(parts, fmt.Sprintf("%s %d bytes", filepath.Base(t), st.Size()))
		}
	}
	return strings.Join(parts, ", ")
}

// suiteVersion is the suite's source: the checkout's commit and a digest
// of its uncommitted changes (tracked and untracked, .gitignore'd files
// excluded), or, outside a git checkout, what the binary's build info
// says.
func suiteVersion(repoRoot string) string {
	git := func(args ...string) ([]byte, error) {
		return exec.Command("git", append([]string{"-C", repoRoot}, args...)...).Output()
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil {
		return "unknown (not a git checkout: " + strings.TrimSpace(err.Error()) + ")"
	}
	v := "commit " + strings.TrimSpace(string(rev))
	h := sha256.New()
	dirty := false
	if diff, err := git("diff", "HEAD", "--no-ext-diff", "--binary"); err == nil && len(diff) > 0 {
		dirty = true
		h.Write(diff)
	}
	if others, err := git("ls-files", "--others", "--exclude-standard", "-z"); err == nil {
		for _, f := range strings.Split(string(others), "\x00") {
			if f == "" {
				continue
			}
			dirty = true
			b, _ := os.ReadFile(filepath.Join(repoRoot, f))
			fmt.Fprintf(h, "%s %d\n", f, len(b))
			h.Write(b)
		}
	}
	if dirty {
		v += " with uncommitted changes sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	}
	return v
}
