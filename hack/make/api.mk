# API: longhorn.io/v1beta2 types -> deepcopy, clientset, listers, informers, CRD YAML.
# Generators are pinned in hack/tools/go.mod and cached in $(CACHE_DIR)/tools.
GENERATE_STEPS += generate-api

.PHONY: generate-api
generate-api: ## regenerate API deepcopy/clientset/listers/informers and k8s/crds*.yaml
	hack/gen-api.sh "$(CACHE_DIR)"
