# API: longhorn.io/v1beta2 types -> deepcopy, clientset, listers, informers, CRD YAML.
# Generators are pinned in hack/tools/go.mod and cached in $(CACHE_DIR)/tools.
GENERATE_STEPS += generate-api

.PHONY: generate-api
generate-api: ## regenerate API deepcopy/clientset/listers/informers and k8s/crds*.yaml
	hack/gen-api.sh "$(CACHE_DIR)"

.PHONY: test-api
test-api: testbin ## API tests only: types, datastore, and the CRDs against a real kube-apiserver
	KUBEBUILDER_ASSETS=$(TESTBIN_ASSETS) LONGHORN_REQUIRE_TOOLS=1 go test -count=1 -p 1 \
		./k8s/... ./types/... ./datastore/... ./test/api/...
