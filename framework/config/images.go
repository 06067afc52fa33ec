package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Where Istio's images come from, for clusters that cannot pull
// docker.io/istio: a private mirror (-istio-hub, -istio-tag), or image
// archives loaded into the nodes (-image-archives; pushed to
// -image-registry where one is given).

// hubPattern is an image repository prefix as Istio's charts join it with
// "/<image>:<tag>": a registry host (optional port) and path, lower case.
var hubPattern = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)

// tagPattern is an OCI image tag.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// CheckIstioHub validates an -istio-hub value; the error names the flag.
func CheckIstioHub(hub string) error {
	if !hubPattern.MatchString(hub) {
		return fmt.Errorf("-istio-hub=%q is not an image repository prefix; accepted: e.g. docker.io/istio, localhost/istio, registry.example.com:5000/mirror/istio (lower case, no tag)", hub)
	}
	return nil
}

// CheckIstioTag validates an -istio-tag value.
func CheckIstioTag(tag string) error {
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("-istio-tag=%q is not an image tag; accepted: letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-', e.g. 1.30.3-dev", tag)
	}
	return nil
}

// registerImageFlags defines the image source flags.
func registerImageFlags(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.IstioHub, "istio-hub", "", "registry prefix of Istio's images (Helm global.hub), e.g. a private mirror; default docker.io/istio")
	fs.StringVar(&c.IstioTag, "istio-tag", "", "tag of Istio's images (Helm global.tag); default the -istio-version")
	fs.StringVar(&c.RegistryCA, "image-registry-ca", "", "PEM file of the CA that signed -image-registry's TLS certificate, when this machine does not trust it (the nodes must trust it too)")
	fs.StringVar(&c.ImageArchives, "image-archives", "", "directory of image archives (*.tar, e.g. make istio-images' bin/istio/images) loaded into the nodes before Istio is installed, or pushed to -image-registry")
}

// validateImageFlags checks the image source flags; an empty -istio-tag
// stays empty and means the -istio-version.
func (c *Config) validateImageFlags(bad func(string, ...any)) {
	if c.IstioHub != "" {
		if err := CheckIstioHub(c.IstioHub); err != nil {
			bad("%v", err)
		}
	}
	if c.IstioTag != "" {
		if err := CheckIstioTag(c.IstioTag); err != nil {
			bad("%v", err)
		}
	}
	if c.RegistryCA != "" {
		if c.Registry == "" {
			bad("-image-registry-ca=%q without -image-registry: the CA is for the registry images are pushed to", c.RegistryCA)
		} else if b, err := os.ReadFile(c.RegistryCA); err != nil || !strings.Contains(string(b), "-----BEGIN CERTIFICATE-----") {
			bad("-image-registry-ca=%q is not a readable PEM file; accepted: a file of one or more \"-----BEGIN CERTIFICATE-----\" blocks", c.RegistryCA)
		}
	}
	if c.Registry != "" {
		if err := CheckIstioHub(c.Registry); err != nil {
			bad("-image-registry=%q is not a registry host and optional path; accepted: e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com, registry.example.com:5000/mirror (lower case, no scheme, no tag)", c.Registry)
		}
	}
	if c.ImageArchives == "" {
		return
	}
	st, err := os.Stat(c.ImageArchives)
	if err != nil || !st.IsDir() {
		bad("-image-archives=%q is not a directory; accepted: a directory of docker image archives (*.tar)", c.ImageArchives)
		return
	}
	if tars, _ := filepath.Glob(filepath.Join(c.ImageArchives, "*.tar")); len(tars) == 0 {
		bad("-image-archives=%q holds no *.tar image archive (make istio-images writes them to bin/istio/images)", c.ImageArchives)
	}
	if c.Provider == "existing" && c.Registry == "" {
		bad("-image-archives with -provider=existing needs -image-registry: an existing cluster's nodes cannot be loaded from here, so the archives are pushed")
	}
}
