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
TEST_STEPS     += test-chart test-image

IMAGE_TAG      := $(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION))
IMAGE_REF      := $(LONGHORN_IMAGE):$(IMAGE_TAG)
IMAGE_ARCHIVE  := $(BIN)/images/longhorn.oci.tar
# Debian mirror of the image's base layer (debootstrap).
DEBIAN_MIRROR  ?= http://deb.debian.org/debian

.PHONY: manifests test-chart image image-binary image-docker test-image
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
image-binary:
	$(if $(IMAGE_CGO),CGO_ENABLED=$(IMAGE_CGO)) go build -o $(BIN)/images/longhorn \
		-ldflags "-s -w -X $(MODULE)/meta.Version=$(IMAGE_TAG) -X $(MODULE)/meta.GitCommit=$(GIT_COMMIT) -X $(MODULE)/meta.BuildDate=$(or $(IMAGE_BUILD_DATE),$(BUILD_DATE))" .

image: image-binary ## build $(LONGHORN_IMAGE):<tag> into bin/images/longhorn.oci.tar (debootstrap base cached in CACHE_DIR; root)
	cd hack/image && go run -mod=mod . -binary $(BIN)/images/longhorn -packages $(CURDIR)/package/node-packages.txt \
		-ref $(IMAGE_REF) -out $(IMAGE_ARCHIVE) -cache $(CACHE_DIR) -mirror $(DEBIAN_MIRROR) -revision $(GIT_COMMIT)

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
