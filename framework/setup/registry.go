package setup

import (
	"context"
	"fmt"
	"time"

	"github.com/meshclaims/meshclaims/framework/images"
)

// registryCheckTimeout bounds the push check: an unreachable or refusing
// registry must end the run in seconds, before the cluster is touched.
const registryCheckTimeout = 15 * time.Second

// pushOptions are the options every push of the run uses: the default
// keychain (DOCKER_CONFIG or ~/.docker/config.json, and credential helpers)
// and, for a private CA, a transport that trusts -image-registry-ca.
func (s *Suite) pushOptions() (images.PushOptions, error) {
	if s.Cfg.RegistryCA == "" {
		return images.PushOptions{}, nil
	}
	tr, err := images.TransportWithCA(s.Cfg.RegistryCA)
	if err != nil {
		return images.PushOptions{}, fmt.Errorf("-image-registry-ca=%q: %w", s.Cfg.RegistryCA, err)
	}
	return images.PushOptions{Transport: tr}, nil
}

// checkRegistry asks -image-registry, before any cluster work and before
// anything is built, whether the run's credentials may push there: a wrong
// password, an unreachable host or an untrusted certificate ends the run
// at once, with nothing created anywhere.
func (s *Suite) checkRegistry(ctx context.Context) error {
	if s.Cfg.Registry == "" {
		return nil
	}
	opts, err := s.pushOptions()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, registryCheckTimeout)
	defer cancel()
	repo := s.Cfg.Registry + "/meshclaims/workload"
	if err := images.CheckPush(ctx, repo, opts); err != nil {
		return fmt.Errorf("-image-registry=%q: %w", s.Cfg.Registry, err)
	}
	s.logf("image registry: %s accepts pushes with the configured credentials", s.Cfg.Registry)
	return nil
}
