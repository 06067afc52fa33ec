package images

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushOptions tune Push. The zero value pushes over HTTPS (plain HTTP for
// localhost and private-network registries, as go-containerregistry decides)
// with credentials from the default keychain (~/.docker/config.json and
// credential helpers, e.g. docker-credential-ecr-login for ECR).
type PushOptions struct {
	// Insecure allows plain HTTP to any registry.
	Insecure bool
	// Keychain resolves credentials; nil means authn.DefaultKeychain.
	Keychain authn.Keychain
	// Transport carries the requests; nil means remote.DefaultTransport.
	Transport http.RoundTripper
}

// Push uploads img to the registry named in ref (e.g.
// "123456789012.dkr.ecr.eu-west-1.amazonaws.com/meshclaims/workload:v1")
// and returns the pushed digest reference (repository@sha256:...), which is
// what a Deployment should name to run exactly this build.
func Push(ctx context.Context, img v1.Image, ref string, opts PushOptions) (name.Digest, error) {
	if img == nil {
		return name.Digest{}, fmt.Errorf("images: Push(%q): image is nil", ref)
	}
	var nameOpts []name.Option
	if opts.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := parseTag(ref, nameOpts...)
	if err != nil {
		return name.Digest{}, err
	}
	keychain := opts.Keychain
	if keychain == nil {
		keychain = authn.DefaultKeychain
	}
	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)}
	if opts.Transport != nil {
		remoteOpts = append(remoteOpts, remote.WithTransport(opts.Transport))
	}
	if err := remote.Write(tag, img, remoteOpts...); err != nil {
		return name.Digest{}, fmt.Errorf("images: pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("images: digest of %s: %w", ref, err)
	}
	return tag.Context().Digest(digest.String()), nil
}
