package istio

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// CRDCheck is how the running Istio's CRDs compare with those of the
// release a revision qualifies. Beside a running Istio the CRDs are that
// Istio's and are left as they are; the qualified istiod must run on them.
type CRDCheck struct {
	// Missing are CRDs (or "<crd> version <v>") the qualified release
	// serves and the cluster does not: its istiod would watch a resource
	// that is not there, so the run refuses.
	Missing []string
	// Differ are CRDs present with another schema than the qualified
	// release's: the run goes on and the report warns.
	Differ []string
}

// Warning is the report's sentence for Differ, "" when they match.
func (c CRDCheck) Warning() string {
	if len(c.Differ) == 0 {
		return ""
	}
	return fmt.Sprintf("the running Istio's CRDs differ from those of the qualified release in %d of them (%s): used as they are, since they are that Istio's; "+
		"a field the qualified release added may be dropped by the API server", len(c.Differ), strings.Join(c.Differ, ", "))
}

// Err refuses a revision the running Istio's CRDs cannot carry.
func (c CRDCheck) Err(revision string) error {
	if len(c.Missing) == 0 {
		return nil
	}
	return fmt.Errorf("istio: -istio-revision=%s: the running Istio's CRDs lack what the qualified release serves: %s. "+
		"The CRDs belong to that Istio and are not changed by a revision. Nothing was written. "+
		"Upgrade that Istio's base chart (its CRDs) first, or qualify an Istio release its CRDs serve", revision, strings.Join(c.Missing, ", "))
}

// CheckCRDs compares the cluster's Istio CRDs with those the base chart of
// o (its Version from o.Charts) renders: every CRD and served version the
// release has must be there; a schema that differs is noted.
func CheckCRDs(ctx context.Context, cfg *rest.Config, o Options) (CRDCheck, error) {
	var out CRDCheck
	o.Revision = "" // the base chart's CRDs, as the release ships them
	o.Profile = ProfileDefault
	rs, err := Render(o)
	if err != nil {
		return out, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return out, err
	}
	for _, r := range rs {
		if r.Chart != ChartBase {
			continue
		}
		for _, want := range r.Objects {
			if want.GetKind() != "CustomResourceDefinition" {
				continue
			}
			have, err := dyn.Resource(crdGVR).Get(ctx, want.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				out.Missing = append(out.Missing, want.GetName())
				continue
			}
			if err != nil {
				return out, fmt.Errorf("istio: reading CRD %s: %w", want.GetName(), err)
			}
			served := servedVersions(have)
			for _, v := range servedVersions(want) {
				if !slices.Contains(served, v) {
					out.Missing = append(out.Missing, want.GetName()+" version "+v)
				}
			}
			if schemaHash(want) != schemaHash(have) {
				out.Differ = append(out.Differ, want.GetName())
			}
		}
	}
	return out, nil
}

func servedVersions(crd *unstructured.Unstructured) []string {
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			name, _ := m["name"].(string)
			out = append(out, name)
		}
	}
	return out
}

// schemaHash digests the versions' schemas, which the API server stores
// as given (defaulting adds nothing inside openAPIV3Schema).
func schemaHash(crd *unstructured.Unstructured) string {
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	h := sha256.New()
	for _, v := range vs {
		m, _ := v.(map[string]any)
		b, _ := json.Marshal([]any{m["name"], m["served"], m["schema"]})
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
