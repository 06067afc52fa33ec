// Package evidence saves what a failed spec needs for a diagnosis, before
// clean-up removes it: events and pod logs of the spec's namespaces, and the
// proxies' state — Envoy admin config_dump of sidecars and waypoints, and
// ztunnel's config_dump.
package evidence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/kube"
)

// Collect writes evidence for namespaces into dir and returns the files
// written, relative to base (the results directory). It keeps going past
// individual failures and reports them joined: partial evidence beats none.
func Collect(ctx context.Context, k *kube.Cluster, dir, base string, namespaces ...string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	var errs []error
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			errs = append(errs, err)
			return
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			rel = p
		}
		files = append(files, rel)
	}
	for _, ns := range namespaces {
		ev, err := k.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("events of %s: %w", ns, err))
		} else {
			write(ns+"__events.txt", formatEvents(ev.Items))
		}
		pods, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("pods of %s: %w", ns, err))
			continue
		}
		for _, p := range pods.Items {
			for _, c := range p.Spec.Containers {
				logs, err := k.Logs(ctx, ns, p.Name, c.Name, time.Time{})
				if err != nil {
					errs = append(errs, fmt.Errorf("logs of %s/%s/%s: %w", ns, p.Name, c.Name, err))
					continue
				}
				write(fmt.Sprintf("%s__%s__%s.log", ns, p.Name, c.Name), logs)
			}
			if hasProxy(&p) {
				if dump, err := k.AdminGet(ctx, ns, p.Name, "/config_dump"); err != nil {
					errs = append(errs, err)
				} else {
					write(fmt.Sprintf("%s__%s__config_dump.json", ns, p.Name), dump)
				}
			}
		}
	}
	// ztunnel holds the ambient data plane's state for every node.
	zt, err := k.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err == nil {
		for _, p := range zt.Items {
			if dump, err := k.AdminGet(ctx, p.Namespace, p.Name, "/config_dump"); err != nil {
				errs = append(errs, err)
			} else {
				write(fmt.Sprintf("istio-system__%s__config_dump.json", p.Name), dump)
			}
		}
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// hasProxy reports an Envoy in the pod: an istio-proxy container (sidecar or
// waypoint) or a native sidecar init container of that name.
func hasProxy(p *corev1.Pod) bool {
	for _, c := range append(append([]corev1.Container{}, p.Spec.Containers...), p.Spec.InitContainers...) {
		if c.Name == "istio-proxy" {
			return true
		}
	}
	return false
}

func formatEvents(evs []corev1.Event) string {
	sort.Slice(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(&evs[j].LastTimestamp) })
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.RFC3339), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}
