# archgate — build, test and run the simulator. Needs only Go: everything
# else (kube-apiserver, etcd, controller-gen, kustomize) is built from pinned
# Go module sources into the git-ignored bin/.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

export GOTOOLCHAIN := local
GO ?= go
MODULES := operator fakeregistry simulator
# containers/image builds without cgo or system libraries with these tags.
BUILD_TAGS := containers_image_openpgp,containers_image_storage_stub,containers_image_docker_daemon_stub
export GOFLAGS := -tags=$(BUILD_TAGS)
export ARCHGATE_ASSETS := $(CURDIR)/bin/k8s

NAME ?= smoke
# The release version stamped into archgate's binaries (archgate version, archgate_build_info);
# make release needs it set.
VERSION ?= 0.0.0-dev

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: control-plane
control-plane: ## Build kube-apiserver and etcd from module sources into bin/k8s (skipped when current).
	@hack/control-plane.sh

CONTROLLER_GEN := cd simulator && $(GO) tool controller-gen
API_PATHS := paths=../operator/api/...

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs from operator/api (controller-gen, pinned in simulator/go.mod).
	$(CONTROLLER_GEN) object:headerFile=../operator/hack/boilerplate.go.txt $(API_PATHS)
	$(CONTROLLER_GEN) crd $(API_PATHS) output:crd:artifacts:config=../operator/config/crd/bases

.PHONY: verify-generated
verify-generated: ## Fail when checked-in generated files differ from what the generators produce.
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	cp -r operator/api operator/config $$tmp/; cp -r deploy/helm $$tmp/helm; cp -r bundle $$tmp/bundle; cp docs/reference.md $$tmp/reference.md; \
	$(MAKE) --no-print-directory manifests >/dev/null; \
	if ! diff -ru $$tmp/api operator/api || ! diff -ru $$tmp/config operator/config || ! diff -ru $$tmp/helm deploy/helm || ! diff -ru $$tmp/bundle bundle || ! diff -u $$tmp/reference.md docs/reference.md; then \
		rm -rf operator/api operator/config deploy/helm bundle; cp -r $$tmp/api $$tmp/config operator/; cp -r $$tmp/helm deploy/helm; cp -r $$tmp/bundle bundle; cp $$tmp/reference.md docs/reference.md; \
		echo "generated files are stale: run 'make manifests' and commit the result"; exit 1; \
	fi; echo "generated files are up to date"
	$(GO) run ./simulator/cmd/simulator index --reports reports --check

.PHONY: index
index: ## Write each scenario's report index (reports/<scenario>/index.md and trend.svg, reports/index.md) from the committed reports.
	$(GO) run ./simulator/cmd/simulator index --reports reports

.PHONY: manifests
manifests: generate ## Regenerate deepcopy, CRDs, the configuration reference docs/reference.md (from the CRDs), the operator's RBAC (operator/config/rbac, from +kubebuilder:rbac markers), the Helm chart and the OLM bundle.
	$(GO) run ./operator/hack/crdref operator/config/crd/bases docs/reference.md
	$(CONTROLLER_GEN) rbac:roleName=archgate-operator paths=../operator/internal/controller/operator/... output:rbac:artifacts:config=../operator/config/rbac
	$(MAKE) --no-print-directory chart
	$(MAKE) --no-print-directory bundle VERSION=$(BUNDLE_VERSION) IMG=$(BUNDLE_IMG)

# Helm (make test-chart, make e2e), and the program that generates the chart from deploy/.
HELM := bin/helm
HELM_MODULE := cd hack/helm && GOWORK=off GOFLAGS=
$(HELM): hack/helm/go.mod hack/helm/go.sum
	$(HELM_MODULE) $(GO) build -o ../../$(HELM) helm.sh/helm/v4/cmd/helm

.PHONY: chart
chart: ## Regenerate the Helm chart deploy/helm/archgate from the kustomize manifests in deploy/ (hack/helm/chart).
	$(HELM_MODULE) $(GO) run ./chart generate $(CURDIR)

.PHONY: test-chart
test-chart: $(HELM) ## Lint the Helm chart and check that it renders what kustomize builds from each overlay, and the values a user sets.
	$(HELM) lint --strict deploy/helm/archgate
	$(HELM_MODULE) HELM=$(CURDIR)/$(HELM) $(GO) test -count=1 ./chart/

