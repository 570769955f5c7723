# Local cluster (testbed/cluster, command hack/cluster -> bin/lhcluster). Needs root
# (network and mount namespaces, mounts, cgroups). Re-running `make cluster` on a
# running cluster keeps what runs and completes the rest.
#
# CLUSTER_NODE_MODE=containerd (default): real nodes, each running containerd +
# runc, the CNI plugins, kubelet and kube-proxy; the product runs from its image
# (bin/images/longhorn.oci.tar of `make image` when present, else a small image
# holding a static bin/longhorn, built here). CLUSTER_NODE_MODE=agent: the
# faster node agent (pods as host processes, no containers).
CLUSTER_NAME      ?= lh
CLUSTER_NODES     ?= 3
CLUSTER_SUBNET    ?= 10.99.0.0/24
CLUSTER_SVC_CIDR  ?= 10.99.1.0/24
CLUSTER_POD_CIDR  ?= 10.100.0.0/16
CLUSTER_NODE_MODE ?= containerd
# CLUSTER_STORAGE_SUBNET=10.99.32.0/24: a storage network on a second bridge
# <name>br1, reached through the test bed's Multus-compatible meta-plugin
# (testbed/multus, bin/lhmultus); see README "Storage network".
CLUSTER_STORAGE_SUBNET ?=
CLUSTER_STATE_DIR ?= $(CACHE_DIR)/cluster-$(CLUSTER_NAME)
# How the product is installed: Helm (chart/ with hack/cluster/values.yaml, the
# default), or CLUSTER_MANIFEST=deploy/longhorn.yaml for kubectl apply.
CLUSTER_MANIFEST  ?=
CLUSTER_VALUES    ?= hack/cluster/values.yaml
CLUSTER_FLAGS      = --name $(CLUSTER_NAME) --nodes $(CLUSTER_NODES) --subnet $(CLUSTER_SUBNET) \
                     --service-cidr $(CLUSTER_SVC_CIDR) --pod-cidr $(CLUSTER_POD_CIDR) \
                     --node-mode $(CLUSTER_NODE_MODE) --state-dir $(CLUSTER_STATE_DIR) \
                     $(if $(CLUSTER_STORAGE_SUBNET),--storage-subnet $(CLUSTER_STORAGE_SUBNET) --multus-binary $(BIN)/lhmultus)
# The product image's tag: the chart's appVersion (what deploy/longhorn.yaml runs).
LONGHORN_IMAGE_TAG ?= $(shell awk '$$1=="appVersion:" {print $$2; exit}' chart/Chart.yaml)
# The product image of `make image` (hack/make/deploy.mk). CLUSTER_IMAGE=bin/images/longhorn-dev.oci.tar
# uses instead a static bin/longhorn in an otherwise empty image (no debootstrap;
# enough for manager, instance manager and engine, no node tools).
CLUSTER_IMAGE     ?= $(BIN)/images/longhorn.oci.tar

.PHONY: lhcluster lhpause lhmultus cluster cluster-down cluster-status cluster-image-dev
lhcluster: ## build bin/lhcluster (local cluster tool and node agent)
	go build -o $(BIN)/lhcluster ./hack/cluster

lhpause:
	CGO_ENABLED=0 go build -ldflags '-s -w' -o $(BIN)/lhpause ./hack/cluster/pause

lhmultus: ## build bin/lhmultus (the test bed's Multus-compatible CNI meta-plugin)
	CGO_ENABLED=0 go build -ldflags '-s -w' -o $(BIN)/lhmultus ./testbed/multus/cmd/lhmultus

# A small product image for real nodes when `make image` has not run.
cluster-image-dev: lhcluster
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/images/longhorn-static .
	$(BIN)/lhcluster image --ref longhornio/longhorn:$(LONGHORN_IMAGE_TAG) --out $(BIN)/images/longhorn-dev.oci.tar \
	  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	  --dir /tmp --dir /var/lib/longhorn --dir /var/run --dir /etc $(BIN)/images/longhorn-static=/usr/local/bin/longhorn

CLUSTER_IMAGE_DEPS = $(if $(filter %longhorn-dev.oci.tar,$(CLUSTER_IMAGE)),cluster-image-dev,image)

cluster: packages build lhcluster lhpause $(if $(CLUSTER_STORAGE_SUBNET),lhmultus) testbin $(if $(CLUSTER_MANIFEST),,helm) $(if $(filter containerd,$(CLUSTER_NODE_MODE)),$(CLUSTER_IMAGE_DEPS)) ## start the local cluster (CLUSTER_NODES=3) and helm-install the product (CLUSTER_MANIFEST=deploy/longhorn.yaml: kubectl apply)
	$(BIN)/lhcluster up $(CLUSTER_FLAGS) --assets $(TESTBIN_ASSETS) \
	  --pause-binary $(BIN)/lhpause --image-archive $(CLUSTER_IMAGE) \
	  --image 'longhornio/longhorn:*=$(BIN)/longhorn' \
	  $(if $(CLUSTER_MANIFEST),--manifest $(CLUSTER_MANIFEST),--helm $(HELM) --chart chart --values $(CLUSTER_VALUES))

cluster-down: ## remove every process, container, netns, mount, loop device, iptables rule and cgroup of the local cluster
	@if [ -x $(BIN)/lhcluster ]; then $(BIN)/lhcluster down $(CLUSTER_FLAGS); \
	else go run ./hack/cluster down $(CLUSTER_FLAGS); fi

cluster-status: ## print the local cluster's status table
	@$(BIN)/lhcluster status $(CLUSTER_FLAGS)
