# End-to-end tests (issue 7, test/e2e; the PVC scenarios of issue 15 add about
# 6 min: the whole suite took 18.5 min with cluster up and down on the loaded
# 2-vCPU VM, 2026-12-02, hence the 32 min timeout): the scenarios run against a local
# cluster the test package brings up itself (testbed/cluster, name lhe2e,
# 3 nodes on 10.99.16.0/24, services 10.99.17.0/24, deploy/longhorn.yaml) and
# tears down at the end, also on failure, timeout or interrupt. Needs root.
# `make test` runs it as its last step (TEST_STEPS); plain `go test ./...`
# skips the package unless LONGHORN_E2E=1.
#
#   make e2e                          # every scenario
#   make e2e E2E_RUN=TestReplicaKill  # one scenario (go test -run)
#   make e2e E2E_KEEP=1               # reuse a running lhe2e cluster and leave it up
#   make e2e-down                     # remove it
E2E_RUN     ?=
E2E_TIMEOUT ?= 32m
E2E_KEEP    ?=
# The cluster's name and address ranges: lhe2e's (the CI's) unless an
# engineer runs the suite on their own test-bed share (GUIDE.md table), e.g.
#   make e2e E2E_NAME=lhcsi E2E_SUBNET=10.99.48.0/24 E2E_SVC_CIDR=10.99.49.0/24 E2E_POD_CIDR=10.103.0.0/16
E2E_NAME     ?= lhe2e
E2E_SUBNET   ?= 10.99.16.0/24
E2E_SVC_CIDR ?= 10.99.17.0/24
E2E_POD_CIDR ?= 10.101.0.0/16
# The storage network of TestStorageNetwork (second bridge <name>br1, no
# route off the machine, lhmultus): none = without one (the test skips).
E2E_STORAGE_SUBNET ?= 10.99.18.0/24
# LONGHORN_E2E_TIMINGS: how many times the PVC scenarios time their paths (README numbers: 10).
E2E_TIMINGS  ?=
E2E_STATE   := $(CACHE_DIR)/cluster-$(E2E_NAME)
E2E_NODE_MODE ?= containerd
E2E_CLUSTER := --name $(E2E_NAME) --state-dir $(E2E_STATE) --nodes 3 --subnet $(E2E_SUBNET) --service-cidr $(E2E_SVC_CIDR) \
               --pod-cidr $(E2E_POD_CIDR) --node-mode $(E2E_NODE_MODE)

TEST_STEPS += e2e

.PHONY: e2e e2e-down
e2e: packages build lhcluster lhpause lhmultus testbin $(CLUSTER_IMAGE_DEPS) ## end-to-end scenarios against a local 3-node cluster (real nodes) it starts and removes (root)
	@rc=0; $(TEST_ENV) LONGHORN_E2E=1 LONGHORN_BINARY=$(BIN)/longhorn LHCLUSTER_BINARY=$(BIN)/lhcluster \
	  LHPAUSE_BINARY=$(BIN)/lhpause LHMULTUS_BINARY=$(BIN)/lhmultus LONGHORN_E2E_STORAGE_SUBNET=$(E2E_STORAGE_SUBNET) LONGHORN_IMAGE_ARCHIVE=$(abspath $(CLUSTER_IMAGE)) LONGHORN_E2E_NODE_MODE=$(E2E_NODE_MODE) \
	  LONGHORN_E2E_STATE_DIR=$(E2E_STATE) LONGHORN_E2E_KEEP=$(E2E_KEEP) \
	  LONGHORN_E2E_NAME=$(E2E_NAME) LONGHORN_E2E_SUBNET=$(E2E_SUBNET) LONGHORN_E2E_SERVICE_CIDR=$(E2E_SVC_CIDR) \
	  LONGHORN_E2E_POD_CIDR=$(E2E_POD_CIDR) LONGHORN_E2E_TIMINGS=$(E2E_TIMINGS) nice -n 10 go test -count=1 -p 1 -timeout $(E2E_TIMEOUT) -v \
	  $(if $(E2E_RUN),-run '$(E2E_RUN)') ./test/e2e/... || rc=$$?; \
	if [ "$(E2E_KEEP)" != 1 ] && [ -e $(E2E_STATE)/state.json ]; then echo "== e2e: cluster $(E2E_NAME) left behind; removing it"; \
	  flock $(or $(TMPDIR),/tmp)/lhcluster-test.lock $(BIN)/lhcluster down $(E2E_CLUSTER) || rc=1; fi; \
	exit $$rc

e2e-down: lhcluster ## remove the e2e cluster (after make e2e E2E_KEEP=1)
	$(BIN)/lhcluster down $(E2E_CLUSTER)