OVERLAY ?= kubernetes
IMG ?= ghcr.io/archgate/archgate:latest

# The OLM bundle (bundle/), generated from deploy/overlays/openshift by hack/bundle/gen, a
# build-only module outside go.work: the operator framework's validation library needs other
# Kubernetes module versions than the operator's. The committed bundle is the development one
# (BUNDLE_VERSION, BUNDLE_IMG); make release writes the release's, pinned by digest.
BUNDLE_MODULE := cd hack/bundle && GOWORK=off GOFLAGS=
BUNDLE_VERSION := 0.0.0-dev
BUNDLE_IMG := ghcr.io/archgate/archgate:latest

.PHONY: bundle
bundle: ## Regenerate the OLM bundle bundle/ from deploy/overlays/openshift (VERSION and IMG say which release; the committed one is make bundle with the defaults).
	$(BUNDLE_MODULE) VERSION=$(VERSION) IMG=$(IMG) $(GO) run ./gen generate $(CURDIR)

.PHONY: test-bundle
test-bundle: ## Validate bundle/ with the operator framework's validators (default bundle, OperatorHub, categories, capabilities, objects, deprecated APIs, good practices).
	$(BUNDLE_MODULE) $(GO) test -count=1 ./gen/

.PHONY: deploy
deploy: ## Install the operator into the current kubeconfig's cluster (OVERLAY=kubernetes|openshift|cert-manager|monitoring|openshift-monitoring, IMG=<image>).
	@OVERLAY=$(OVERLAY) IMG=$(IMG) hack/deploy.sh apply

.PHONY: undeploy
undeploy: ## Uninstall safely: placement configurations first (gated pods are released), then the operator and CRDs.
	@OVERLAY=$(OVERLAY) IMG=$(IMG) hack/deploy.sh delete

.PHONY: build
build: ## Build every module in the workspace and each module on its own (GOWORK=off).
	$(GO) build work
	@for m in $(MODULES); do echo "GOWORK=off go build ./... in $$m"; (cd $$m && GOWORK=off $(GO) build ./...); done

.PHONY: vet
vet: ## gofmt check and go vet of the workspace.
	@files=$$(gofmt -l $(MODULES)); if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi
	$(GO) vet work

.PHONY: test-unit
test-unit: ## Unit tests of all modules with the race detector.
	$(GO) test -race -count=1 work

.PHONY: test-integration
# Packages with integration-tagged files; the others' tests already ran in test-unit.
INTEGRATION_PKGS = $(sort $(patsubst %/,./%,$(dir $(shell grep -rl --include='*.go' '^//go:build integration' $(MODULES)))))

test-integration: control-plane cluster-components ## Integration tests (real apiserver, etcd, scheduler; kube-controller-manager from bin/cluster for the simulator's cluster-like control plane) of all modules.
	$(GO) test -tags=$(BUILD_TAGS),integration -count=1 -timeout=30m $(INTEGRATION_PKGS)

# promtool, pinned in hack/promtool/go.mod (a build-only module outside the workspace), built
# once into bin/ and rebuilt when the pin changes. remove_all_sd leaves out the service discovery
# plugins promtool's rule tests do not use (one of them needs a module the proxy refuses).
PROMTOOL := bin/promtool
RULESFILE := bin/rulesfile
MONITORING := deploy/components/monitoring
$(PROMTOOL) $(RULESFILE): hack/promtool/go.mod hack/promtool/go.sum hack/promtool/rulesfile/main.go
	cd hack/promtool && GOWORK=off GOFLAGS=-tags=remove_all_sd $(GO) build -o ../../$(PROMTOOL) github.com/prometheus/prometheus/cmd/promtool
	cd hack/promtool && GOWORK=off GOFLAGS= $(GO) build -o ../../$(RULESFILE) ./rulesfile

.PHONY: test-alerts
test-alerts: $(PROMTOOL) $(RULESFILE) ## Check the PrometheusRule of deploy/components/monitoring and run its promtool unit tests (hack/promtool/alerts.test.yaml).
	@mkdir -p bin/alerts
	$(RULESFILE) $(MONITORING)/prometheusrule.yaml > bin/alerts/archgate.rules.yaml
	$(PROMTOOL) check rules bin/alerts/archgate.rules.yaml
	$(PROMTOOL) test rules hack/promtool/alerts.test.yaml

