package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// DaemonSetRolledOut reports whether every pod a DaemonSet wants runs the
// current template and is ready and available, and if not, what is missing.
//
// This is stricter than Helm 3's wait, on purpose: Helm counts a DaemonSet
// ready once NumberReady >= Desired - maxUnavailable, so istio-cni's and
// ztunnel's charts (maxUnavailable 1) are "ready" on a one-node cluster
// (kind's default, the local provider) with no pod ready at all. Workloads
// created in that window start before istio-cni's node agent can enroll them.
func DaemonSetRolledOut(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	switch {
	case st.ObservedGeneration < ds.Generation:
		return false, fmt.Sprintf("controller has not observed generation %d yet (observed %d)", ds.Generation, st.ObservedGeneration)
	case st.DesiredNumberScheduled == 0:
		return false, "no node is scheduled to run it yet (desired 0)"
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d pods run the current template", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case st.NumberReady < st.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d pods ready", st.NumberReady, st.DesiredNumberScheduled)
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d pods available", st.NumberAvailable, st.DesiredNumberScheduled)
	}
	return true, ""
}

// WaitDaemonSets waits until each named DaemonSet in ns exists (a NotFound
// is "not yet") and has rolled out on every node (DaemonSetRolledOut), all
// within timeout. The error names the DaemonSet and what it still lacked.
func WaitDaemonSets(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		// What the last good read said; failing that, whether the API
		// server answered NotFound; failing that, the last read error. A
		// read cut off at the deadline (client-go's rate limiter refuses a
		// request that would exceed it) hides neither.
		var why string
		var notFound bool
		var readErr error
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				notFound = true
				return false, nil
			case err != nil:
				readErr = err
				return false, nil
			}
			ok, w := DaemonSetRolledOut(ds)
			why = w
			return ok, nil
		})
		if err != nil {
			switch {
			case why != "":
			case notFound:
				why = "it was never created"
			case readErr != nil:
				why = "reading it failed: " + readErr.Error()
			default:
				why = "it was never read"
			}
			return fmt.Errorf("daemonset %s/%s not ready on every node within %s: %s", ns, name, timeout, why)
		}
	}
	return nil
}
