package istio

import (
	"fmt"
	"sort"
	"strings"
)

// CheckImageVersions checks that every Istio image (workload name -> image
// reference) runs version want. Istio tags images VERSION or
// VERSION-VARIANT (1.30.2-distroless, which the ambient profile selects);
// anything else, including digests that do not show a version and "latest",
// is a mismatch or unverifiable, and fails.
func CheckImageVersions(images map[string]string, want string) error {
	if len(images) == 0 {
		return fmt.Errorf("no Istio workloads found to verify version %s against", want)
	}
	var bad []string
	for _, name := range sortedKeys(images) {
		img := images[name]
		tag, ok := imageTag(img)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s runs %s, whose version cannot be read (no tag)", name, img))
		case tag == want || strings.HasPrefix(tag, want+"-") && isVariant(strings.TrimPrefix(tag, want+"-")):
		default:
			bad = append(bad, fmt.Sprintf("%s runs %s (tag %s)", name, img, tag))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("istio version: want %s, but %s", want, strings.Join(bad, "; "))
	}
	return nil
}

// isVariant accepts Istio's image variants, so that 1.30.2-debug passes for
// 1.30.2 but 1.30.2-beta.1 (a different release) does not.
func isVariant(s string) bool {
	switch s {
	case "distroless", "debug":
		return true
	}
	return false
}

// imageTag returns the tag of an image reference (registry ports and
// digests handled).
func imageTag(ref string) (string, bool) {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "", false
	}
	return ref[colon+1:], true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
