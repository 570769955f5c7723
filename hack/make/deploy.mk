# Installation artefacts (issue 7): the Helm chart (chart/), the manifest
# rendered from it (deploy/longhorn.yaml) and the image (package/Dockerfile).
# The chart is rendered with the Helm Go library in the separate module
# hack/chart, so Helm never enters the longhorn binary's dependencies.
#
#   make manifests                                  # regenerate (also part of make generate)
#   make manifests LONGHORN_IMAGE=reg/lh LONGHORN_IMAGE_TAG=v1.2.3   # a manifest for another image
#   make image                                      # docker build the image
LONGHORN_IMAGE     ?= longhornio/longhorn
# Empty: the chart's appVersion (chart/Chart.yaml).
LONGHORN_IMAGE_TAG ?=
CHART_APP_VERSION  := $(shell sed -n 's/^appVersion: *//p' chart/Chart.yaml)

GENERATE_STEPS += manifests
TEST_STEPS     += test-chart

.PHONY: manifests test-chart image
manifests: ## render chart/ into deploy/longhorn.yaml (LONGHORN_IMAGE, LONGHORN_IMAGE_TAG); refresh the chart's generated parts
	cd hack/chart && go run -mod=mod ./cmd/gen -repo ../.. \
		$(if $(filter-out longhornio/longhorn,$(LONGHORN_IMAGE)),-image $(LONGHORN_IMAGE)) \
		$(if $(LONGHORN_IMAGE_TAG),-tag $(LONGHORN_IMAGE_TAG))

test-chart: ## chart tests: settings mapping, rendering vs deploy/longhorn.yaml, RBAC vs the manager's client calls
	cd hack/chart && go test -mod=mod -count=1 ./...

image: ## docker build longhornio/longhorn:<tag> from package/Dockerfile
	docker build -f package/Dockerfile \
		--build-arg VERSION=$(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION)) \
		--build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) \
		-t $(LONGHORN_IMAGE):$(or $(LONGHORN_IMAGE_TAG),$(CHART_APP_VERSION)) .
# -mod=mod: hack/chart replaces the root module, so a change of the root
# go.mod (new dependency) must not break these targets; Go records what it
# needs in hack/chart/go.mod, and make verify shows it for committing.
