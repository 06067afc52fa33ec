// Package evidence saves what a spec whose verdict is not "reproduced"
// needs for a diagnosis, before clean-up removes it: events, pod YAML and
// pod logs of every namespace the spec touched (init containers and native
// sidecars included), the status istiod wrote on their Gateways and
// HTTPRoutes, the logs of Istio's control plane and node agents, the
// proxies' state — Envoy admin config_dump of sidecars and waypoints,
// ztunnel's config_dump — and istiod's own view of them: its sync status of
// every proxy (/debug/syncz) and the config it generated for each of the
// spec's proxies (/debug/config_dump?proxyID=<pod>.<namespace>).
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/verdict"
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
	var proxies []string // istiod's proxy IDs of the spec's Envoys
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
	logs := func(p *corev1.Pod) {
		for _, c := range logContainers(p) {
			out, err := k.Logs(ctx, p.Namespace, p.Name, c, time.Time{})
			if err != nil {
				errs = append(errs, fmt.Errorf("logs of %s/%s/%s: %w", p.Namespace, p.Name, c, err))
				continue
			}
			write(fmt.Sprintf("%s__%s__%s.log", p.Namespace, p.Name, c), out)
		}
	}
	for _, ns := range namespaces {
		ev, err := k.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("events of %s: %w", ns, err))
		} else {
			write(ns+"__events.txt", formatEvents(ev.Items))
		}
		if dump, err := routeStatus(ctx, k, ns); err != nil {
			errs = append(errs, err)
		} else if dump != "" {
			write(ns+"__gateway-api-status.yaml", dump)
		}
		pods, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("pods of %s: %w", ns, err))
			continue
		}
		if doc, err := podsYAML(pods.Items); err != nil {
			errs = append(errs, err)
		} else if doc != "" {
			write(ns+"__pods.yaml", doc)
		}
		for _, p := range pods.Items {
			logs(&p)
			if hasProxy(&p) {
				proxies = append(proxies, ProxyID(&p))
				if dump, err := k.AdminGet(ctx, ns, p.Name, "/config_dump"); err != nil {
					errs = append(errs, err)
				} else {
					write(fmt.Sprintf("%s__%s__config_dump.json", ns, p.Name), dump)
				}
			}
		}
	}
	for _, sel := range ControlPlane {
		pods, err := k.Client.CoreV1().Pods(IstioNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("pods %s in %s: %w", sel, IstioNamespace, err))
			continue
		}
		for _, p := range pods.Items {
			logs(&p)
			if sel == "app=istiod" {
				istiodViews(ctx, k, &p, proxies, write, func(err error) { errs = append(errs, err) })
			}
		}
	}
	// ztunnel holds the ambient data plane's state for every node.
	zt, err := k.Client.CoreV1().Pods(IstioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err == nil {
		for _, p := range zt.Items {
			if dump, err := k.AdminGet(ctx, p.Namespace, p.Name, "/config_dump"); err != nil {
				errs = append(errs, err)
			} else {
				write(fmt.Sprintf("%s__%s__config_dump.json", IstioNamespace, p.Name), dump)
			}
		}
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// IstioNamespace is where Istio's control plane and node agents run.
const IstioNamespace = "istio-system"

// ControlPlane selects, in IstioNamespace, the pods whose logs are evidence
// for any meshed spec, by the labels Istio's charts put on them: istiod
// (config rejected, push errors, waypoint and gateway deployment), ztunnel
// and the istio-cni node agent (a pod not captured into the mesh).
var ControlPlane = []string{"app=istiod", "app=ztunnel", "k8s-app=istio-cni-node"}

// logContainers names the containers of p whose logs are kept: every init
// container first — a native sidecar (restartPolicy Always, as Istio injects
// istio-proxy on Kubernetes with sidecar containers) is the proxy itself,
// and istio-init/istio-validation say why a pod's traffic was not captured —
// then the app containers.
func logContainers(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// routeKinds are the Gateway API objects whose status istiod writes: a
// waypoint or ingress Gateway's Programmed condition and addresses, an
// HTTPRoute's Accepted and ResolvedRefs per parent.
var routeKinds = []schema.GroupVersionResource{
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
}

// routeStatus is every Gateway and HTTPRoute of ns as kind, name, spec
// and status, YAML documents in a stream; empty when there are none. A
// cluster without the Gateway API CRDs has none.
func routeStatus(ctx context.Context, k *kube.Cluster, ns string) (string, error) {
	dyn, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		return "", err
	}
	var docs []string
	for _, gvr := range routeKinds {
		l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s of %s: %w", gvr.Resource, ns, err)
		}
		for _, it := range l.Items {
			doc := map[string]any{
				"apiVersion": it.GetAPIVersion(), "kind": it.GetKind(),
				"metadata": map[string]any{"name": it.GetName(), "namespace": it.GetNamespace(), "generation": it.GetGeneration()},
				"spec":     it.Object["spec"], "status": it.Object["status"],
			}
			b, err := yaml.Marshal(doc)
			if err != nil {
				return "", err
			}
			docs = append(docs, string(b))
		}
	}
	return strings.Join(docs, "---\n"), nil
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

// ProxyID is how istiod names a pod's proxy connection in its debug views
// ("<pod>.<namespace>", the prefix of the connection ID).
func ProxyID(p *corev1.Pod) string { return p.Name + "." + p.Namespace }

// IstiodViews are the debug paths read from each istiod, beside one
// config_dump per proxy of the spec: which proxies are connected, and
// whether each has acknowledged the latest push of each xDS type.
var IstiodViews = []string{"/debug/syncz"}

// istiodViews saves istiod's sync status and, for each of the spec's
// proxies, the config istiod generated for it: beside the proxy's own
// config_dump, this tells "istiod never built it" from "the proxy never
// took it".
func istiodViews(ctx context.Context, k *kube.Cluster, istiod *corev1.Pod, proxies []string, write func(name, content string), fail func(error)) {
	get := func(path string) (string, bool) {
		out, err := k.PortGet(ctx, istiod.Namespace, istiod.Name, kube.IstiodDebugPort, path)
		if err != nil {
			fail(fmt.Errorf("istiod %s: %w", path, err))
			return "", false
		}
		return out, true
	}
	for _, v := range IstiodViews {
		if out, ok := get(v); ok {
			write(fmt.Sprintf("%s__%s__%s.json", istiod.Namespace, istiod.Name, strings.TrimPrefix(strings.ReplaceAll(v, "/", "_"), "_")), out)
		}
	}
	for _, id := range proxies {
		if out, ok := get("/debug/config_dump?proxyID=" + id); ok {
			write(fmt.Sprintf("%s__%s__config_dump__%s.json", istiod.Namespace, istiod.Name, id), out)
		}
	}
}

// podsYAML is every pod as YAML documents, managed fields dropped (noise
// for a reader); empty when there are none.
func podsYAML(pods []corev1.Pod) (string, error) {
	var docs []string
	for _, p := range pods {
		p.ManagedFields = nil
		p.APIVersion, p.Kind = "v1", "Pod"
		b, err := yaml.Marshal(p)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n"), nil
}

// Wanted decides whether a finished spec collects evidence: a failed spec
// always does, and so does a judged verdict other than reproduced or
// recorded — under -fail-on=error (or =requirement, for a measurement) a
// "not reproduced" passes, which is exactly when a proxy's configuration
// is wanted — until max specs of the run have collected (collected so far). why says what decided it, and is
// empty for a spec that passed with its claim reproduced or recorded.
func Wanted(failed bool, judged *verdict.Verdict, collected, max int) (bool, string) {
	var reason string
	switch {
	case failed:
		reason = "the spec failed"
	case judged != nil && !judged.Passed():
		reason = "verdict " + string(judged.Result)
	default:
		return false, ""
	}
	if collected >= max {
		return false, fmt.Sprintf("%s, but %d specs already collected evidence (-evidence-max=%d)", reason, collected, max)
	}
	return true, reason
}
