//go:build tools

// Package deps pins the modules the design card names before the code that
// uses them lands, so parallel work shares one go.mod. Removed once unused.
package deps

import (
	_ "fortio.org/fortio/fgrpc"
	_ "fortio.org/fortio/fhttp"
	_ "fortio.org/fortio/periodic"
	_ "fortio.org/fortio/rapi"
	_ "fortio.org/fortio/stats"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "github.com/google/uuid"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "istio.io/api/networking/v1"
	_ "istio.io/client-go/pkg/apis/networking/v1"
	_ "istio.io/client-go/pkg/apis/security/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/e2e-framework/klient"
	_ "sigs.k8s.io/e2e-framework/pkg/env"
	_ "sigs.k8s.io/gateway-api/apis/v1"
	_ "sigs.k8s.io/kind/pkg/cluster"
	_ "sigs.k8s.io/yaml"
)