# The OCI distribution-spec conformance suite, pinned twice in build-only modules outside go.work:
# hack/conformance/ginkgo (the Ginkgo suite the spec shipped through v1.1.1, a test package built
# with go test -c) and hack/conformance/main (the spec's main branch, a program). Built once into
# bin/ and rebuilt when a pin changes.
CONFORMANCE_GINKGO := bin/conformance-ginkgo.test
CONFORMANCE_MAIN := bin/conformance-main
$(CONFORMANCE_GINKGO): hack/conformance/ginkgo/go.mod hack/conformance/ginkgo/go.sum
	cd hack/conformance/ginkgo && GOWORK=off GOFLAGS= $(GO) test -c -o ../../../$@ github.com/opencontainers/distribution-spec/conformance
$(CONFORMANCE_MAIN): hack/conformance/main/go.mod hack/conformance/main/go.sum
	cd hack/conformance/main && GOWORK=off GOFLAGS= $(GO) build -o ../../../$@ github.com/opencontainers/distribution-spec/conformance

.PHONY: test-conformance
test-conformance: $(CONFORMANCE_GINKGO) $(CONFORMANCE_MAIN) ## Both pinned distribution-spec conformance suites against `fakeregistry serve --writable` (no auth, basic, bearer): counts per configuration, results in bin/conformance/.
	cd fakeregistry && CONFORMANCE_GINKGO=$(CURDIR)/$(CONFORMANCE_GINKGO) CONFORMANCE_MAIN=$(CURDIR)/$(CONFORMANCE_MAIN) \
		CONFORMANCE_RESULTS=$(CURDIR)/bin/conformance \
		$(GO) test -tags=$(BUILD_TAGS),conformance -count=1 -v -run '^TestConformance$$' ./cmd/fakeregistry/

.PHONY: test
test: build vet verify-generated test-unit test-alerts test-chart test-bundle test-conformance test-integration ## Everything CI runs: build, vet, unit (race), alert rule, chart, OLM bundle, registry conformance and integration tests.

.PHONY: bench
bench: control-plane ## Benchmarks (control plane, scheduler, registry, controller, admission policy).
	$(GO) test -tags=$(BUILD_TAGS),integration -run='^$$' -bench=. -benchtime=1x -count=1 -timeout=60m work

IMAGE_TAG ?= latest
.PHONY: image
image: ## Build archgate's multi-arch OCI image index (linux/amd64, arm64, ppc64le, s390x) into the OCI layout bin/image, without a container engine; reproducible per commit.
	@IMAGE_TAG=$(IMAGE_TAG) VERSION=$(VERSION) hack/image.sh

.PHONY: release
release: $(HELM) ## Every artifact of release VERSION (x.y.z) into bin/release/: binaries, the image as an OCI archive, install.yaml and the Helm chart pinned by digest, crds.yaml, SHA256SUMS.
	@VERSION=$(VERSION) hack/release.sh

.PHONY: push
push: image ## Push bin/image to IMG (any registry; credentials from the Docker/podman config).
	bin/image-build/archgate-image push --layout bin/image --tag $(IMAGE_TAG) $(IMG)

.PHONY: test-image
test-image: image ## archgate inspects its own image (bin/image served by the fake registry): all four architectures.
	cd operator && ARCHGATE_IMAGE_LAYOUT=$(CURDIR)/bin/image ARCHGATE_IMAGE_TAG=$(IMAGE_TAG) \
		$(GO) test -tags=$(BUILD_TAGS),image -count=1 -run '^TestInspectOwnImage$$' -v ./internal/inspect/

.PHONY: cluster-components
cluster-components: ## Build kubelet, kube-controller-manager, kube-scheduler, kube-proxy (pinned in hack/cluster-tools/go.mod) and containerd v2 into bin/cluster (skipped when current).
	@hack/cluster-components.sh

