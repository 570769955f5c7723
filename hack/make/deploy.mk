# Installation artefacts (issue 7): the Helm chart (chart/), the manifest
# rendered from it (deploy/longhorn.yaml) and the image (package/Dockerfile).
# The chart is rendered with the Helm Go library in the separate module
# hack/chart, so Helm never enters the longhorn binary's dependencies.
#
#   make manifests                                  # regenerate (also part of make generate)
#   make manifests LONGHORN_IMAGE=reg/lh LONGHORN_IMAGE_TAG=v1.2.3   # a manifest for another image
#   make image                                      # bin/images/longhorn.oci.tar, no Docker (hack/image)
#   make image-docker                               # docker build -f package/Dockerfile (needs a Docker engine)
LONGHORN_IMAGE     ?= longhornio/longhorn
# Empty: the chart's appVersion (chart/Chart.yaml).
LONGHORN_IMAGE_TAG ?=
CHART_APP_VERSION  := $(shell sed -n 's/^appVersion: *//p' chart/Chart.yaml)

GENERATE_STEPS += manifests
TEST_STEPS     += test-chart test-image test-helm

IMAGE_TAG      := $(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION))
IMAGE_REF      := $(LONGHORN_IMAGE):$(IMAGE_TAG)
IMAGE_ARCHIVE  := $(BIN)/images/longhorn.oci.tar
# Debian mirror of the image's base layer (debootstrap).
DEBIAN_MIRROR  ?= http://deb.debian.org/debian

# The real helm CLI, built from the module proxy (hack/helm), cached by version.
HELM := $(shell hack/helm/build.sh --path "$(CACHE_DIR)")
# Values file of make cluster-helm (empty: the chart's defaults).
HELM_VALUES ?=

.PHONY: manifests test-chart image image-binary image-docker test-image helm cluster-helm test-helm
manifests: ## render chart/ into deploy/longhorn.yaml (LONGHORN_IMAGE, LONGHORN_IMAGE_TAG); refresh the chart's generated parts
	cd hack/chart && go run -mod=mod ./cmd/gen -repo ../.. \
		$(if $(filter-out longhornio/longhorn,$(LONGHORN_IMAGE)),-image $(LONGHORN_IMAGE)) \
		$(if $(LONGHORN_IMAGE_TAG),-tag $(LONGHORN_IMAGE_TAG))

test-chart: ## chart tests: settings mapping, rendering vs deploy/longhorn.yaml, RBAC vs the manager's client calls
	cd hack/chart && go test -mod=mod -count=1 ./...

# The image's binary, built like bin/longhorn (so it reuses make build's
# compile cache and only links again) without debug info; its version is the
# image tag and its build date the commit's, so an unchanged tree links
# nothing on a warm build. The image is Debian bookworm like this machine;
# hack/image refuses a binary that needs a newer glibc than the image has:
# then build it static with IMAGE_CGO=0 (a full recompile).
IMAGE_CGO        ?=
IMAGE_BUILD_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
IMAGE_BINARY     ?= $(BIN)/images/longhorn
image-binary:
	$(if $(IMAGE_CGO),CGO_ENABLED=$(IMAGE_CGO)) go build -o $(IMAGE_BINARY) \
		-ldflags "-s -w -X $(MODULE)/meta.Version=$(IMAGE_TAG) -X $(MODULE)/meta.GitCommit=$(GIT_COMMIT) -X $(MODULE)/meta.BuildDate=$(or $(IMAGE_BUILD_DATE),$(BUILD_DATE))" .

image: image-binary ## build $(LONGHORN_IMAGE):<tag> into bin/images/longhorn.oci.tar (debootstrap base cached in CACHE_DIR; root)
	cd hack/image && go run -mod=mod . -binary $(IMAGE_BINARY) -packages $(CURDIR)/package/node-packages.txt \
		-ref $(IMAGE_REF) -out $(IMAGE_ARCHIVE) -cache $(CACHE_DIR) -mirror $(DEBIAN_MIRROR) -revision $(GIT_COMMIT) \
		$(foreach b,$(IMAGE_EXTRA_BINS),-extra-bin $(b))

# Version N+1 of test-helm's upgrade test (TestHelmUpgradeLiveEngines): the
# image binary linked again (no compile: make image's build cache) with the
# version IMAGE_NEXT_TAG, in an image of that tag over the same cached base
# layer. Default: the tag with ".1" appended (v0.1.0-dev -> v0.1.0-dev.1, a
# later version on the supported upgrade path).
IMAGE_NEXT_TAG     ?= $(IMAGE_TAG).1
IMAGE_NEXT_ARCHIVE := $(BIN)/images/longhorn-next.oci.tar
image-next: image ## build $(LONGHORN_IMAGE):$(IMAGE_NEXT_TAG), the same source as make image with another version, into bin/images/longhorn-next.oci.tar (root)
	$(MAKE) --no-print-directory image IMAGE_TAG=$(IMAGE_NEXT_TAG) IMAGE_ARCHIVE=$(IMAGE_NEXT_ARCHIVE) IMAGE_BINARY=$(BIN)/images/longhorn-next

image-docker: ## docker build longhornio/longhorn:<tag> from package/Dockerfile (needs a Docker engine)
	docker build -f package/Dockerfile \
		--build-arg VERSION=$(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION)) \
		--build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) \
		-t $(LONGHORN_IMAGE):$(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION)) .
# -mod=mod: hack/chart replaces the root module, so a change of the root
# go.mod (new dependency) must not break these targets; Go records what it
# needs in hack/chart/go.mod, and make verify shows it for committing.

test-image: image ## image tests: build it, import it into a private containerd, run longhorn --version and the node tools (root)
	cd hack/image && LONGHORN_IMAGE_ARCHIVE=$(IMAGE_ARCHIVE) LONGHORN_IMAGE_REF=$(IMAGE_REF) $(TEST_ENV) \
		go test -mod=mod -count=1 -v -run . ./... 2>&1 | grep -v '^=== RUN' ; exit $${PIPESTATUS[0]}

helm: ## build or reuse the real helm CLI in $(CACHE_DIR)/helm-<version>
	@hack/helm/build.sh "$(CACHE_DIR)"

cluster-helm: helm ## helm upgrade --install chart/ on the running local cluster (HELM_VALUES=file)
	$(HELM) upgrade --install longhorn chart/ -n longhorn-system --create-namespace --wait --timeout 5m \
		--kubeconfig $(CLUSTER_STATE_DIR)/kubeconfig $(if $(HELM_VALUES),-f $(HELM_VALUES))

test-helm: build lhcluster lhpause testbin helm $(CLUSTER_IMAGE_DEPS) image-next ## real helm installs Longhorn's values on a local real-node cluster (lhimg, 10.99.40.0/24, pods 10.102.0.0/16); every setting reaches its object (root)
	$(TEST_ENV) LONGHORN_HELM_E2E=1 LONGHORN_HELM=$(HELM) LONGHORN_BINARY=$(BIN)/longhorn LHCLUSTER_BINARY=$(BIN)/lhcluster \
		LHPAUSE_BINARY=$(BIN)/lhpause LONGHORN_IMAGE_ARCHIVE=$(abspath $(CLUSTER_IMAGE)) \
		LONGHORN_NEXT_IMAGE_ARCHIVE=$(IMAGE_NEXT_ARCHIVE) LONGHORN_NEXT_IMAGE_TAG=$(IMAGE_NEXT_TAG) \
		go test -count=1 -timeout 30m -v ./test/helm/ 2>&1 | grep -v '^=== RUN'; exit $${PIPESTATUS[0]}
