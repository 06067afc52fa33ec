package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/istio"
)

// The files a run on a cluster it did not create (-provider=existing)
// keeps in its results directory: every object of every listable resource
// type before its first write and after its clean-up, and what differs
// with who wrote it, so a release record carries the proof that nothing
// foreign was changed and nothing of the run's was left.
const (
	InventoryBeforeFile  = "inventory-before.json"
	InventoryAfterFile   = "inventory-after.json"
	InventoryChangesFile = "inventory-changes.json"
)

// takeInventoryBefore lists the cluster before the run's first write.
func (s *Suite) takeInventoryBefore(ctx context.Context) error {
	if s.Cfg.Provider != "existing" {
		return nil
	}
	snap, err := inventory.Take(ctx, s.Provider().RESTConfig())
	if err != nil {
		return fmt.Errorf("inventory before the run: %w", err)
	}
	if err := writeJSON(filepath.Join(s.Cfg.ResultsDir, InventoryBeforeFile), snap); err != nil {
		return err
	}
	s.mu.Lock()
	s.inventoryBefore = snap
	s.mu.Unlock()
	s.logf("inventory: %d objects of %d resource types before the first write (%s)", len(snap.Objects), len(snap.Resources), InventoryBeforeFile)
	return nil
}

// inventoryAfter lists the cluster after the clean-up, compares, keeps
// both and puts the summary in the environment; nil when no inventory was
// taken before.
func (s *Suite) inventoryAfter(ctx context.Context) (*inventory.Changes, error) {
	s.mu.Lock()
	before := s.inventoryBefore
	s.mu.Unlock()
	if before == nil {
		return nil, nil
	}
	after, err := inventory.Take(ctx, s.Provider().RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("inventory after the run: %w", err)
	}
	if err := writeJSON(filepath.Join(s.Cfg.ResultsDir, InventoryAfterFile), after); err != nil {
		return nil, err
	}
	c := inventory.Summarize(before, after, fixtures.LabelRun, s.Cfg.RunID)
	if s.foundIstio {
		c.Attribute(func(ch inventory.Change) string { return s.runningIstioLock(ctx, ch) })
	}
	if err := writeJSON(filepath.Join(s.Cfg.ResultsDir, InventoryChangesFile), c); err != nil {
		return nil, err
	}
	s.logf("inventory: %s", c.Summary())
	return &c, nil
}

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// runningIstioLock says, of a foreign object the run's inventories found
// changed, whether it is a leader-election lock (client-go's ConfigMap
// lock, as istiod keeps them) held by an istiod pod of the Istio the
// cluster already ran: renewing it every few seconds is that istiod's own
// doing. The run's own revision's pods are never counted so.
func (s *Suite) runningIstioLock(ctx context.Context, ch inventory.Change) string {
	ns, name, ok := strings.Cut(strings.TrimPrefix(ch.Key, "v1/configmaps "), "/")
	if !ok || !strings.HasPrefix(ch.Key, "v1/configmaps ") {
		return ""
	}
	cs, err := kubernetes.NewForConfig(s.Provider().RESTConfig())
	if err != nil {
		return ""
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	holder := istio.LockHolder(cm.Annotations)
	if holder == "" || (s.Cfg.IstioRevision != "" && strings.HasPrefix(holder, "istiod-"+s.Cfg.IstioRevision+"-")) {
		return ""
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, holder, metav1.GetOptions{})
	if err != nil || pod.Labels["app"] != "istiod" || (s.Cfg.IstioRevision != "" && pod.Labels[istio.LabelRevision] == s.Cfg.IstioRevision) {
		return ""
	}
	return "a leader-election lock renewed by its holder, the running Istio's istiod " + pod.Name
}
