// Package podtimeline records, while a rollout runs, when each pod of a
// workload had which IP, became ready, began terminating and was gone, so
// that an upstream host an access log names (ip:port) can be placed: was it
// a live pod, one going away, or one already gone when the request failed?
//
// Times are the watcher's clock at the event's receipt (millisecond
// resolution; the API's own deletionTimestamp has one-second resolution).
// On the local provider the proxies' access logs are stamped by the same
// host's clock; elsewhere the nodes' clock offset adds to the watch delay.
package podtimeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/kube"
)

// Pod is one pod's life as the watcher saw it; zero times were not seen.
type Pod struct {
	Name     string
	IP       string
	Seen     time.Time // first listed or added
	IPAt     time.Time // first seen with its IP
	Ready    time.Time // first seen Ready
	Deleting time.Time // first seen with a deletionTimestamp (terminating)
	Gone     time.Time // deleted from the API
}

// Where a host stood at a time (the registry's attribution categories).
const (
	Live        = "live"        // a pod with the IP existed and was not terminating
	Terminating = "terminating" // its pod had begun terminating
	Gone        = "gone"        // its pod was deleted from the API before
	Unknown     = ""            // no pod of the timeline ever had the IP by then
)

// Timeline is every pod seen, in order of first sight.
type Timeline struct {
	Pods []Pod
}

// At says where the pod with ip stood at t. When several pods had the IP
// (an address reused within the run), the one that had it latest at t is
// meant.
func (tl Timeline) At(ip string, t time.Time) string {
	var best *Pod
	for i := range tl.Pods {
		p := &tl.Pods[i]
		if p.IP != ip || p.IPAt.IsZero() || p.IPAt.After(t) {
			continue
		}
		if best == nil || p.IPAt.After(best.IPAt) {
			best = p
		}
	}
	switch {
	case best == nil:
		return Unknown
	case !best.Gone.IsZero() && !best.Gone.After(t):
		return Gone
	case !best.Deleting.IsZero() && !best.Deleting.After(t):
		return Terminating
	}
	return Live
}

// Recorder watches pods until Stop.
type Recorder struct {
	mu     sync.Mutex
	pods   map[string]*Pod
	order  []string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	now    func() time.Time
}

// Watch lists the pods of namespace matching selector and watches them
// until Stop; a watch the server ends is resumed from a fresh list.
func Watch(ctx context.Context, c kubernetes.Interface, namespace, selector string) (*Recorder, error) {
	if c == nil || namespace == "" || selector == "" {
		return nil, fmt.Errorf("podtimeline.Watch: client, namespace and selector are required (got namespace %q, selector %q)", namespace, selector)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Recorder{pods: map[string]*Pod{}, cancel: cancel, done: make(chan struct{}), now: time.Now}
	api := c.CoreV1().Pods(namespace)
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("podtimeline: listing pods %s in %s: %w", selector, namespace, err)
	}
	for i := range list.Items {
		r.observe(&list.Items[i], false)
	}
	rv := list.ResourceVersion
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			w, err := api.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
			if err != nil {
				if ctx.Err() == nil {
					r.setErr(fmt.Errorf("podtimeline: watching pods %s in %s: %w", selector, namespace, err))
				}
				return
			}
			r.follow(ctx, w, &rv)
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			// The server ended the watch: list again (what changed in
			// between is seen now, a little late) and resume.
			list, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				if ctx.Err() == nil {
					r.setErr(fmt.Errorf("podtimeline: listing pods %s in %s again: %w", selector, namespace, err))
				}
				return
			}
			present := map[string]bool{}
			for i := range list.Items {
				present[list.Items[i].Name] = true
				r.observe(&list.Items[i], false)
			}
			r.goneUnless(present)
			rv = list.ResourceVersion
		}
	}()
	return r, nil
}

// follow records w's events until it ends or ctx is done (Stop).
func (r *Recorder) follow(ctx context.Context, w watch.Interface, rv *string) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			*rv = p.ResourceVersion
			r.observe(p, ev.Type == watch.Deleted)
		}
	}
}

func (r *Recorder) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// observe records what one sight of p says.
func (r *Recorder) observe(p *corev1.Pod, deleted bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	x, ok := r.pods[p.Name]
	if !ok {
		x = &Pod{Name: p.Name, Seen: now}
		r.pods[p.Name] = x
		r.order = append(r.order, p.Name)
	}
	if ip := p.Status.PodIP; ip != "" && x.IP == "" {
		x.IP, x.IPAt = ip, now
	}
	if x.Ready.IsZero() && kube.PodReady(p) {
		x.Ready = now
	}
	if x.Deleting.IsZero() && (p.DeletionTimestamp != nil || deleted) {
		x.Deleting = now
	}
	if deleted && x.Gone.IsZero() {
		x.Gone = now
	}
}

// goneUnless marks every pod not in present as gone (a deletion the
// watch missed while it was down).
func (r *Recorder) goneUnless(present map[string]bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, p := range r.pods {
		if !present[name] && p.Gone.IsZero() {
			if p.Deleting.IsZero() {
				p.Deleting = now
			}
			p.Gone = now
		}
	}
}

// Stop ends the watch and returns the timeline, and the error that ended
// the watch early, if one did (the timeline is then incomplete).
func (r *Recorder) Stop() (Timeline, error) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	tl := Timeline{Pods: make([]Pod, 0, len(r.order))}
	for _, n := range r.order {
		tl.Pods = append(tl.Pods, *r.pods[n])
	}
	return tl, r.err
}
