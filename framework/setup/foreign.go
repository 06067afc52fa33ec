package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// IstioFoundFile is where a run keeps what it found of an Istio it did not
// install (istio.Found as JSON), in its results directory.
const IstioFoundFile = "istio-found.json"

// checkForeignIstio looks, with lists only, for an Istio the run did not
// install, before the workload image is built and before any write, and
// goes on only as istio.Beside.Decide allows: over someone's Istio never;
// beside it as a revision (-istio-revision) or qualifying it as it is
// (-istio-install=skip). What it found is kept in the results directory
// and said in the report.
func (s *Suite) checkForeignIstio(ctx context.Context) error {
	meshed := false
	for _, m := range s.Cfg.Modes {
		meshed = meshed || m.Meshed()
	}
	// A run of mode none installs no Istio and needs no decision; on a
	// cluster it did not create it still looks, so that its inventory can
	// tell a running istiod's own writes from the run's.
	if !meshed && s.Cfg.Provider != "existing" {
		return nil
	}
	rc := s.Provider().RESTConfig()
	f, err := istio.FindForeign(ctx, rc)
	if err != nil {
		return err
	}
	if raw, err := json.MarshalIndent(f, "", "  "); err == nil {
		if err := os.WriteFile(filepath.Join(s.Cfg.ResultsDir, IstioFoundFile), append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	b := istio.Beside{Method: istio.Method(s.Cfg.IstioInstall), Revision: s.Cfg.IstioRevision, Modes: s.Cfg.Modes}
	if err := b.Decide(f); err != nil {
		return err
	}
	for _, n := range f.Notes {
		s.note("Looking for an Istio already installed: " + n)
	}
	if !f.Any() {
		if len(f.Ours) > 0 {
			s.logf("istio: the cluster holds the Istio an earlier run of this suite left (releases %s)", strings.Join(f.Ours, ", "))
		} else {
			s.logf("istio: no Istio installed on the cluster before this run")
		}
		return nil
	}
	s.mu.Lock()
	s.foundIstio = true
	s.mu.Unlock()
	if !meshed {
		s.logf("istio: the cluster runs an Istio of its own (revisions %s); mode none does not use it", strings.Join(f.Revisions(), ", "))
		return nil
	}
	var names []string
	for _, c := range f.Components {
		names = append(names, c.String())
	}
	switch {
	case b.Method == istio.MethodSkip:
		s.note(fmt.Sprintf("Istio was installed by the cluster's owner and qualified as it is (-istio-install=skip): the suite installed nothing. Found (revisions %s): %s; "+
			"releases' values in %s", strings.Join(f.Revisions(), ", "), strings.Join(names, "; "), IstioFoundFile))
		s.logf("istio: qualifying the installed Istio as it is (revisions %s)", strings.Join(f.Revisions(), ", "))
	case b.Revision != "":
		check, err := istio.CheckCRDs(ctx, rc, istio.Options{Profile: istio.ProfileDefault, Version: s.Cfg.IstioVersion, Charts: s.chartSource()})
		if err != nil {
			return err
		}
		if err := check.Err(b.Revision); err != nil {
			return err
		}
		if w := check.Warning(); w != "" {
			s.note("Istio CRDs: " + w)
			s.logf("istio: warning: %s", w)
		}
		s.note(fmt.Sprintf("Istio %s ran as revision %s beside the cluster's own Istio (revisions %s), as Istio's canary upgrade does: the suite wrote only istiod-%s and its webhooks "+
			"(removed after the run) and labelled its own namespaces %s=%s; the running Istio, its CRDs, the default revision, revision tags and every other namespace were left as they were. Found: %s",
			s.Cfg.IstioVersion, b.Revision, strings.Join(f.Revisions(), ", "), b.Revision, istio.LabelRevision, b.Revision, strings.Join(names, "; ")))
		s.logf("istio: installing revision %s beside the running Istio (%s)", b.Revision, strings.Join(f.Revisions(), ", "))
	}
	return nil
}

// sidecarRevision is the revision the run's sidecar namespaces are
// labelled for, "" for the default injection label.
func (s *Suite) sidecarRevision() string {
	for _, m := range s.Cfg.Modes {
		if m == mode.Sidecar {
			return s.Cfg.IstioRevision
		}
	}
	return ""
}
