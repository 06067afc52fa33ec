package istio

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// RenderKubeVersion is the Kubernetes version charts are rendered for when
// there is no cluster to ask: GUIDE's EKS 1.36.
var RenderKubeVersion = chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}

// Rendered is one chart rendered client-side.
type Rendered struct {
	Chart   Chart
	Release string
	Objects []*unstructured.Unstructured
}

// Render renders every chart of o.Profile client-side (Helm's dry-run
// install with no cluster, like `helm template`), for RenderKubeVersion. It
// is how the charts and values are checked without a cluster, and what a
// server-side dry run then validates.
func Render(o Options) ([]Rendered, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	charts, err := o.InstallCharts()
	if err != nil {
		return nil, err
	}
	user, err := LoadValuesFile(o.ValuesFile)
	if err != nil {
		return nil, err
	}
	var out []Rendered
	for _, c := range charts {
		ch, err := o.Charts.Load(c, o.Version)
		if err != nil {
			return nil, err
		}
		inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
		inst.ClientOnly = true
		inst.DryRun = true
		inst.IncludeCRDs = true
		inst.Replace = true
		inst.ReleaseName = o.ReleaseOf(c)
		inst.Namespace = o.Namespace
		kv := RenderKubeVersion
		inst.KubeVersion = &kv
		rel, err := inst.Run(ch, Values(c, o, user[c]))
		if err != nil {
			return nil, fmt.Errorf("render chart %s (profile %s): %w", c, o.Profile, err)
		}
		var manifest strings.Builder
		manifest.WriteString(rel.Manifest)
		for _, h := range rel.Hooks {
			manifest.WriteString("\n---\n" + h.Manifest)
		}
		objs, err := DecodeObjects([]byte(manifest.String()))
		if err != nil {
			return nil, fmt.Errorf("render chart %s: %w", c, err)
		}
		out = append(out, Rendered{Chart: c, Release: rel.Name, Objects: objs})
	}
	return out, nil
}

// DecodeObjects splits a multi-document YAML stream into objects, skipping
// empty documents.
func DecodeObjects(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("object without kind or apiVersion: %v", m)
		}
		out = append(out, u)
	}
}
