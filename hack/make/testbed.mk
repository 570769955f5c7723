# Test bed: control-plane binaries for integration tests (make testbin; used by
# testbed/testenv) and the local cluster (cluster.mk). Binaries are built from the Go module proxy by the separate
# modules under hack/testbin/ and cached in $(CACHE_DIR), keyed by version.

# KUBEBUILDER_ASSETS for envtest: etcd, kube-apiserver, kubectl, kube-controller-manager,
# kube-scheduler (symlinks into the versioned cache dirs).
TESTBIN_ASSETS := $(shell hack/testbin/build.sh --assets-dir "$(CACHE_DIR)")

TEST_DEPS += testbin
TEST_ENV  += KUBEBUILDER_ASSETS=$(TESTBIN_ASSETS)

.PHONY: testbin testbin-env
testbin: ## build or reuse etcd, kube-apiserver, KCM, scheduler, kubectl in $(CACHE_DIR)
	@hack/testbin/build.sh "$(CACHE_DIR)"

testbin-env: ## print the export line for running integration tests by hand (after make testbin)
	@echo "export KUBEBUILDER_ASSETS=$(TESTBIN_ASSETS)"

# Debian packages of .ci/packages (containerd, runc, CNI plugins, iptables,
# conntrack, the I/O clients, ...): installed when missing (as root), else
# one line naming them and the command that installs them.
.PHONY: packages
packages: ## install the Debian packages the test bed needs (.ci/packages), as root
	@hack/cluster/packages.sh .ci/packages

TEST_DEPS += packages
