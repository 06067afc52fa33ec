package netpol

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// freshPod is a client deployed for one probe: no connection of its own
// existed before it became ready.
type freshPod struct {
	Client probe.Client
	Pod    string
	IP     string
	Ready  time.Time // when the suite saw it Available
}

var freshSeq atomic.Int64

// freshClient deploys a new fortio client (service account default, like
// the mode's own client) in r's namespace for one probe, and waits until it
// is Available; Apply deletes it when the spec ends. In ambient modes
// ztunnel keys its pool of HBONE tunnels by the source pod's IP among
// others, so a pod that did not exist before a policy can only reach echo
// over a tunnel opened after it (issue 26: a pooled tunnel from before the
// policy keeps carrying new requests past a NetworkPolicy). The wait is for
// the client's own readiness, never for the outcome it will measure.
func freshClient(ctx context.Context, r *spec.Run, purpose string) (freshPod, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return freshPod{}, err
	}
	name := fmt.Sprintf("%s-%s-%d", fixtures.ClientName, purpose, freshSeq.Add(1))
	d := fixtures.FortioClient(scenario.Target(r), m.Options.Images, name, "")
	if err := scenario.Apply(ctx, r, d); err != nil {
		return freshPod{}, err
	}
	if err := m.Kube.WaitCreatedAvailable(ctx, r.Namespace(), r.Env.Config.Timeouts.WorkloadsReady, name); err != nil {
		return freshPod{}, fmt.Errorf("fresh client %s: %w", name, err)
	}
	c := probe.Client{Namespace: r.Namespace(), Selector: fixtures.LabelApp + "=" + name, Port: fixtures.ClientHTTPPort}
	pod, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return freshPod{}, fmt.Errorf("fresh client %s: %w", name, err)
	}
	f := freshPod{Client: c, Pod: pod.Name, IP: pod.Status.PodIP, Ready: time.Now()}
	r.Logf("fresh client %s/%s (IP %s) ready at %s", c.Namespace, f.Pod, f.IP, f.Ready.UTC().Format(time.RFC3339Nano))
	return f, nil
}