# runc and the CNI plugins come from Debian: installed with apt-get when missing (this changes
# the host's package set, once; nothing else in the cluster targets does).
CLUSTER_PACKAGES := runc containernetworking-plugins
.PHONY: cluster-packages
cluster-packages: ## Install runc and containernetworking-plugins with apt-get when missing (Debian).
	@missing=$$(for p in $(CLUSTER_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "apt-get install $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "cluster packages present ($(CLUSTER_PACKAGES))"; fi

CLUSTER_STATE ?= $(CURDIR)/bin/cluster-state
export CLUSTER_STATE
# The scenarios whose images the cluster's second registry (10.200.0.2:5001) serves, for
# make cluster-scenario (simulator run --kubeconfig against the cluster); empty: no second registry.
CLUSTER_SCENARIOS ?= smoke cluster-3k
CLUSTER_REGISTRY_CATALOG ?= $(CURDIR)/bin/cluster-catalog.yaml
.PHONY: cluster-up
cluster-up: control-plane cluster-components cluster-packages ## Start the hermetic real-node cluster (own PID/net/mount namespaces, state in CLUSTER_STATE); prints its kubeconfig. Its registry at 10.200.0.2:5001 serves the images of CLUSTER_SCENARIOS.
ifneq ($(strip $(CLUSTER_SCENARIOS)),)
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	bin/simulator catalog --out $(CLUSTER_REGISTRY_CATALOG) $(patsubst %,scenarios/%.yaml,$(CLUSTER_SCENARIOS))
	@CLUSTER_REGISTRY_CATALOG=$(CLUSTER_REGISTRY_CATALOG) hack/cluster.sh up
else
	@hack/cluster.sh up
endif

# simulator run --kubeconfig against the real-node cluster: archgate's linux/amd64 image (the
# node's architecture), imported into the node's containerd as e2e does, installed with make
# deploy; the scenario's images from the cluster's registry at 10.200.0.2:5001.
CLUSTER_SIM_IMAGE := localhost/archgate/archgate:sim
CLUSTER_SIM_REGISTRY := 10.200.0.2:5001
.PHONY: cluster-scenario
cluster-scenario: ## Run scenarios/$(NAME).yaml against the running real-node cluster (make cluster-up first; NAME among CLUSTER_SCENARIOS) and write its report under reports/$(NAME)/.
	@hack/cluster.sh status >/dev/null || { echo "no real-node cluster runs: make cluster-up"; exit 1; }
	IMAGE_TAG=sim IMAGE_PLATFORMS=linux/amd64 hack/image.sh
	bin/cluster/ctr --address $(CLUSTER_STATE)/run/containerd/containerd.sock -n k8s.io images import --base-name $(firstword $(subst :, ,$(CLUSTER_SIM_IMAGE))) bin/image.tar
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	bin/simulator run --kubeconfig $(CLUSTER_STATE)/kubeconfig --scenario scenarios/$(NAME).yaml --out reports \
		--image $(CLUSTER_SIM_IMAGE) --registry $(CLUSTER_SIM_REGISTRY) \
		--registry-ca $(CLUSTER_STATE)/certs.d/$(CLUSTER_SIM_REGISTRY)/ca.crt --registry-auth sim:archgate-sim \
		--registry-metrics unix:$(CLUSTER_STATE)/run/registry-sim-metrics.sock $(SIMFLAGS)

# The simulator against a real cluster: scenarios/fidelity.yaml in envtest and on the real-node
# cluster (started with its catalog and stopped by hack/fidelity.sh), compared side by side.
.PHONY: fidelity
fidelity: control-plane archgate cluster-components cluster-packages ## Run scenarios/fidelity.yaml in the simulator and on the real-node cluster (started and stopped here), and compare them: reports/fidelity/fidelity-<commit>-<time>.md (pods per architecture and registry requests per image identical, gate-hold p50 within 20%).
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	hack/fidelity.sh

.PHONY: cluster-down
cluster-down: ## Stop the real-node cluster by its recorded PIDs (also after a killed run) and remove its cgroups.
	@hack/cluster.sh down

.PHONY: test-realnode
test-realnode: control-plane cluster-components cluster-packages image ## Start the real-node cluster, run archgate's image on it (ServiceAccount token, kubernetes Service), stop it.
	cd operator && $(GO) test -tags=$(BUILD_TAGS),e2e -count=1 -timeout=10m -v -run '^TestRealNode$$' ./pkg/testing/realnode/

.PHONY: e2e
E2E_RELEASES := 0.1.0-e2e 0.2.0-e2e
e2e: control-plane cluster-components cluster-packages $(HELM) ## End-to-end tests on the real-node cluster (started when not running; stop it with make cluster-down): make deploy, placement, make undeploy; two releases installed, upgraded and uninstalled with kubectl and with helm.
	@for v in $(E2E_RELEASES); do \
		VERSION=$$v IMAGE_REPO=localhost/archgate/archgate RELEASE_DIR=bin/release-e2e/$$v IMAGE_PLATFORMS=linux/amd64 CLI_PLATFORMS= hack/release.sh >/dev/null; \
	done
	@IMAGE_TAG=e2e hack/image.sh
	cd operator && $(GO) test -tags=$(BUILD_TAGS),e2e -count=1 -timeout=20m -v ./test/e2e/

.PHONY: archgate
archgate: ## Build the archgate binary into bin/archgate (the scenarios run its webhook and controller processes), stamped with VERSION.
	source hack/lib.sh && $(GO) build -ldflags "$$(archgate_ldflags $(VERSION) $$(archgate_commit))" -o bin/archgate ./operator/cmd/archgate

SIMFLAGS ?=
# CPU_LIMIT=0.85 runs a scenario on 85% of the machine's CPU (a cgroup quota, hack/cpu-limit.sh):
# the machine a slower user has.
CPU_LIMIT ?=
RUN_WRAP = $(if $(CPU_LIMIT),hack/cpu-limit.sh $(CPU_LIMIT))
.PHONY: scenario
scenario: control-plane archgate ## Run scenarios/$(NAME).yaml (default smoke), print and write a report under reports/$(NAME)/ (SIMFLAGS=--profile adds profiles; CPU_LIMIT=0.85 gives it 85% of the CPU).
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	$(RUN_WRAP) bin/simulator run --scenario scenarios/$(NAME).yaml --out reports $(SIMFLAGS)

.PHONY: repeat
repeat: control-plane archgate ## Run scenarios/$(NAME).yaml COUNT times (default 5), each with a fresh control plane, and print each figure's median and spread (CPU_LIMIT=0.85 as for scenario).
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	$(RUN_WRAP) bin/simulator repeat --scenario scenarios/$(NAME).yaml --count $(or $(COUNT),5) --out reports

SCALE_POINTS := scale-1k scale-3k scale-10k scale-30k
.PHONY: scale
scale: control-plane archgate ## Run the scale family (1k, 3k, 10k, 30k pods) and write reports/scale/ (cost per pod and gate-hold against size; fails when the cost is not flat within ±20%).
	$(GO) build -o bin/simulator ./simulator/cmd/simulator
	@for s in $(SCALE_POINTS); do bin/simulator run --scenario scenarios/$$s.yaml --out reports --quiet --progress=lines $(SIMFLAGS) || exit 1; done
	bin/simulator family --prefix scale --reports reports

.PHONY: compare
compare: control-plane ## Compare scenario NAME at git refs BASE and HEAD (default: the work tree); runs missing reports. COUNT=N runs each side N times, interleaved, and tests across runs.
	@test -n "$(BASE)" || { echo "usage: make compare NAME=<scenario> BASE=<git ref> [HEAD=<git ref>] [COUNT=<runs per side>]"; exit 2; }
	$(GO) run ./simulator/cmd/simulator compare --scenario $(NAME) --base $(BASE) $(if $(HEAD),--head $(HEAD)) $(if $(COUNT),--count $(COUNT)) --reports reports

.PHONY: smoke
smoke: control-plane ## The smoke scenario as its integration test (part of make test; under 60 s).
	$(GO) test -tags=$(BUILD_TAGS),integration -count=1 -run '^TestSmokeScenario$$' ./simulator/internal/runner/

FUZZTIME ?= 30s
FUZZ_TARGETS := operator/internal/placement:FuzzMergeRequired operator/internal/placement:FuzzMergePreferred \
	operator/internal/placement:FuzzMergeNoCommonArchitecture operator/internal/inspect:FuzzPlatformsFromIndex \
	operator/internal/webhook:FuzzSchedulingGateHandle operator/internal/credentials:FuzzParsePullSecret \
	operator/internal/inspect:FuzzValidateRegistriesConf operator/internal/inspect:FuzzParseCertificates \
	operator/internal/inspect:FuzzCanonicalReference operator/internal/knownimages:FuzzParse \
	operator/internal/webhook:FuzzAdmissionPlacement

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 30s).
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzzing $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test ./$$pkg -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=200x; \
	done

.PHONY: clean
clean: ## Remove built binaries (the next run rebuilds them).
	rm -rf bin
