package images

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"
)

// ImageConfig is what an image's config says besides its layer, alike for
// an image Build compiles (Spec) and one Pack assembles from files that
// exist already (PackSpec); both embed it, so its fields are set as
// Spec{ImageConfig: ImageConfig{Version: ...}} and read as spec.Version.
type ImageConfig struct {
	// GOARCH is the image platform's architecture (and, for Build, the
	// binary's); empty means runtime.GOARCH. See SupportedArchitectures. Pack
	// does not look into the files: its caller vouches that they fit.
	GOARCH string

	// Entrypoint of the image. For Build, empty means [Spec.BinaryPath]; a
	// PackSpec needs Entrypoint or Cmd.
	Entrypoint []string
	// Cmd is the image's default arguments (e.g. a subcommand).
	Cmd []string
	// Env holds KEY=VALUE entries for the image config.
	Env []string
	// WorkingDir of the image; empty means "/".
	WorkingDir string

	// Version, Source and Revision become the labels LabelVersion,
	// LabelSource and LabelRevision. Version is required (for Build it also
	// names the image, see ImageRef); Source and Revision are set when
	// non-empty.
	Version  string
	Source   string
	Revision string
	// Labels are extra config labels; they may not redefine the three above.
	Labels map[string]string

	// Created is the timestamp of every file in the layer and of the config's
	// "created" field. Zero means $SOURCE_DATE_EPOCH if set, else the Unix
	// epoch, so images are reproducible by default.
	Created time.Time
}

// setDefaults checks c and fills in its defaults (a spec's withDefaults
// calls it on its own copy); kind ("Spec", "PackSpec") names the struct in
// errors. Version is left to each spec, whose error says what else it
// becomes.
func (c *ImageConfig) setDefaults(kind string) error {
	if c.GOARCH == "" {
		c.GOARCH = runtime.GOARCH
	}
	if !slices.Contains(SupportedArchitectures, c.GOARCH) {
		return fmt.Errorf("images: unsupported GOARCH %q; accepted: %s", c.GOARCH, strings.Join(SupportedArchitectures, ", "))
	}
	if c.WorkingDir == "" {
		c.WorkingDir = "/"
	}
	if !path.IsAbs(c.WorkingDir) {
		return fmt.Errorf("images: %s.WorkingDir %q is not absolute; accepted: an absolute path such as \"/\"", kind, c.WorkingDir)
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("images: %s.Env entry %q is not KEY=VALUE", kind, e)
		}
	}
	for k := range c.Labels {
		switch k {
		case "":
			return fmt.Errorf("images: %s.Labels has an empty key", kind)
		case LabelVersion, LabelSource, LabelRevision:
			return fmt.Errorf("images: %[1]s.Labels sets %[2]q; use %[1]s.Version, %[1]s.Source or %[1]s.Revision instead", kind, k)
		}
	}
	if c.Created.IsZero() {
		t, err := sourceDateEpoch()
		if err != nil {
			return err
		}
		c.Created = t
	}
	c.Created = c.Created.UTC()
	return nil
}

// labels are the config's labels: Version, Source and Revision under their
// keys (Source and Revision only when set) and the extra Labels, which
// withDefaults has kept from redefining the three.
func (c ImageConfig) labels() map[string]string {
	labels := map[string]string{LabelVersion: c.Version}
	if c.Source != "" {
		labels[LabelSource] = c.Source
	}
	if c.Revision != "" {
		labels[LabelRevision] = c.Revision
	}
	for k, v := range c.Labels {
		labels[k] = v
	}
	return labels
}
