package resume

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshclaims/meshclaims/framework/report"
)

// Images are the images a part's set-up used, known only once it ran:
// the workload image as built (its config digest, from the environment's
// note) and as the pods name it (with its digest when pushed), the kind
// nodes' image, and every image of env.Images by reference (an archive's
// config digest, the image ID Istio's pods ran), mapped to their identity.
func Images(env report.Environment, workload string) map[string]string {
	out := map[string]string{}
	for _, n := range env.Notes {
		if strings.HasPrefix(n, "workload image ") {
			out["workload image built"] = n
		}
	}
	if workload != "" {
		out["workload image in the pods"] = workload
	}
	if env.NodeImage != "" {
		out["kind node image"] = env.NodeImage
	}
	ids := map[string][]string{}
	for _, im := range env.Images {
		// Pods are named afresh by each part: an image is keyed by where
		// it came from (an archive's file, "pod") and its reference.
		from, _, _ := strings.Cut(im.Where, " ")
		if from == "archive" {
			from = im.Where
		}
		k := fmt.Sprintf("image %s (%s)", im.Image, from)
		if !slices.Contains(ids[k], im.ID) {
			ids[k] = append(ids[k], im.ID)
		}
	}
	for k, v := range ids {
		slices.Sort(v)
		out[k] = strings.Join(v, ", ")
	}
	return out
}

// ImageDifferences compares the images of this part's set-up with the
// run's (the first part whose set-up finished): every image both know
// whose identity differs, with both. An image only one of them used is
// not compared (the flags that decide which images run already match).
func ImageDifferences(recorded, now map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(now) {
		if a, ok := recorded[k]; ok && a != now[k] {
			out = append(out, fmt.Sprintf("%s: the run had %s, this part %s", k, a, now[k]))
		}
	}
	return out
}
