# iSCSI frontend (issue 4). Its tests (libiscsi tools, iscsi-test-cu against
# our target and tgtd) run in plain `go test`; tools come from .ci/packages.
# fio with the libiscsi engine for the benchmark rows is built from Debian's
# fio source and cached outside the work tree.
FIO_LIBISCSI_DIR := $(CACHE_DIR)/fio-libiscsi-3.33

.PHONY: fio-libiscsi bench-fio-libiscsi
fio-libiscsi: ## build fio with the libiscsi engine into $(CACHE_DIR) (for the iSCSI benchmark rows)
	hack/bench/build-fio-libiscsi.sh $(FIO_LIBISCSI_DIR)

# The benchmark builds it when it can; without it the iSCSI rows are skipped.
bench-fio-libiscsi:
	-@hack/bench/build-fio-libiscsi.sh $(FIO_LIBISCSI_DIR)

bench-dataplane: bench-fio-libiscsi
bench-dataplane: export FIO_LIBISCSI := $(FIO_LIBISCSI_DIR)/fio
