# CSI (csi/, app/csi.go, engine/frontend/blockdev, test/csi): the real
# Kubernetes CSI sidecars, built from the Go module proxy by the separate
# module hack/csi-sidecars and cached in $(CACHE_DIR), keyed by go.mod/go.sum.
CSI_SIDECARS_DIR := $(shell hack/csi-sidecars/build.sh --dir "$(CACHE_DIR)")

.PHONY: csi-sidecars
csi-sidecars: ## build or reuse csi-provisioner/attacher/resizer/snapshotter and snapshot-controller in $(CACHE_DIR)
	@hack/csi-sidecars/build.sh "$(CACHE_DIR)"

# The sidecars the chart deploys go into the product image beside longhorn
# (hack/image -extra-bin), with snapshot-controller for clusters that lack
# one (Longhorn leaves it to the cluster; test/e2e deploys it from this image).
CSI_IMAGE_SIDECARS := csi-provisioner csi-attacher csi-resizer csi-snapshotter snapshot-controller
IMAGE_EXTRA_BINS += $(addprefix $(CSI_SIDECARS_DIR)/,$(CSI_IMAGE_SIDECARS))
image: csi-sidecars

# test/csi runs the real sidecars against the driver (TestSidecars*).
TEST_DEPS += csi-sidecars
TEST_ENV  += LONGHORN_CSI_SIDECARS=$(CSI_SIDECARS_DIR)
