# make demo: the main job on the local cluster (issue 7). It runs `make
# cluster` first (safe on a running cluster), then hack/demo (bin/lhdemo):
# two 3-replica volumes attached with frontends nbd and iscsi, data sets and
# an ext4 filesystem written through them, a replica process killed and
# rebuilt, every checksum verified. Needs root. The cluster stays up
# (`make cluster-down` removes it). DEMO_FLAGS: e.g. -skip-fs, -data-mib 16.
DEMO_FLAGS ?=
# When make started: the demo prints the total time, packages, builds and
# cluster included (from cold: the time to a first demo).
DEMO_T0 := $(shell date +%s)

.PHONY: demo lhdemo
lhdemo: ## build bin/lhdemo (the program behind make demo)
	go build -o $(BIN)/lhdemo ./hack/demo

demo: cluster lhdemo ## the main job: a replicated volume doing real I/O on the local cluster, surviving a replica kill
	KUBECTL=$(TESTBIN_ASSETS)/kubectl $(BIN)/lhdemo --kubeconfig $(CLUSTER_STATE_DIR)/kubeconfig \
	  --manifest examples/volume.yaml --node node-1 $(DEMO_FLAGS)
	@echo "make demo: $$(( $$(date +%s) - $(DEMO_T0) ))s in all (packages, builds, cluster and demo)"
