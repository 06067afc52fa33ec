package setup

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/ztunnellog"
)

// hboneCrossingsTimeout bounds the read of every ztunnel's log at the end
// of a run: it is evidence for the report, and must not hold up clean-up.
const hboneCrossingsTimeout = 45 * time.Second

// recordHBONECrossings states, for each ambient mode of the run, how many
// HBONE connections crossed nodes, from every ztunnel's own access log
// since the run started (the inbound line at the destination's ztunnel,
// placed by its client's IP). On one node none can: one ztunnel carries
// both ends of every call, and the report then says so in numbers rather
// than in a caveat.
func (s *Suite) recordHBONECrossings(ctx context.Context, k *kube.Cluster, since time.Time) {
	var ambient []mode.Mode
	for _, m := range s.Cfg.Modes {
		if m.Ambient() {
			ambient = append(ambient, m)
		}
	}
	if len(ambient) == 0 || k == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, hboneCrossingsTimeout)
	defer cancel()
	text, err := hboneCrossings(ctx, k, since, ambient)
	if err != nil {
		text = []string{"HBONE across nodes: not read: " + err.Error()}
	}
	for _, t := range text {
		s.note(t)
		s.logf("%s", t)
	}
}

func hboneCrossings(ctx context.Context, k *kube.Cluster, since time.Time, modes []mode.Mode) ([]string, error) {
	zt, err := k.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		return nil, fmt.Errorf("ztunnel pods: %w", err)
	}
	if len(zt.Items) == 0 {
		return nil, fmt.Errorf("no ztunnel pod in istio-system")
	}
	nodeOf, err := k.NodeOfIP(ctx)
	if err != nil {
		return nil, fmt.Errorf("placing pod IPs on nodes: %w", err)
	}
	byNode := map[string][]ztunnellog.Access{}
	var read []string
	for _, p := range zt.Items {
		log, err := k.Logs(ctx, p.Namespace, p.Name, "istio-proxy", since)
		if err != nil {
			return nil, fmt.Errorf("ztunnel %s log: %w", p.Name, err)
		}
		entries, err := ztunnellog.Parse(log)
		if err != nil {
			return nil, err
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], entries...)
		read = append(read, p.Name+" on "+p.Spec.NodeName)
	}
	var out []string
	for _, m := range modes {
		c := ztunnellog.CountCrossings(byNode, m.Namespace(), nodeOf)
		out = append(out, fmt.Sprintf("HBONE across nodes in %s over the run, from the access logs of %d ztunnel(s) (%s): %s",
			m.Namespace(), len(zt.Items), strings.Join(read, ", "), c))
	}
	return out, nil
}
