# Local cluster (testbed/cluster, command hack/cluster -> bin/lhcluster). Needs root
# (network namespaces, mounts, cgroups). Re-running `make cluster` on a running
# cluster keeps what runs and completes the rest.
CLUSTER_NAME      ?= lh
CLUSTER_NODES     ?= 3
CLUSTER_SUBNET    ?= 10.99.0.0/24
CLUSTER_SVC_CIDR  ?= 10.99.1.0/24
CLUSTER_STATE_DIR ?= $(CACHE_DIR)/cluster-$(CLUSTER_NAME)
CLUSTER_MANIFEST  ?= deploy/longhorn.yaml
CLUSTER_FLAGS      = --name $(CLUSTER_NAME) --nodes $(CLUSTER_NODES) --subnet $(CLUSTER_SUBNET) \
                     --service-cidr $(CLUSTER_SVC_CIDR) --state-dir $(CLUSTER_STATE_DIR)

.PHONY: lhcluster cluster cluster-down cluster-status
lhcluster: ## build bin/lhcluster (local cluster tool and node agent)
	go build -o $(BIN)/lhcluster ./hack/cluster

cluster: build lhcluster testbin ## start the local cluster (CLUSTER_NODES=3), apply deploy/longhorn.yaml if present
	$(BIN)/lhcluster up $(CLUSTER_FLAGS) --assets $(TESTBIN_ASSETS) \
	  --image 'longhornio/longhorn:*=$(BIN)/longhorn' --manifest $(CLUSTER_MANIFEST)

cluster-down: ## remove every process, netns, mount, loop device and cgroup of the local cluster
	@if [ -x $(BIN)/lhcluster ]; then $(BIN)/lhcluster down $(CLUSTER_FLAGS); \
	else go run ./hack/cluster down $(CLUSTER_FLAGS); fi

cluster-status: ## print the local cluster's status table
	@$(BIN)/lhcluster status $(CLUSTER_FLAGS)
